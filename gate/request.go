package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// Request is one command to run in the sandbox, as a harness sends it to
// `sbx exec`. The zero value of every optional field is its default.
type Request struct {
	// Command is the argv to execute, without a shell: 1..MaxArgs non-empty
	// strings. Command[0] is looked up in the sandbox's PATH.
	Command []string `json:"command"`
	// Workspace is the absolute path of an existing host directory. It is
	// mounted at the same path inside the sandbox, read-only unless Write and
	// ConfirmWrite are both true.
	Workspace string `json:"workspace"`
	// Cwd is the working directory relative to Workspace; empty means the
	// workspace itself.
	Cwd string `json:"cwd,omitempty"`
	// Write asks for a writable workspace; it needs ConfirmWrite.
	Write bool `json:"write,omitempty"`
	// ConfirmWrite confirms Write.
	ConfirmWrite bool `json:"confirmWrite,omitempty"`
	// AllowShell permits a shell (see IsShell) as Command[0]; it needs
	// ConfirmShell.
	AllowShell bool `json:"allowShell,omitempty"`
	// ConfirmShell confirms AllowShell.
	ConfirmShell bool `json:"confirmShell,omitempty"`
	// TimeoutMs is the run's deadline in milliseconds, 1..MaxTimeoutMs. Zero
	// (or an absent key) means MaxTimeout; an explicit 0 in JSON is rejected.
	TimeoutMs int `json:"timeoutMs,omitempty"`
	// Stage lets sbx stage host paths named in Command (an agent's
	// --session, --extension, ...: see package stage) into the sandbox and
	// copy session files back. Off by default: the model chooses the argv,
	// and staging reads host files outside the workspace. Refused unless
	// the harness's Scope allows staging (see Request.CheckIn).
	Stage bool `json:"stage,omitempty"`
	// ReadOnly are extra host paths (absolute; existing files or
	// directories, at most MaxReadOnly) shown read-only at their own path,
	// e.g. an agent installed outside /usr. Each must lie inside a root of
	// the harness's Scope, and is checked as the workspace is: never the
	// home or an ancestor of it, /, sbx's state, a kernel interface.
	ReadOnly []string `json:"ro,omitempty"`
}

// Timeout returns the run's deadline: TimeoutMs, or MaxTimeout when it is
// zero. It does not validate; call Check first.
func (r Request) Timeout() time.Duration {
	if r.TimeoutMs == 0 {
		return MaxTimeout
	}
	return time.Duration(r.TimeoutMs) * time.Millisecond
}

// Writable reports whether the workspace is to be mounted read-write, which
// takes both Write and ConfirmWrite.
func (r Request) Writable() bool { return r.Write && r.ConfirmWrite }

// requestKeys are the only keys a JSON request may hold.
var requestKeys = map[string]bool{
	"command": true, "workspace": true, "cwd": true, "write": true,
	"confirmWrite": true, "allowShell": true, "confirmShell": true, "timeoutMs": true,
	"stage": true, "ro": true,
}

// ParseRequest decodes one JSON request strictly. The input must be valid
// UTF-8 of at most MaxRequestBytes holding exactly one JSON object (white
// space around it is allowed) whose keys are among Request's JSON names, each
// at most once, with the right JSON type: null is never accepted. "command"
// and "workspace" are required. Unpaired UTF-16 surrogate escapes (which
// encoding/json would silently turn into U+FFFD) are rejected. Keys match
// exactly, not case-insensitively as with json.Unmarshal.
//
// ParseRequest checks the shape of the request only (and the range of
// timeoutMs, so that an explicit 0 is not mistaken for "absent"); call
// Request.Check for the rules. Every error is a *RejectError.
func ParseRequest(data []byte) (Request, error) {
	r, err := parseRequest(data)
	if err != nil {
		return Request{}, err // never half a request
	}
	return r, nil
}

func parseRequest(data []byte) (Request, error) {
	var r Request
	if len(data) > MaxRequestBytes {
		return r, reject("", "request is larger than %d bytes", MaxRequestBytes)
	}
	if !utf8.Valid(data) {
		return r, reject("", "request is not valid UTF-8")
	}
	if err := checkSurrogates(data); err != nil {
		return r, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err == io.EOF {
		return r, reject("", "request is empty")
	}
	if err != nil {
		return r, syntaxError(err)
	}
	if tok != json.Delim('{') {
		return r, reject("", "request must be a JSON object, not %s", describe(tok))
	}
	seen := make(map[string]bool, len(requestKeys))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return r, syntaxError(err)
		}
		key := tok.(string) // the decoder only returns strings in key position
		if !requestKeys[key] {
			return r, reject(key, "unknown key %q in request", key)
		}
		if seen[key] {
			return r, reject(key, "duplicate key %q in request", key)
		}
		seen[key] = true
		if err := parseValue(dec, key, &r); err != nil {
			return r, err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return r, syntaxError(err)
	}
	if tok, err := dec.Token(); err != io.EOF {
		if err != nil {
			return r, syntaxError(err)
		}
		return r, reject("", "request has data after the JSON object (%s)", describe(tok))
	}
	for _, key := range []string{"command", "workspace"} {
		if !seen[key] {
			return r, reject(key, "request is missing required key %q", key)
		}
	}
	return r, nil
}

func parseValue(dec *json.Decoder, key string, r *Request) error {
	switch key {
	case "command":
		return parseCommand(dec, r)
	case "workspace":
		return parseString(dec, key, &r.Workspace)
	case "cwd":
		return parseString(dec, key, &r.Cwd)
	case "write":
		return parseBool(dec, key, &r.Write)
	case "confirmWrite":
		return parseBool(dec, key, &r.ConfirmWrite)
	case "allowShell":
		return parseBool(dec, key, &r.AllowShell)
	case "confirmShell":
		return parseBool(dec, key, &r.ConfirmShell)
	case "timeoutMs":
		return parseTimeout(dec, r)
	case "stage":
		return parseBool(dec, key, &r.Stage)
	case "ro":
		return parseStrings(dec, key, &r.ReadOnly)
	}
	panic("gate: no parser for key " + key)
}

func parseCommand(dec *json.Decoder, r *Request) error {
	tok, err := dec.Token()
	if err != nil {
		return syntaxError(err)
	}
	if tok != json.Delim('[') {
		return reject("command", "command must be an array of strings, not %s", describe(tok))
	}
	r.Command = []string{}
	for i := 0; dec.More(); i++ {
		tok, err := dec.Token()
		if err != nil {
			return syntaxError(err)
		}
		s, ok := tok.(string)
		if !ok {
			return reject("command", "command[%d] must be a string, not %s", i, describe(tok))
		}
		r.Command = append(r.Command, s)
	}
	if _, err := dec.Token(); err != nil { // the closing ']'
		return syntaxError(err)
	}
	return nil
}

// parseStrings parses an array of strings (possibly empty).
func parseStrings(dec *json.Decoder, key string, dst *[]string) error {
	tok, err := dec.Token()
	if err != nil {
		return syntaxError(err)
	}
	if tok != json.Delim('[') {
		return reject(key, "%s must be an array of strings, not %s", key, describe(tok))
	}
	*dst = []string{}
	for i := 0; dec.More(); i++ {
		tok, err := dec.Token()
		if err != nil {
			return syntaxError(err)
		}
		s, ok := tok.(string)
		if !ok {
			return reject(key, "%s[%d] must be a string, not %s", key, i, describe(tok))
		}
		*dst = append(*dst, s)
	}
	if _, err := dec.Token(); err != nil { // the closing ']'
		return syntaxError(err)
	}
	return nil
}

func parseString(dec *json.Decoder, key string, dst *string) error {
	tok, err := dec.Token()
	if err != nil {
		return syntaxError(err)
	}
	s, ok := tok.(string)
	if !ok {
		return reject(key, "%s must be a string, not %s", key, describe(tok))
	}
	*dst = s
	return nil
}

func parseBool(dec *json.Decoder, key string, dst *bool) error {
	tok, err := dec.Token()
	if err != nil {
		return syntaxError(err)
	}
	b, ok := tok.(bool)
	if !ok {
		return reject(key, "%s must be a boolean, not %s", key, describe(tok))
	}
	*dst = b
	return nil
}

func parseTimeout(dec *json.Decoder, r *Request) error {
	tok, err := dec.Token()
	if err != nil {
		return syntaxError(err)
	}
	num, ok := tok.(json.Number)
	if !ok {
		return reject("timeoutMs", "timeoutMs must be an integer, not %s", describe(tok))
	}
	v, kind := classifyNumber(string(num))
	switch {
	case kind == numFraction:
		return reject("timeoutMs", "timeoutMs must be an integer, not %s", num)
	case kind != numInt || v < 1 || v > MaxTimeoutMs:
		return reject("timeoutMs", "timeoutMs must be between 1 and %d (milliseconds), not %s", MaxTimeoutMs, num)
	}
	r.TimeoutMs = int(v)
	return nil
}

// Kinds of JSON number, as JSON Schema's "integer" sees them: the value
// counts, not the spelling, so 1.0 and 1e3 are integers.
const (
	numInt      = iota // an integer that fits in int64 with room to spare
	numBig             // an integer too large (or too negative) to fit
	numFraction        // not an integer
)

// classifyNumber classifies a literal that encoding/json accepted as a JSON
// number, exactly (no floating point) and in time linear in its length, however
// large its exponent.
func classifyNumber(lit string) (int64, int) {
	neg := false
	if lit != "" && lit[0] == '-' {
		neg, lit = true, lit[1:]
	}
	mant, exp := lit, ""
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		mant, exp = lit[:i], lit[i+1:]
	}
	intPart, frac := mant, ""
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	if digits == "" {
		return 0, numInt // zero, however written
	}
	// value = digits * 10^e10 with e10 = exp - len(frac); drop trailing zeros.
	trimmed := strings.TrimRight(digits, "0")
	shift := int64(len(digits) - len(trimmed))
	digits = trimmed

	eneg := false
	if exp != "" && (exp[0] == '+' || exp[0] == '-') {
		eneg, exp = exp[0] == '-', exp[1:]
	}
	exp = strings.TrimLeft(exp, "0")
	if len(exp) > 15 { // |exponent| >= 10^15: far beyond any input length
		if eneg {
			return 0, numFraction
		}
		return 0, numBig
	}
	var e int64
	for i := 0; i < len(exp); i++ {
		e = e*10 + int64(exp[i]-'0')
	}
	if eneg {
		e = -e
	}
	e10 := e - int64(len(frac)) + shift
	if e10 < 0 {
		return 0, numFraction // digits has no trailing zero, so a fraction remains
	}
	if int64(len(digits))+e10 > 18 {
		return 0, numBig
	}
	var v int64
	for i := 0; i < len(digits); i++ {
		v = v*10 + int64(digits[i]-'0')
	}
	for ; e10 > 0; e10-- {
		v *= 10
	}
	if neg {
		v = -v
	}
	return v, numInt
}

// checkSurrogates rejects \uXXXX escapes of unpaired UTF-16 surrogates. In
// valid JSON backslashes occur only inside strings and each starts an escape;
// on invalid JSON the scan may stop early or report a surrogate, and the
// request is rejected either way.
func checkSurrogates(data []byte) error {
	for i := 0; i < len(data); i++ {
		if data[i] != '\\' {
			continue
		}
		i++ // the escaped character; a `\\` pair is skipped whole
		if i >= len(data) || data[i] != 'u' {
			continue
		}
		v, ok := hex4(data[i+1:])
		if !ok {
			continue
		}
		i += 4
		switch {
		case v >= 0xDC00 && v <= 0xDFFF:
			return reject("", "request contains an unpaired UTF-16 surrogate escape")
		case v >= 0xD800 && v <= 0xDBFF:
			if len(data) < i+7 || data[i+1] != '\\' || data[i+2] != 'u' {
				return reject("", "request contains an unpaired UTF-16 surrogate escape")
			}
			w, ok := hex4(data[i+3:])
			if !ok || w < 0xDC00 || w > 0xDFFF {
				return reject("", "request contains an unpaired UTF-16 surrogate escape")
			}
			i += 6
		}
	}
	return nil
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var v rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

func syntaxError(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return rejectErr("", err, "request is not valid JSON: %v (at byte %d)", err, se.Offset)
	}
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return rejectErr("", err, "request is not valid JSON: unexpected end of input")
	}
	return rejectErr("", err, "request is not valid JSON: %v", err)
}

// describe names the JSON type of a decoder token for error messages.
func describe(tok json.Token) string {
	switch v := tok.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case json.Delim:
		switch v {
		case '[':
			return "an array"
		case '{':
			return "an object"
		}
		return "'" + v.String() + "'"
	}
	return "an unexpected value"
}
