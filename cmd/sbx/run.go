package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"golang.org/x/term"

	"github.com/sbx-sandbox/sbx/invoker"
	"github.com/sbx-sandbox/sbx/protect"
	"github.com/sbx-sandbox/sbx/runner"
	"github.com/sbx-sandbox/sbx/sandbox"
)

const runUsageHead = `Usage: sbx run [flags] -- CMD [ARGS...]

Runs CMD (looked up on PATH inside the sandbox, no shell in between) in a new
sandbox and exits with its status.

What the program sees:
  /usr /bin /sbin /lib* /etc /opt   the host's, read-only (secrets such as
                                    /etc/shadow masked)
  the workspace                     at its own host path; read-only unless -w
  $HOME                             the persistent sbx home (not your home)
  /tmp                              private tmpfs (512 MiB)
  /proc, /dev                       its own (own PID namespace, minimal /dev)
Nothing else: not your home, /root, /var, /run, nor any daemon socket.
No network but the sandbox's own loopback (an empty network namespace: test
servers work, nothing outside is reachable) unless --allow-host, no
capabilities, no_new_privs, a seccomp filter, and cgroup limits.
Without root (rootless), the same in a user namespace, with Landlock and
seccomp in place of the BPF tiers (no denial reports from the wall), and
limits as cgroups only where a cgroup2 subtree is delegated to you (else as
rlimits, with a note; explicit --memory/--cpus/--pids then refuse to run).
See sbx doctor.
`

// hostDefaults is the line of run's --help with this host's default limits.
func hostDefaults() string {
	return fmt.Sprintf("Default limits on this host: --memory %s --cpus %s --pids %d (sbx exec: 512m,\n1 CPU, 256, 120 s).\n", formatSize(hostMemory()), strconv.FormatFloat(hostCPUs(), 'g', -1, 64), runDefaultPids)
}

// runUsageProfiles says where the flags' values come from besides the
// command line (issues 18, 20).
const runUsageProfiles = `Precedence: flags, then the profile (and its settings files), then the
[defaults] of ${XDG_CONFIG_HOME:-~/.config}/sbx/config.toml (never one inside
the workspace), then the built-in defaults. Lists add up across them.
`

const runUsageTail = `Exit status: the program's own; 128+N if it died of signal N; 124 on timeout;
126 if CMD is not executable; 127 if it is not found; 125 if sbx itself failed
(the program did not run), or if the program exited 0 but staged session files
could not all be copied back (they stay in the sandbox home; later runs retry).
Signals sent to sbx (INT, TERM, HUP, QUIT, USR1, USR2, WINCH) are forwarded;
if sbx dies, every process of the sandbox dies with it.
`

// runUsageTailText is run's --help after its Flags section.
func runUsageTailText() string { return hostDefaults() + runUsageProfiles + "\n" + runUsageTail }

// cmdRun is "sbx run ARGS".
func cmdRun(args []string, s streams) int {
	c, _ := lookupCommand("run")
	return c.execute(args, s)
}

// runFlags registers sbx run's flags on fs and returns the run they
// configure.
func runFlags(fs *flag.FlagSet) action {
	var (
		o           runner.Options
		ro, rw, env listFlag
		memory            = formatSize(hostMemory())
		cpus              = hostCPUs()
		pids        int64 = runDefaultPids
		tty               = "auto"
		policy            = "auto"
		violations  string
		allowHosts  listFlag
		publish     listFlag
		netMode     = "loopback"
	)
	fs.StringVar(&o.Workspace, "workspace", "", "`DIR` directory to work in (default: the current directory); the program starts in the current directory if it lies inside the workspace, else at the workspace root")
	fs.BoolVar(&o.Write, "write", false, "make the workspace writable, except the entries that run later outside the sandbox, which stay read-only: "+protect.ProtectedList()+" (open one with --rw PATH, e.g. --rw .git to commit from inside)")
	fs.Var(&ro, "ro", "`PATH` also show PATH read-only at its own path (repeatable)")
	fs.Var(&rw, "rw", "`PATH` also show PATH read-write at its own path (repeatable); a single file below your home is copied in and back (so a save by rename works), one in the writable workspace is the workspace's own")
	fs.StringVar(&o.Home, "home", "", "`DIR|tmp` host directory behind $HOME (default: the workspace's own, ${XDG_DATA_HOME:-~/.local/share}/sbx/homes/NAME-HASH); \"tmp\" for a throwaway home removed after the run")
	fs.Var(&env, "env", "`NAME` pass the host's NAME through (repeatable)\n`NAME=VALUE` set NAME (repeatable). Only PATH, HOME, USER, TERM, LANG, LC_*, TZ and SBX=1 are set otherwise (and, without --allow-host, npm_config_fetch_retries=0: npm fails at once instead of retrying for 70 s)")
	fs.StringVar(&memory, "memory", memory, "`SIZE` memory limit, e.g. 512m, 2g (default: half the RAM, see below); exceeding it kills the program")
	fs.Float64Var(&cpus, "cpus", cpus, "`N` CPU limit in cores (default: all CPUs, see below)")
	fs.Int64Var(&pids, "pids", pids, "`N` process limit (default 4096); fork fails beyond it")
	fs.DurationVar(&o.Timeout, "timeout", 0, "`DUR` kill the whole sandbox after DUR (e.g. 30s, 5m); status 124")
	fs.StringVar(&tty, "tty", tty, "`MODE` auto|always|never: give the program its own pty (auto: when stdin and stdout are terminals)")
	fs.StringVar(&policy, "policy", policy, "`TIER` file tier to demand: auto (every tier the kernel has: BPF LSM and/or Landlock; refuse to run with none), landlock, or bpf; a demanded tier that is missing makes sbx exit 125")
	fs.StringVar(&violations, "violations", "", "`FILE` append every denied operation to FILE as a JSON line (time, pid, comm, op, target, errno, tier); denials are also summarized on stderr as \"sbx: denied ...\" lines")
	fs.Var(&allowHosts, "allow-host", "`HOST[:PORT]` let the program reach HOST (port 443 unless given) through sbx's HTTP proxy and, for clients that ignore proxy variables, sbx's DNS and forwarders in the sandbox (repeatable). HOST is a name, *.DOMAIN for its subdomains (not DOMAIN itself), or an IP address ([::1]:8080); 127.0.0.1:PORT, [::1]:PORT and localhost:PORT mean this machine's loopback at the same address and port. HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, NO_PROXY (both cases) and NODE_USE_ENV_PROXY=1 are set; names that resolve to loopback, private, link-local or this machine's own addresses (or IPv6 forms carrying one) are refused unless that address is allowed itself")
	fs.StringVar(&netMode, "net", netMode, "`MODE` loopback (default): the sandbox's own loopback (127.0.0.1, ::1: servers and clients of the program itself, not this machine's) and the --allow-host destinations; every other destination is refused and reported. none: no inet socket at all but the --allow-host proxy's. host: share the host's network. WARNING: with host the program can reach everything this machine can (your LAN, local services, cloud metadata): no isolation")
	fs.Var(&publish, "publish", "`[ADDR:]PORT[:SANDBOX_PORT]` forward this machine's ADDR:PORT (ADDR 127.0.0.1 unless given, [::1] in brackets) to the sandbox's loopback at SANDBOX_PORT (PORT unless given), as docker run -p: a dev server or a login callback the program serves (repeatable; --net loopback only)")
	// Fitting the host (issue 18): see runner/discover.go.
	fs.BoolVar(&o.NoDiscover, "no-discover", false, "do not show a command that is missing in the sandbox but installed on the host (nvm, npm --prefix, ~/.local/bin, ~/.bun/bin): by default sbx shows its installation read-only and says so")
	// Profiles, the config file, srt settings, masks, --quiet (#18, #20).
	var pf profileFlags
	pf.register(fs)
	return func(args []string, s streams) int {
		o.Args = args
		if len(o.Args) == 0 {
			return fail(s, errors.New("run: no command given (usage: sbx run [flags] -- CMD [ARGS...])"))
		}
		explicitLimits, err := pf.apply(fs, s, &o, runFlagValues{
			net: &netMode, policy: &policy, memory: &memory, cpus: &cpus, pids: &pids,
			allowHosts: &allowHosts, env: &env, ro: &ro, rw: &rw, masks: &pf.masks, protect: &pf.protected,
		})
		if err != nil {
			return fail(s, fmt.Errorf("run: %w", err))
		}
		mem, err := parseSize(memory)
		if err != nil {
			return fail(s, fmt.Errorf("run: --memory %q: %v", memory, err))
		}
		// The ranges the kernel and sbx's own processes accept: CFS bandwidth
		// needs a quota of at least 1 ms per 100 ms period; the shim (a Go
		// program, PID 1) and libcontainer's init need a dozen tasks before
		// the program has one.
		if cpus < minCPUs || math.IsNaN(cpus) || math.IsInf(cpus, 0) || cpus > 1024 {
			return fail(s, fmt.Errorf("run: --cpus %v: want a number of cores from %v to 1024", cpus, minCPUs))
		}
		if pids < minPids || pids > maxPids {
			return fail(s, fmt.Errorf("run: --pids %d: want a count from %d to %d", pids, minPids, maxPids))
		}
		if o.Timeout < 0 {
			return fail(s, fmt.Errorf("run: --timeout %v: want a duration > 0", o.Timeout))
		}
		switch tty {
		case "auto":
			o.Terminal = s.in != nil && term.IsTerminal(int(s.in.Fd())) && isTerminal(s.out)
		case "always":
			o.Terminal = true
		case "never":
		default:
			return fail(s, fmt.Errorf("run: --tty %q: want auto, always or never", tty))
		}
		if o.Net, err = runner.ParseNetMode(netMode); err != nil {
			return fail(s, fmt.Errorf("run: --net %v", err))
		}
		if o.Net == runner.NetHost {
			if len(allowHosts) > 0 {
				return fail(s, errors.New("run: --allow-host needs --net loopback or none (with --net host everything is reachable)"))
			}
			fmt.Fprintln(s.err, "sbx: WARNING: --net host: the program shares this machine's network and can reach everything it can (LAN, local services, cloud metadata)")
		}
		o.AllowHosts = allowHosts
		o.Publish = publish
		if o.Policy, err = runner.ParsePolicy(policy); err != nil {
			return fail(s, fmt.Errorf("run: --policy: %v", err))
		}
		var createdViolations *os.File // the file, if this run created it
		if violations != "" {
			// With the user's rights, never through a symlink (the file may
			// lie in the workspace, where an earlier run's program could
			// have put one in its place).
			who := invoker.Cred()
			f, err := openUserFile(who, violations, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
			if err == nil {
				createdViolations = f
			} else if errors.Is(err, os.ErrExist) {
				f, err = openUserFile(who, violations, os.O_WRONLY|os.O_APPEND, 0)
			}
			if err != nil {
				return fail(s, fmt.Errorf("run: --violations: %w", err))
			}
			defer f.Close()
			o.Violations = f
		}
		o.ReadOnly, o.ReadWrite, o.Env = ro, rw, env
		o.Limits = sandbox.Limits{MemoryBytes: mem, CPUs: cpus, Pids: pids}
		o.ExplicitLimits = explicitLimits
		o.Stdin, o.Stdout, o.Stderr, o.Log = s.in, s.out, s.err, s.err
		o.ForwardSignals = true

		res, err := runner.Run(context.Background(), o)
		if err != nil {
			// A run refused before it started leaves nothing behind: not even
			// the violations file it created, while that is still empty.
			if createdViolations != nil {
				if st, serr := createdViolations.Stat(); serr == nil && st.Size() == 0 {
					os.Remove(violations)
				}
			}
			return fail(s, err)
		}
		switch {
		case res.TimedOut:
			fmt.Fprintf(s.err, "sbx: timed out after %v: killed the sandbox\n", o.Timeout)
		case res.OOM && res.ExitCode == 128+9:
			fmt.Fprintf(s.err, "sbx: out of memory: the program was killed at its %s limit (raise it with --memory)\n", memory)
		case res.OOM:
			fmt.Fprintf(s.err, "sbx: out of memory: the kernel killed a process of the sandbox at its %s limit; the program itself exited with %d (raise the limit with --memory)\n", memory, res.ExitCode)
		}
		if res.CopyBackErr != nil && res.ExitCode == 0 {
			return exitSbxError // the program succeeded, but its work did not all come back
		}
		return res.ExitCode
	}
}

// Limits sbx accepts (see the checks in cmdRun).
const (
	minCPUs = 0.01
	minPids = 16
	maxPids = 4194304 // the kernel's PID_MAX_LIMIT
)

// parseSize parses a byte count with an optional binary suffix (k, m, g, t;
// "b" and "i"/"ib" tolerated: 512m, 512M, 512MiB).
func parseSize(v string) (int64, error) {
	s := strings.ToLower(strings.TrimSpace(v))
	s = strings.TrimSuffix(strings.TrimSuffix(s, "b"), "i")
	mult := int64(1)
	if s != "" {
		switch s[len(s)-1] {
		case 'k':
			mult = 1 << 10
		case 'm':
			mult = 1 << 20
		case 'g':
			mult = 1 << 30
		case 't':
			mult = 1 << 40
		}
		if mult != 1 {
			s = s[:len(s)-1]
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, errors.New("want a size such as 512m or 2g")
	}
	if n > math.MaxInt64/mult {
		return 0, errors.New("size too large")
	}
	if n*mult < 4<<20 {
		return 0, errors.New("below the 4 MiB minimum")
	}
	return n * mult, nil
}

// isTerminal reports whether w is an *os.File on a terminal.
func isTerminal(w any) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}
