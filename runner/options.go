package runner

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sbx-sandbox/sbx/egress"
	"github.com/sbx-sandbox/sbx/sandbox"
)

// ExitTimeout is the status of a run whose timeout expired, as timeout(1).
const ExitTimeout = 124

// Defaults of the limits, as the container variant's sandbox tool.
const (
	DefaultMemory  = 512 << 20
	DefaultCPUs    = 1.0
	DefaultPids    = 256
	DefaultTmpSize = 512 << 20
)

// HomeTmp as Options.Home gives the run a throwaway home.
const HomeTmp = "tmp"

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
	ReadOnly, ReadWrite []string
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
	// HostNetwork shares the host's network (--net host): no isolation.
	HostNetwork bool
	// ForwardSignals makes Run catch INT, TERM, HUP, QUIT, USR1, USR2 and
	// WINCH and pass them to the program; otherwise the caller handles
	// signals (and may cancel the context).
	ForwardSignals bool
	// StateDir is where sbx keeps run state (default /run/sbx, or
	// [UserStateDir] without root). It must never be visible inside a
	// sandbox.
	StateDir string

	who      invoker          // filled by spec
	tiers    tiers            // filled by spec
	protect  Protection       // filled by spec: checked once the sandbox is set up
	allow    egress.Allowlist // filled by spec
	reporter *reporter        // set by Exec to collect the result's violations
	rootOnly chan []string    // filled by spec: sandbox.RootOnly of /etc, for uid 0
	// limitsNote is why a rootless run's limits are rlimits (set by
	// rootlessLimits); spec notes it once nothing can refuse the run.
	limitsNote error
}

// invoker is the user a run is for: under sudo, the user who ran sudo.
type invoker struct {
	uid, gid int
	name     string
	home     string
}

func currentInvoker(env func(string) (string, bool)) (invoker, error) {
	uidStr, sudo := env("SUDO_UID")
	if !sudo || os.Getuid() != 0 {
		uidStr = strconv.Itoa(os.Getuid())
	}
	u, err := user.LookupId(uidStr)
	if err != nil {
		// A uid without a passwd entry still runs, with a home under /tmp.
		uid, _ := strconv.Atoi(uidStr)
		gid := os.Getgid()
		if g, ok := env("SUDO_GID"); ok && sudo {
			gid, _ = strconv.Atoi(g)
		}
		return invoker{uid: uid, gid: gid, name: uidStr, home: "/tmp"}, nil
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	home := u.HomeDir
	if !sudo {
		if h, ok := env("HOME"); ok && filepath.IsAbs(h) {
			home = filepath.Clean(h)
		}
	}
	return invoker{uid: uid, gid: gid, name: u.Username, home: home}, nil
}

// cleanEnv builds the program's environment: a few host variables that
// describe the user's terminal and locale, never credentials, plus what the
// user asked for with --env.
func cleanEnv(o *Options, who invoker, homeInside string) ([]string, error) {
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
	set("USER", who.name)
	set("LOGNAME", who.name)
	for _, kv := range o.HostEnv {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == "TERM", k == "LANG", k == "TZ", k == "COLORTERM", strings.HasPrefix(k, "LC_"):
			set(k, v)
		}
	}
	set("SBX", "1")
	if len(o.allow) > 0 {
		for _, kv := range proxyEnv() {
			k, v, _ := strings.Cut(kv, "=")
			set(k, v)
		}
	}
	for _, e := range o.Env {
		k, v, hasValue := strings.Cut(e, "=")
		if !validEnvName(k) {
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

func validEnvName(k string) bool {
	if k == "" {
		return false
	}
	for i, r := range k {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// resolveDir makes p absolute (against cwd), resolves symlinks and checks
// that it is an existing directory (or file, when files is true).
func resolvePath(what, p, cwd string, files bool) (string, error) {
	if p == "" {
		return "", fmt.Errorf("%s: empty path", what)
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(cwd, p)
	}
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("%s %s: no such file or directory", what, p)
		}
		return "", fmt.Errorf("%s %s: %w", what, p, err)
	}
	fi, err := os.Stat(r)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", what, p, err)
	}
	if !fi.IsDir() && !(files && fi.Mode().IsRegular()) {
		return "", fmt.Errorf("%s %s: not a directory", what, p)
	}
	return r, nil
}

// within reports whether p is root or lies below it.
func within(p, root string) bool {
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/")
}
