package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

var (
	schemaOnce               sync.Once
	requestSchema, resultSch *jsonschema.Schema
	schemaErr                error
)

// schemas compiles both embedded schemas (against the draft 2020-12
// meta-schema, which the compiler carries: no network).
func schemas(t testing.TB) (req, res *jsonschema.Schema) {
	t.Helper()
	schemaOnce.Do(func() {
		compile := func(data []byte, url string) *jsonschema.Schema {
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
			if err != nil {
				schemaErr = errors.Join(schemaErr, err)
				return nil
			}
			c := jsonschema.NewCompiler()
			c.DefaultDraft(jsonschema.Draft2020)
			c.AssertFormat()
			if err := c.AddResource(url, doc); err != nil {
				schemaErr = errors.Join(schemaErr, err)
				return nil
			}
			sch, err := c.Compile(url)
			schemaErr = errors.Join(schemaErr, err)
			return sch
		}
		requestSchema = compile(RequestSchema, "https://github.com/sbx-sandbox/sbx/gate/request.schema.json")
		resultSch = compile(ResultSchema, "https://github.com/sbx-sandbox/sbx/gate/result.schema.json")
	})
	if schemaErr != nil {
		t.Fatalf("compile schemas: %v", schemaErr)
	}
	return requestSchema, resultSch
}

func schemaAccepts(sch *jsonschema.Schema, data []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return err
	}
	return sch.Validate(inst)
}

// gateAccepts applies every rule that needs no disk.
func gateAccepts(data []byte) error {
	r, err := ParseRequest(data)
	if err != nil {
		return err
	}
	return r.CheckStatic()
}

// req builds a JSON request from a base and extra key/value pairs, in order.
func req(kv ...any) string {
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i < len(kv); i += 2 {
		if i > 0 {
			b.WriteString(",")
		}
		k, _ := json.Marshal(kv[i])
		v, _ := json.Marshal(kv[i+1])
		b.Write(k)
		b.WriteString(":")
		b.Write(v)
	}
	b.WriteString("}")
	return b.String()
}

func TestRequestSchemaAgrees(t *testing.T) {
	sch, _ := schemas(t)
	long := strings.Repeat("a", MaxArgBytes)
	cmd := func(a ...string) []string { return a }
	valid := []string{
		req("command", cmd("ls"), "workspace", "/w"),
		req("command", cmd("ls", "-la"), "workspace", "/abs/dir", "write", false, "confirmWrite", false, "timeoutMs", 120000),
		req("command", cmd("ls"), "workspace", "/w", "cwd", "a/b", "write", true, "confirmWrite", true, "allowShell", true, "confirmShell", true, "timeoutMs", 1),
		req("command", cmd("bash", "-c", "echo"), "workspace", "/w", "allowShell", true, "confirmShell", true),
		req("command", cmd("/bin/SH.EXE"), "workspace", "/w", "allowShell", true, "confirmShell", true),
		req("command", cmd("env", "sh", "-c", "x"), "workspace", "/w"),
		req("command", cmd("bash5"), "workspace", "/w"),
		req("command", cmd("ls"), "workspace", "/w", "confirmWrite", true),
		req("command", cmd("ls"), "workspace", "/w", "confirmShell", true),
		req("command", cmd("ls"), "workspace", "/w", "allowShell", false, "confirmShell", false),
		req("command", cmd("ls"), "workspace", "/w", "cwd", ""),
		req("command", cmd("ls"), "workspace", "/w", "cwd", "..x"),
		req("command", args(MaxArgs, "x"), "workspace", "/w"),
		req("command", cmd(long), "workspace", "/w"),
		req("command", args(8, long), "workspace", "/w"),
		req("command", cmd("é", "🙂", "\t\n"), "workspace", "/w"),
		`{"command":["ls"],"workspace":"/w","timeoutMs":1.0}`,
		`{"command":["ls"],"workspace":"/w","timeoutMs":1.2e3}`,
		`{"command":["ls"],"workspace":"/w","timeoutMs":12e4}`,
		" {\"command\":[\"ls\"],\"workspace\":\"/w\"}\n",
	}
	invalid := []string{
		``, `null`, `[]`, `"x"`, `1`, `true`, `{}`,
		`{"command":["ls"],"workspace":"/w"}{}`,
		req("command", cmd("ls")),
		req("workspace", "/w"),
		req("command", cmd("ls"), "workspace", "/w", "image", "alpine"),
		req("command", cmd("ls"), "workspace", "/w", "Write", true),
		req("command", "ls", "workspace", "/w"),
		req("command", nil, "workspace", "/w"),
		req("command", map[string]string{"0": "ls"}, "workspace", "/w"),
		req("command", cmd(), "workspace", "/w"),
		req("command", args(MaxArgs+1, "x"), "workspace", "/w"),
		req("command", cmd("ls", ""), "workspace", "/w"),
		req("command", cmd(long+"a"), "workspace", "/w"),
		req("command", cmd("ls", "a\x00b"), "workspace", "/w"),
		req("command", []any{"ls", 1}, "workspace", "/w"),
		req("command", []any{"ls", nil}, "workspace", "/w"),
		req("command", []any{[]string{"ls"}}, "workspace", "/w"),
		req("command", []any{map[string]any{}}, "workspace", "/w"),
		req("command", cmd("ls"), "workspace", "/w", "write", true),
		req("command", cmd("ls"), "workspace", "/w", "write", true, "confirmWrite", false),
		req("command", cmd("ls"), "workspace", "/w", "allowShell", true),
		req("command", cmd("ls"), "workspace", "/w", "allowShell", true, "confirmShell", false),
		req("command", cmd("sh", "-c", "x"), "workspace", "/w"),
		req("command", cmd("BASH.EXE"), "workspace", "/w"),
		req("command", cmd("/bin/sh"), "workspace", "/w"),
		req("command", cmd(`C:\Windows\System32\cmd.exe`), "workspace", "/w"),
		req("command", cmd("PowerShell.exe"), "workspace", "/w"),
		req("command", cmd("\u212Ash"), "workspace", "/w"),
		req("command", cmd("\u017Fh"), "workspace", "/w"),
		req("command", cmd("zsh"), "workspace", "/w", "confirmShell", true),
		req("command", cmd("zsh"), "workspace", "/w", "allowShell", true),
		req("command", cmd("ls"), "workspace", "/w", "timeoutMs", 0),
		req("command", cmd("ls"), "workspace", "/w", "timeoutMs", -1),
		req("command", cmd("ls"), "workspace", "/w", "timeoutMs", 120001),
		req("command", cmd("ls"), "workspace", "/w", "timeoutMs", 1.5),
		req("command", cmd("ls"), "workspace", "/w", "timeoutMs", "100"),
		req("command", cmd("ls"), "workspace", "/w", "timeoutMs", nil),
		req("command", cmd("ls"), "workspace", "w"),
		req("command", cmd("ls"), "workspace", ""),
		req("command", cmd("ls"), "workspace", nil),
		req("command", cmd("ls"), "workspace", "/w\x00"),
		req("command", cmd("ls"), "workspace", "/w", "cwd", "/etc"),
		req("command", cmd("ls"), "workspace", "/w", "cwd", nil),
		req("command", cmd("ls"), "workspace", "/w", "cwd", "a\x00"),
		req("command", cmd("ls"), "workspace", "/w", "write", "true", "confirmWrite", true),
		req("command", cmd("ls"), "workspace", "/w", "write", 1, "confirmWrite", true),
		req("command", cmd("ls"), "workspace", "/w", "confirmWrite", nil),
		req("command", cmd("ls"), "workspace", "/w", "allowShell", map[string]any{}),
		req("command", cmd("ls"), "workspace", "/w", "extra", map[string]any{"nested": []any{1}}),
	}
	// Rules a JSON Schema cannot state: the schema accepts, the gate must not.
	gateOnly := map[string]string{
		`{"command":["a"],"command":["b"],"workspace":"/w"}`:                                "duplicate key",
		`{"command":["ls"],"workspace":"/w","write":true,"confirmWrite":true,"write":true}`: "duplicate key",
		req("command", cmd(strings.Repeat("€", 5462)), "workspace", "/w"):                   "16386 bytes in 5462 characters",
		req("command", append(args(8, long), "x"), "workspace", "/w"):                       "131073 bytes in total",
		req("command", cmd("ls"), "workspace", "/w", "cwd", "../x"):                         "lexical escape",
		req("command", cmd("ls"), "workspace", "/w", "cwd", "a/../../b"):                    "lexical escape",
		`{"command":["\ud800"],"workspace":"/w"}`:                                           "unpaired surrogate",
	}
	for _, in := range valid {
		if err := schemaAccepts(sch, []byte(in)); err != nil {
			t.Errorf("schema rejects valid %.200s: %v", in, err)
		}
		if err := gateAccepts([]byte(in)); err != nil {
			t.Errorf("gate rejects valid %.200s: %v", in, err)
		}
	}
	for _, in := range invalid {
		if err := schemaAccepts(sch, []byte(in)); err == nil {
			t.Errorf("schema accepts invalid %.200s", in)
		}
		if err := gateAccepts([]byte(in)); err == nil {
			t.Errorf("gate accepts invalid %.200s", in)
		}
	}
	for in, why := range gateOnly {
		if err := schemaAccepts(sch, []byte(in)); err != nil {
			t.Errorf("schema rejects %.100s (%s): %v; move the case to invalid", in, why, err)
		}
		if err := gateAccepts([]byte(in)); err == nil {
			t.Errorf("gate accepts %.100s (%s)", in, why)
		}
	}
}

// foldClass is a character class of r and everything it case-folds to.
func foldClass(r rune) string {
	set := []rune{r}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		set = append(set, f)
	}
	if len(set) == 1 {
		return string(r)
	}
	return "[" + string(set) + "]"
}

func TestRequestSchemaInStep(t *testing.T) {
	var doc struct {
		Properties map[string]json.RawMessage `json:"properties"`
		AllOf      []struct {
			If struct {
				Properties struct {
					Command struct {
						PrefixItems []struct {
							Pattern string `json:"pattern"`
						} `json:"prefixItems"`
					} `json:"command"`
				} `json:"properties"`
			} `json:"if"`
		} `json:"allOf"`
	}
	if err := json.Unmarshal(RequestSchema, &doc); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range doc.Properties {
		keys = append(keys, k)
	}
	var want []string
	for k := range requestKeys {
		want = append(want, k)
	}
	sort.Strings(keys)
	sort.Strings(want)
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("schema keys %v, parser keys %v", keys, want)
	}
	var alts []string
	for _, n := range ShellNames() {
		var b strings.Builder
		for _, r := range n {
			b.WriteString(foldClass(r))
		}
		alts = append(alts, b.String())
	}
	pattern := `(^|[/\\])(` + strings.Join(alts, "|") + `)(\.` + foldClass('e') + foldClass('x') + foldClass('e') + `)?$`
	found := false
	for _, a := range doc.AllOf {
		if p := a.If.Properties.Command.PrefixItems; len(p) == 1 {
			found = true
			if p[0].Pattern != pattern {
				t.Errorf("schema shell pattern\n%s\nwant (from ShellNames)\n%s", p[0].Pattern, pattern)
			}
		}
	}
	if !found {
		t.Error("schema has no shell rule")
	}
}

func TestResultSchema(t *testing.T) {
	_, sch := schemas(t)
	code := func(n int) *int { return &n }
	out, trunc := Shape(bytes.Repeat([]byte("x"), OutputBudget+1), nil)
	valid := []Result{
		{Status: StatusExited, ExitCode: code(0), Output: "ok\n", DurationMs: 12},
		{Status: StatusExited, ExitCode: code(137), DurationMs: 1, CleanupError: "cgroup not removed after 10s"},
		{Status: StatusExited, ExitCode: code(1), Output: out, Truncated: trunc, DurationMs: 3},
		{Status: StatusTimedOut, DurationMs: 120000, Output: "partial"},
		{Status: StatusCancelled, DurationMs: 5},
		{Status: StatusFailed, Error: "sandbox: cgroup: permission denied"},
		Rejected(&RejectError{Reason: MsgWriteNeedsConfirm}),
		{Status: StatusExited, ExitCode: code(1), Violations: []Violation{{
			Time: time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC), Pid: 42, Comm: "curl", Op: "connect",
			Target: "1.1.1.1:443", Errno: "EPERM", Tier: "bpf",
		}}, ViolationsDropped: 3},
	}
	for _, r := range valid {
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := schemaAccepts(sch, data); err != nil {
			t.Errorf("schema rejects %s: %v", data, err)
		}
	}
	invalid := []string{
		`{"status":"exited","exitCode":null,"output":"","truncated":false,"violations":[],"durationMs":0}`,
		`{"status":"timed_out","exitCode":0,"output":"","truncated":false,"violations":[],"durationMs":0}`,
		`{"status":"rejected","exitCode":null,"output":"","truncated":false,"violations":[],"durationMs":0}`,
		`{"status":"done","exitCode":null,"output":"","truncated":false,"violations":[],"durationMs":0}`,
		`{"status":"exited","exitCode":0,"output":"","truncated":false,"durationMs":0}`,
		`{"status":"exited","exitCode":0,"output":"","truncated":false,"violations":null,"durationMs":0}`,
		`{"status":"exited","exitCode":0,"output":"x","truncated":true,"violations":[],"durationMs":0}`,
		`{"status":"exited","exitCode":0,"output":"","truncated":false,"violations":[],"durationMs":0,"extra":1}`,
		`{"status":"exited","exitCode":0,"output":"","truncated":false,"violations":[{"pid":1}],"durationMs":0}`,
		`{"status":"exited","exitCode":0,"output":"` + strings.Repeat("x", OutputBudget+1) + `","truncated":false,"violations":[],"durationMs":0}`,
	}
	for _, in := range invalid {
		if err := schemaAccepts(sch, []byte(in)); err == nil {
			t.Errorf("schema accepts invalid %.200s", in)
		}
	}
}

func TestResultJSON(t *testing.T) {
	data, err := json.Marshal(Result{Status: StatusTimedOut, DurationMs: 7})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"status":"timed_out","exitCode":null,"output":"","truncated":false,"violations":[],"durationMs":7}`
	if string(data) != want {
		t.Errorf("Marshal = %s, want %s", data, want)
	}
	data, _ = json.Marshal(Rejected(Request{Command: []string{"ls"}, Workspace: "/w", Write: true}.CheckStatic()))
	const wantRej = `{"status":"rejected","exitCode":null,"output":"","truncated":false,"violations":[],"durationMs":0,"error":"Writable sandbox requires confirmWrite=true"}`
	if string(data) != wantRej {
		t.Errorf("Marshal = %s, want %s", data, wantRej)
	}
	// The program's output is text, not HTML: an encoder that does not
	// escape HTML writes <, > and & as they are; json.Marshal still
	// escapes them (valid JSON either way).
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(Result{Status: StatusExited, Output: "a <b> & c"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"output":"a <b> & c"`) {
		t.Errorf("Encode without HTML escaping = %s, want the output unescaped", buf.String())
	}
	if data, _ := json.Marshal(Result{Output: "<&>"}); !strings.Contains(string(data), `"output":"\u003c\u0026\u003e"`) {
		t.Errorf("Marshal = %s, want <&> escaped", data)
	}
	// Every JSON key of Result is a property of the schema, and the other way round.
	var doc struct {
		Properties map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(ResultSchema, &doc); err != nil {
		t.Fatal(err)
	}
	typ := reflect.TypeOf(Result{})
	for i := 0; i < typ.NumField(); i++ {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if _, ok := doc.Properties[name]; !ok {
			t.Errorf("Result field %s (%q) missing from the schema", typ.Field(i).Name, name)
		}
		delete(doc.Properties, name)
	}
	for name := range doc.Properties {
		t.Errorf("schema property %q is not a Result field", name)
	}
}

func TestViolationSanitized(t *testing.T) {
	v := Violation{Comm: "x\x1b[31my", Op: "open", Target: "/tmp/\u202eevil\r\n" + strings.Repeat("é", 3000), Errno: "EACCES", Tier: "bpf"}.Sanitized()
	if v.Comm != "xy" || !strings.HasPrefix(v.Target, "/tmp/\ufffdevil\n") || len(v.Target) > 4096 || !utf8.ValidString(v.Target) {
		t.Errorf("Sanitized = %#v (target %d bytes)", v, len(v.Target))
	}
}
