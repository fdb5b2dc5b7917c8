// Package settings reads Anthropic sandbox-runtime's settings files (srt,
// npm @anthropic-ai/sandbox-runtime; the shape pi's sandbox extension uses
// in ~/.pi/agent/extensions/sandbox.json and <cwd>/.pi/sandbox.json) and
// maps them to sbx's mechanisms:
//
//	network.allowedDomains    --allow-host (a name, *.DOMAIN, an IP; an
//	                          entry without ":PORT", which srt allows on
//	                          any port, becomes ports 443 and 80)
//	network.deniedDomains     nothing to do: sbx denies every host it does
//	                          not allow; an entry that an allowed entry
//	                          covers (sbx cannot carve an exception out of
//	                          an allow rule) is an error
//	filesystem.denyRead       --mask (shown empty, unreadable)
//	filesystem.allowWrite     --write for the workspace, --rw for another
//	                          path; /tmp needs nothing (the sandbox's own
//	                          /tmp is writable)
//	filesystem.denyWrite      read-only inside the writable trees, as sbx's
//	                          protected entries
//
// Paths: "~" is the invoking user's home, a relative path is relative to
// the working directory, and {"path": P, "literal": true} is P as written.
// A path with a glob character (* ? [) is expanded when the file is read,
// against what exists then: a pattern without "/" matches names at any
// depth below the working directory ("*.pem", ".env.*"), one with "/"
// matches relative to it (no "**").
//
// Every other key either has a neutral value (false, empty) or is an
// error naming it: a setting sbx cannot honour is never ignored
// silently. A few are accepted because sbx is already at least as strict:
// network.strictAllowlist (sbx never asks), network.allowLocalBinding
// (srt ignores it on Linux; the sandbox's loopback is its own),
// mandatoryDenySearchDepth (sbx protects at any depth), allowPty (sbx
// gives a pty with --tty) and "enabled": true (pi's extension's switch;
// false, "run unsandboxed", is an error).
//
// A file may only tighten ([Merge]) when it comes after the one that
// allows, or when a sandbox could have written it (the caller decides
// that: see package policysrc): its deny lists add to the earlier ones',
// and each entry of its allow lists must be covered by the earlier
// files' lists, paths by identity, else it is an error (a project's file
// can never widen what the user's own allows; srt's own merge lets a
// project's file override, sbx does not).
//
// Globs are expanded without entering a symlink, within a budget of
// directory entries and time per file (glob.go): a pattern over a tree a
// sandbox wrote cannot make sbx walk without end.
package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/sbx-sandbox/sbx/egress"
	"github.com/sbx-sandbox/sbx/policysrc"
)

// Policy is what one or more settings files ask of sbx.
type Policy struct {
	// Files are the files read, in order.
	Files []string
	// AllowHosts are --allow-host rules; HostsSet reports whether a file
	// had network.allowedDomains at all.
	AllowHosts []string
	HostsSet   bool
	// Denied are the deniedDomains entries (checked against AllowHosts).
	Denied []string
	// Mask are absolute paths to hide (denyRead).
	Mask []string
	// Writable are absolute paths to make writable (allowWrite);
	// WritableSet reports whether a file had filesystem.allowWrite.
	Writable    []string
	WritableSet bool
	// Protect are absolute paths to keep read-only (denyWrite).
	Protect []string
}

// Env is what path expansion needs: the invoking user's home and the
// working directory, both absolute.
type Env struct {
	Home, Cwd string
}

// maxSize bounds a settings file.
const maxSize = 1 << 20

// Load reads one settings file. A project's file lies in a tree the
// sandbox can write, so the file is opened without following a symlink in
// its last component and without blocking (a FIFO planted there must not
// hang sbx), and only a regular file is read, at most maxSize bytes.
func Load(path string, env Env) (Policy, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			err = fmt.Errorf("%w (a symlink is not followed)", err)
		}
		return Policy{}, fmt.Errorf("settings %s: %w", path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return Policy{}, fmt.Errorf("settings %s: %w", path, err)
	} else if !fi.Mode().IsRegular() {
		return Policy{}, fmt.Errorf("settings %s: not a regular file", path)
	}
	return Read(path, f, env)
}

// Read reads one settings file's content from r (at most maxSize bytes);
// path names it.
func Read(path string, r io.Reader, env Env) (Policy, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxSize+1))
	if err != nil {
		return Policy{}, fmt.Errorf("settings %s: %w", path, err)
	}
	if len(data) > maxSize {
		return Policy{}, fmt.Errorf("settings %s: larger than %d bytes", path, maxSize)
	}
	p, err := Parse(data, env)
	if err != nil {
		return Policy{}, fmt.Errorf("settings %s: %w", path, err)
	}
	p.Files = []string{path}
	return p, nil
}

// object is a JSON object whose keys are taken one by one; what is left
// at the end is unknown.
type object map[string]json.RawMessage

func decodeObject(raw json.RawMessage, where string) (object, error) {
	var o object
	if err := strictUnmarshal(raw, &o); err != nil {
		return nil, fmt.Errorf("%s: want an object: %w", where, err)
	}
	return o, nil
}

func strictUnmarshal(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data")
	}
	return nil
}

// take removes key from o and decodes it into v; it reports whether the
// key was there.
func (o object) take(key, where string, v any) (bool, error) {
	raw, ok := o[key]
	if !ok {
		return false, nil
	}
	delete(o, key)
	if string(raw) == "null" {
		return false, nil
	}
	if err := strictUnmarshal(raw, v); err != nil {
		return true, fmt.Errorf("%s%s: %w", where, key, err)
	}
	return true, nil
}

// unsupported are the srt keys sbx does not honour, with why. Such a key
// is accepted only with its neutral value (false, 0, empty).
var unsupported = func() map[string]string {
	m := map[string]string{}
	for _, e := range []struct{ key, why string }{
		{"credentials", "sbx does not rewrite credentials; pass variables with --env"},
		{"ignoreViolations", "sbx reports every denial (use --quiet to print none)"},
		{"enableWeakerNestedSandbox", "sbx has no weaker mode"},
		{"allowNestedUserNamespaces", "sbx refuses new user namespaces inside the sandbox"},
		{"enableWeakerNetworkIsolation", "macOS only"},
		{"allowAppleEvents", "macOS only"},
		{"ripgrep", "srt's own tool; sbx needs none"},
		{"seccomp", "srt's own seccomp binaries; sbx has its own filter"},
		{"bwrapPath", "srt's own tool; sbx needs none"},
		{"socatPath", "srt's own tool; sbx needs none"},
		{"javaAgentJarPath", "srt's own tool; sbx needs none"},
		{"windows", "Windows only"},
		{"git", "sbx does not inject git configuration"},
		{"network.deniedDomainReasons", "sbx reports its own reason"},
		{"network.deniedResolvedAddresses", "sbx refuses loopback, private, link-local and similar addresses itself, and no others"},
		{"network.allowUnixSockets", "sbx shows no host socket (macOS only in srt)"},
		{"network.allowAllUnixSockets", "sbx shows no host socket"},
		{"network.allowMachLookup", "macOS only"},
		{"network.httpProxyPort", "sbx runs its own proxy"},
		{"network.socksProxyPort", "sbx runs its own proxy"},
		{"network.mitmProxy", "sbx does not route through another proxy"},
		{"network.parentProxy", "sbx does not route through another proxy"},
		{"network.filterRequest", "sbx does not filter requests"},
		{"network.tlsTerminate", "sbx does not look inside TLS"},
		{"network.allowPlaintextHeaderSet", "sbx does not rewrite requests"},
		{"network.stripResponseHeaders", "sbx does not rewrite responses"},
		{"network.ambiguousRequestTarget", "sbx does not filter requests"},
		{"network.refuseOpaqueTunnels", "sbx does not look inside tunnels"},
		{"network.requireHostMatch", "sbx does not look inside TLS"},
		{"filesystem.allowRead", "sbx cannot show a path inside a --mask"},
		{"filesystem.disabled", "sbx cannot turn its file policy off"},
		{"filesystem.allowGitConfig", "sbx keeps all of .git read-only (--rw .git opens it)"},
	} {
		m[e.key] = e.why
	}
	return m
}()

// accepted are srt keys sbx takes without mapping them, because sbx is
// already at least as strict (see the package doc).
var accepted = map[string]bool{
	"network.strictAllowlist": true, "network.allowLocalBinding": true,
	"mandatoryDenySearchDepth": true, "allowPty": true,
}

// neutral reports whether raw is a value that asks for nothing: false,
// 0, "", null, [] or {}.
func neutral(raw json.RawMessage) bool {
	switch strings.TrimSpace(string(raw)) {
	case "false", "0", `""`, "null", "[]", "{}":
		return true
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	switch x := v.(type) {
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// rest checks the keys left in o after the known ones were taken.
func rest(o object, prefix string) error {
	for _, k := range slices.Sorted(maps.Keys(o)) {
		key := prefix + k
		if accepted[key] {
			continue
		}
		if why, ok := unsupported[key]; ok {
			if neutral(o[k]) {
				continue
			}
			return fmt.Errorf("key %s: sbx cannot honour it (%s); remove it", key, why)
		}
		return fmt.Errorf("key %s: unknown", key)
	}
	return nil
}

// Parse maps one settings file's text to a policy.
func Parse(data []byte, env Env) (Policy, error) {
	var p Policy
	top, err := decodeObject(data, "settings")
	if err != nil {
		return p, err
	}
	var enabled *bool
	if _, err := top.take("enabled", "", &enabled); err != nil {
		return p, err
	}
	if enabled != nil && !*enabled {
		return p, errors.New(`key enabled: false asks to run unsandboxed, which sbx never does (run the program without sbx instead)`)
	}
	if raw, ok := top["network"]; ok {
		delete(top, "network")
		net, err := decodeObject(raw, "network")
		if err != nil {
			return p, err
		}
		if err := p.network(net); err != nil {
			return p, err
		}
	}
	if raw, ok := top["filesystem"]; ok {
		delete(top, "filesystem")
		fsys, err := decodeObject(raw, "filesystem")
		if err != nil {
			return p, err
		}
		if err := p.filesystem(fsys, env, newBudget()); err != nil {
			return p, err
		}
	}
	if err := rest(top, ""); err != nil {
		return p, err
	}
	return p, nil
}

func (p *Policy) network(o object) error {
	var allowed, denied []string
	set, err := o.take("allowedDomains", "network.", &allowed)
	if err != nil {
		return err
	}
	p.HostsSet = set
	for _, d := range allowed {
		rules, err := hostRules(d)
		if err != nil {
			return fmt.Errorf("network.allowedDomains %q: %w", d, err)
		}
		p.AllowHosts = union(p.AllowHosts, rules)
	}
	if _, err := o.take("deniedDomains", "network.", &denied); err != nil {
		return err
	}
	p.Denied = union(p.Denied, denied)
	if err := checkDenied(p.AllowHosts, p.Denied); err != nil {
		return err
	}
	return rest(o, "network.")
}

// hostRules maps one allowedDomains entry to --allow-host rules.
func hostRules(entry string) ([]string, error) {
	if entry == "*" || strings.HasPrefix(entry, "*:") {
		return nil, errors.New(`"*" would allow every host; sbx allows hosts by name`)
	}
	if strings.Contains(entry, "://") || strings.Contains(entry, "/") {
		return nil, errors.New("want a host name, *.DOMAIN or an IP address, with an optional :PORT")
	}
	var out []string
	if hasPort(entry) {
		out = []string{entry}
	} else {
		out = []string{entry, withPort(entry, "80")}
	}
	for _, r := range out {
		if _, err := egress.ParseRule(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// hasPort reports whether a host entry ends in ":PORT" (an IPv6 address
// has one only in brackets).
func hasPort(e string) bool {
	if strings.HasPrefix(e, "[") {
		return strings.Contains(e, "]:")
	}
	return strings.Count(e, ":") == 1
}

func withPort(host, port string) string {
	if strings.Count(host, ":") > 1 && !strings.HasPrefix(host, "[") {
		host = "[" + host + "]"
	}
	return host + ":" + port
}

// checkDenied refuses a deniedDomains entry that an allowed rule covers
// or overlaps: sbx's allow rules have no exceptions.
func checkDenied(allowed, denied []string) error {
	for _, d := range denied {
		host := d
		if hasPort(d) {
			host = d[:strings.LastIndex(d, ":")]
		}
		host = strings.Trim(strings.ToLower(host), "[]")
		for _, a := range allowed {
			ah := a
			if hasPort(a) {
				ah = a[:strings.LastIndex(a, ":")]
			}
			ah = strings.Trim(strings.ToLower(ah), "[]")
			if overlaps(ah, host) {
				return fmt.Errorf("network.deniedDomains %q: overlaps allowedDomains %q, and sbx cannot make an exception to an allowed host (narrow allowedDomains instead)", d, a)
			}
		}
	}
	return nil
}

// overlaps reports whether host patterns a and b (names, *.DOMAIN or "*")
// match a common host.
func overlaps(a, b string) bool {
	if a == "*" || b == "*" || a == b {
		return true
	}
	under := func(pattern, host string) bool {
		d, ok := strings.CutPrefix(pattern, "*.")
		return ok && strings.HasSuffix(strings.TrimPrefix(host, "*."), "."+d)
	}
	return under(a, b) || under(b, a)
}

// entry is a filesystem list entry: a string, or {"path", "literal"}.
type entry struct {
	Path    string
	Literal bool
}

func (e *entry) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &e.Path)
	}
	var o struct {
		Path    string `json:"path"`
		Literal bool   `json:"literal"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil || !o.Literal || o.Path == "" {
		return errors.New(`want a path, or {"path": "<path>", "literal": true}`)
	}
	e.Path, e.Literal = o.Path, true
	return nil
}

func (p *Policy) filesystem(o object, env Env, b *budget) error {
	lists := []struct {
		key string
		out *[]string
		set *bool
	}{
		{"denyRead", &p.Mask, nil},
		{"allowWrite", &p.Writable, &p.WritableSet},
		{"denyWrite", &p.Protect, nil},
	}
	for _, l := range lists {
		var entries []entry
		set, err := o.take(l.key, "filesystem.", &entries)
		if err != nil {
			return err
		}
		if l.set != nil {
			*l.set = set
		}
		for _, e := range entries {
			paths, err := expand(e, env, b)
			if err != nil {
				return fmt.Errorf("filesystem.%s %q: %w", l.key, e.Path, err)
			}
			if l.key == "allowWrite" {
				paths = slices.DeleteFunc(paths, func(s string) bool { return s == "/tmp" })
			}
			*l.out = union(*l.out, paths)
		}
	}
	return rest(o, "filesystem.")
}

// expand makes an entry absolute and expands a glob against what exists,
// within b (see glob.go). A literal or glob-free path is returned even if
// it does not exist (the run checks that where it matters).
func expand(e entry, env Env, b *budget) ([]string, error) {
	p := e.Path
	if p == "" {
		return nil, errors.New("empty path")
	}
	switch {
	case strings.HasPrefix(p, "~") && !filepath.IsAbs(env.Home):
		return nil, errors.New("no home directory to expand ~ in")
	case p == "~":
		p = env.Home
	case strings.HasPrefix(p, "~/"):
		p = filepath.Join(env.Home, p[2:])
	case strings.HasPrefix(p, "~"):
		return nil, errors.New("~user is not supported: write the path")
	}
	if e.Literal || !hasMeta(p) {
		if !filepath.IsAbs(p) {
			p = filepath.Join(env.Cwd, p)
		}
		return []string{filepath.Clean(p)}, nil
	}
	if strings.Contains(p, "**") {
		return nil, errors.New(`"**" is not supported: name the files, or use a pattern without "/" (it matches at any depth)`)
	}
	if _, err := filepath.Match(p, ""); err != nil {
		return nil, fmt.Errorf("bad pattern: %w", err)
	}
	if strings.Contains(p, "/") {
		if !filepath.IsAbs(p) {
			p = filepath.Join(env.Cwd, p)
		}
		return globPath(p, b)
	}
	// A name pattern: every match at any depth below the working directory.
	return globName(env.Cwd, p, b)
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// Merge returns base tightened by later, a file that may only tighten:
// its deny lists add to base's; its allowedDomains and allowWrite, when
// present, replace base's, but each of their entries must be covered by
// base's (a host rule equal to one of base's or under one of its
// wildcards, with the same port; a path at or below one of base's
// writable paths, by identity: see [policysrc.Covered], which refuses a
// path through a symlink), else Merge fails naming the entry. Merge opens
// the paths: call it with the invoking user's rights (hostfs.Cred.Do).
func Merge(base, later Policy) (Policy, error) {
	out := base
	out.Files = append(slices.Clone(base.Files), later.Files...)
	name := strings.Join(later.Files, ", ")
	earlier := "the earlier settings (" + strings.Join(base.Files, ", ") + ")"
	if len(base.Files) == 0 {
		earlier = "any earlier settings file (there is none to widen)"
	}
	if later.HostsSet {
		for _, h := range later.AllowHosts {
			if !hostCovered(h, base.AllowHosts) {
				return Policy{}, fmt.Errorf("settings %s: network.allowedDomains %s: not allowed by %s, and this file may only tighten", name, h, earlier)
			}
		}
		out.AllowHosts, out.HostsSet = slices.Clone(later.AllowHosts), true
	}
	if later.WritableSet {
		roots := policysrc.IDs(base.Writable)
		for _, w := range later.Writable {
			ok, err := policysrc.Covered(w, roots)
			var sl *policysrc.SymlinkError
			if errors.As(err, &sl) {
				return Policy{}, fmt.Errorf("settings %s: filesystem.allowWrite %s: %w; a file that may only tighten names no writable path through a symlink", name, w, err)
			}
			if err != nil {
				return Policy{}, fmt.Errorf("settings %s: filesystem.allowWrite %s: %w", name, w, err)
			}
			if !ok {
				return Policy{}, fmt.Errorf("settings %s: filesystem.allowWrite %s: not writable under %s, and this file may only tighten", name, w, earlier)
			}
		}
		out.Writable, out.WritableSet = slices.Clone(later.Writable), true
	}
	out.Denied = union(base.Denied, later.Denied)
	out.Mask = union(base.Mask, later.Mask)
	out.Protect = union(base.Protect, later.Protect)
	if err := checkDenied(out.AllowHosts, out.Denied); err != nil {
		return Policy{}, fmt.Errorf("settings %s: %w", name, err)
	}
	return out, nil
}

// hostCovered reports whether rule h (HOST[:PORT]) is allowed by one of
// rules: the same rule, or a name under a wildcard rule, same port.
func hostCovered(h string, rules []string) bool {
	hr, err := egress.ParseRule(h)
	if err != nil {
		return false
	}
	for _, r := range rules {
		br, err := egress.ParseRule(r)
		if err != nil || br.Port() != hr.Port() {
			continue
		}
		if br.String() == hr.String() {
			return true
		}
		if br.Wildcard() && !hr.IsIP() && strings.HasSuffix(hr.Name(), "."+br.Name()) {
			return true
		}
	}
	return false
}
