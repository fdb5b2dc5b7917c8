package runner

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sbx-sandbox/sbx/egress"
	"github.com/sbx-sandbox/sbx/home"
	"github.com/sbx-sandbox/sbx/hostfs"
	"github.com/sbx-sandbox/sbx/internal/refuse"
	"github.com/sbx-sandbox/sbx/invoker"
	"github.com/sbx-sandbox/sbx/netsvc"
	"github.com/sbx-sandbox/sbx/profile"
	"github.com/sbx-sandbox/sbx/protect"
	"github.com/sbx-sandbox/sbx/sandbox"
)

// ExitTimeout is the status of a run whose timeout expired, as timeout(1).
const ExitTimeout = 124

// Defaults of the limits, as the container variant's sandbox tool.
const (
	DefaultCPUs    = 1.0
	DefaultPids    = 256
	DefaultTmpSize = 512 << 20
)

// HomeTmp as Options.Home gives the run a throwaway home.
const HomeTmp = "tmp"

// NetMode is the network a run gets (sbx run --net).
type NetMode string

const (
	// NetLoopback (the default, also as "") gives the sandbox its own,
	// otherwise empty network namespace in which inet sockets of any type
	// may be created, bound, listened on and connected over loopback
	// (127.0.0.0/8, ::1): test servers, local databases. Every attempt to
	// reach anything else is refused and reported.
	NetLoopback NetMode = "loopback"
	// NetNone refuses inet sockets altogether (but for the egress proxy of
	// --allow-host).
	NetNone NetMode = "none"
	// NetHost shares the host's network: no isolation.
	NetHost NetMode = "host"
)

// ParseNetMode parses a --net value.
func ParseNetMode(s string) (NetMode, error) {
	switch m := NetMode(s); m {
	case NetLoopback, NetNone, NetHost:
		return m, nil
	}
	return "", fmt.Errorf("%q: want loopback, none or host", s)
}

// hostNetwork reports whether the run shares the host's network.
func (o *Options) hostNetwork() bool { return o.Net == NetHost }

// loopback reports whether the run may use its own loopback.
func (o *Options) loopback() bool { return o.Net == NetLoopback || o.Net == "" }

// Options describe one run.
type Options struct {
	// Args is the program and its arguments, exec'd without a shell.
	Args []string
	// Workspace is the host directory the program works in (mounted at
	// its own path, read-only unless Write).
	Workspace string
	Write     bool
	// Cwd is the caller's working directory; the program starts there when
	// it lies inside the workspace, else at the workspace root.
	Cwd string
	// Home is the host directory behind the sandbox's $HOME: "" for the
	// persistent sbx home of the invoking user, [HomeTmp] for a throwaway
	// one, or a directory.
	Home string
	// ReadOnly and ReadWrite are extra host paths to mount at their path.
	// A ReadWrite path that names a protected entry exactly opens it.
	ReadOnly, ReadWrite []string
	// PolicyReadWrite are more writable host paths, asked for by a
	// settings file, a profile or the config file rather than the command
	// line: they never open a protected entry (see protect.ProtectedNames), so
	// one that is or lies inside a protected entry is left out (said on
	// Log): the entry stays read-only. The caller resolves them: one
	// that now resolves to another path (a component was swapped for a
	// symlink since it was checked) is refused.
	PolicyReadWrite []string
	// RequestReadOnly are read-only paths an sbx exec request names
	// ("ro"): checked as the workspace is (never the home).
	RequestReadOnly []string
	// Env holds NAME (pass the host's value) and NAME=VALUE (set) entries
	// added to the clean environment.
	Env []string
	// HostEnv is the host environment the clean one is taken from
	// (os.Environ() when nil).
	HostEnv []string
	Limits  sandbox.Limits
	// ExplicitLimits names the limits the user asked for (e.g. "--memory"):
	// a rootless run that cannot enforce them with cgroups refuses to run
	// rather than fall back to rlimits.
	ExplicitLimits []string
	// Timeout kills the whole sandbox when it expires (0: none).
	Timeout time.Duration
	// Terminal gives the program a pty proxied to Stdin/Stdout, which must
	// then be terminals.
	Terminal bool
	Stdin    *os.File
	Stdout   io.Writer
	Stderr   io.Writer
	// Log receives sbx's own messages ("sbx: ..."); os.Stderr when nil.
	Log io.Writer
	// Violations, when set, receives every denial as a JSON line.
	Violations io.Writer
	// Policy demands a file tier (default PolicyAuto).
	Policy Policy
	// AllowHosts opens egress to these destinations (HOST[:PORT], see
	// egress.ParseRule) through sbx's proxy; empty: no network at all.
	AllowHosts []string
	// Net is the run's network (--net); the zero value is [NetLoopback].
	Net NetMode
	// Publish are --publish [ADDR:]PORT[:SANDBOX_PORT] (see
	// [ParsePublish]): host listeners forwarded into the sandbox's
	// loopback.
	Publish []string
	// ForwardSignals makes Run catch INT, TERM, HUP, QUIT, USR1, USR2 and
	// WINCH and pass them to the program; otherwise the caller handles
	// signals (and may cancel the context).
	ForwardSignals bool
	// StateDir is where sbx keeps run state (default /run/sbx, or
	// [UserStateDir] without root). It must never be visible inside a
	// sandbox.
	StateDir string
	// NoStage turns off the staging of host paths named in Args (see
	// package stage); sbx exec sets it unless the request asks to stage.
	NoStage bool
	// DenialsInResult keeps the denials to Result.Violations: no
	// "sbx: denied ..." lines, no count and no hints about a command not
	// found on Log (sbx exec returns them; its requests name their paths).
	// Quiet, sbx run --quiet, only leaves the lines out.
	DenialsInResult bool
	// NoDiscover keeps sbx from showing a command installed outside the
	// sandbox's view (see discover.go); a run that then ends with 127
	// says where it is and how to show it.
	NoDiscover bool

	// Masks are host paths whose content the program must not see
	// (sbx run --mask): each stays visible, empty and unreadable (EACCES),
	// on every file tier (see mask.go).
	Masks []string
	// Protect are more host paths that stay read-only inside writable
	// trees, as the protected entries do (sbx run --settings denyWrite).
	Protect []string
	// Quiet prints no "sbx: denied" lines; --violations and the count at
	// the end stay.
	Quiet bool

	// Filled by resolvePaths: the resolved, checked host paths.
	ws, home string
	ro, rw   []string
	policyRW []string    // resolved PolicyReadWrite
	masks    []string    // resolved Masks
	protects []string    // resolved Protect
	cred     hostfs.Cred // the invoking user's, for host file operations
	// forOwner: root without sudo runs the program as the workspace's
	// owner (see invoker.WorkspaceOwner).
	forOwner bool

	who     invoker.User       // filled by resolvePaths
	tiers   tiers              // filled by spec
	protect protect.Protection // filled by spec: checked once the sandbox is set up
	// walked are the mounts the protected-entry walk of spec searched
	// (filled by spec): searched again once the sandbox is gone.
	walked   protect.Mounts
	allow    egress.Allowlist // filled by spec
	publish  []netsvc.Publish // filled by spec
	rootOnly chan []string    // filled by spec: sandbox.RootOnly of /etc, for uid 0
	// limitsNote is why a rootless run's limits are rlimits (set by
	// rootlessLimits); spec notes it once nothing can refuse the run.
	limitsNote error
	// discoverNote and notFound are set by discover: what it showed, and
	// what to say if the program is not found (127).
	discoverNote string
	notFound     string
	// rwCopies are the --rw files copied into the run dir (rwfile.go).
	rwCopies []home.RWCopy
	// held are the run's mount sources, by real path, as resolvePaths
	// (and holdRest) opened and checked them (see mountsrc.go); closed
	// when Run returns.
	held map[string]*hostfs.Held
	// runDir is the run's private state (see home.RunDir).
	runDir *home.RunDir
}

// resolvePaths resolves every host path of o once, as the invoking user,
// into a descriptor it keeps (see mountsrc.go), and refuses, with a
// *refuse.Error, any that could hand the sandbox the host (see
// hostPolicy.check, decided on the descriptor). It writes nothing to disk.
func (o *Options) resolvePaths() error {
	if Rootless() && os.Geteuid() != os.Getuid() {
		return errors.New("sbx must not be setuid: run it as yourself (rootless) or with sudo")
	}
	who := invoker.Current(o.hostLookup)
	o.who = who
	o.cred = who.Cred()
	cwd, err := filepath.EvalSymlinks(o.Cwd)
	if err != nil {
		return fmt.Errorf("working directory %s: %w", o.Cwd, err)
	}
	o.Cwd = cwd
	paths := []hostPath{}
	hold := func(what, p string, files, writable bool) (string, error) {
		h, err := o.holdPath(what, p, cwd, files)
		if err != nil {
			return "", err
		}
		paths = append(paths, hostPath{field: what, path: h.Path, writable: writable, fsType: h.FSType})
		return h.Path, nil
	}
	if o.ws, err = hold("workspace", o.Workspace, false, o.Write); err != nil {
		return err
	}
	_, sudo := o.hostLookup("SUDO_UID")
	if owner, ok := invoker.WorkspaceOwner(o.held[o.ws], sudo); ok {
		o.who, o.forOwner = owner, true
		o.cred = owner.Cred()
	}
	o.ro, o.rw = nil, nil
	for _, p := range o.ReadOnly {
		r, err := hold("--ro", p, true, false)
		if err != nil {
			return err
		}
		o.ro = append(o.ro, r)
	}
	for _, p := range o.RequestReadOnly {
		r, err := hold("ro", p, true, false)
		if err != nil {
			return err
		}
		o.ro = append(o.ro, r)
	}
	for _, p := range o.ReadWrite {
		r, err := hold("--rw", p, true, true)
		if err != nil {
			return err
		}
		o.rw = append(o.rw, r)
	}
	o.policyRW = nil
	for _, p := range o.PolicyReadWrite {
		h, err := o.holdPath("--rw", p, cwd, true)
		if err != nil {
			return err
		}
		r := h.Path
		want := p
		if !filepath.IsAbs(want) {
			want = filepath.Join(cwd, want)
		}
		if r != filepath.Clean(want) {
			return &refuse.Error{Field: "--rw", Reason: fmt.Sprintf("writable path %s (from a settings file, a profile or the config): it resolves to %s now, not to the path that was checked (a symlink was put in its way); not running", p, r)}
		}
		if slices.Contains(o.rw, r) {
			continue // given already (by the command line: open)
		}
		if entry, ok := protect.EntryOf(r, o.ws, who.Home); ok {
			fmt.Fprintf(o.Log, "sbx: keeping %s read-only: a settings file, a profile or the config asks to write %s, and only --rw %s on the command line opens a protected entry\n", entry, r, entry)
			continue
		}
		o.rw = append(o.rw, r)
		o.policyRW = append(o.policyRW, r)
		paths = append(paths, hostPath{field: "--rw", path: r, writable: true, fsType: h.FSType})
	}
	if o.Home != "" && o.Home != HomeTmp {
		if o.home, err = hold("--home", o.Home, false, true); err != nil {
			return err
		}
	}
	if err := o.resolveMaskPaths(cwd); err != nil {
		return err
	}
	if err := checkUTF8(o.Args, o.Cwd, paths); err != nil {
		return err
	}
	pol, err := newHostPolicy(o.StateDir, o.who.Home)
	if err != nil {
		return err
	}
	for _, hp := range paths {
		if err := pol.check(hp); err != nil {
			return err
		}
	}
	return nil
}

// checkUTF8 refuses bytes that are not UTF-8 in the argv, the working
// directory and the host paths: libcontainer hands them to the sandbox as
// JSON, which would turn them into U+FFFD, so the program would get other
// names than the user gave (and copy-back would write under them).
func checkUTF8(args []string, cwd string, paths []hostPath) error {
	bad := func(what string) error {
		return fmt.Errorf("%s is not valid UTF-8: sbx cannot pass such bytes into the sandbox unchanged (rename it, or pass the name another way)", what)
	}
	for i, a := range args {
		if !utf8.ValidString(a) {
			return bad(fmt.Sprintf("argument %d (%q)", i, a))
		}
	}
	if !utf8.ValidString(cwd) {
		return bad(fmt.Sprintf("the working directory %q", cwd))
	}
	for _, p := range paths {
		if !utf8.ValidString(p.path) {
			return bad(fmt.Sprintf("%s %q", p.field, p.path))
		}
	}
	return nil
}

// cleanEnv builds the program's environment: a few host variables that
// describe the user's terminal and locale, never credentials, plus what the
// user asked for with --env.
func cleanEnv(o *Options, who invoker.User, homeInside string) ([]string, error) {
	host := map[string]string{}
	for _, kv := range o.HostEnv {
		if k, v, ok := strings.Cut(kv, "="); ok {
			host[k] = v
		}
	}
	env := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := env[k]; !ok {
			order = append(order, k)
		}
		env[k] = v
	}
	path := host["PATH"]
	if path == "" {
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	}
	set("PATH", path)
	set("HOME", homeInside)
	set("USER", who.Name)
	set("LOGNAME", who.Name)
	for _, kv := range o.HostEnv {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == "TERM", k == "LANG", k == "TZ", k == "COLORTERM", strings.HasPrefix(k, "LC_"):
			set(k, v)
		}
	}
	set("SBX", "1")
	if len(o.allow) == 0 && !o.hostNetwork() {
		// Nothing beyond the sandbox is reachable: npm would retry each
		// failed fetch with a 10-60 s backoff (fetch-retries 2), 70 s
		// for an "npm install" that cannot succeed. --env overrides it.
		set("npm_config_fetch_retries", "0")
	}
	if len(o.allow) > 0 {
		for _, kv := range netsvc.ProxyEnv(o.allow) {
			k, v, _ := strings.Cut(kv, "=")
			set(k, v)
		}
	}
	for _, e := range o.Env {
		k, v, hasValue := strings.Cut(e, "=")
		if !profile.ValidEnvName(k) {
			return nil, fmt.Errorf("invalid --env %q: want NAME or NAME=VALUE", e)
		}
		if !hasValue {
			hv, ok := host[k]
			if !ok {
				continue
			}
			v = hv
		}
		set(k, v)
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+env[k])
	}
	return out, nil
}
