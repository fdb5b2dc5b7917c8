package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/sbx-sandbox/sbx/bpf"
	"github.com/sbx-sandbox/sbx/hostcheck"
	"github.com/sbx-sandbox/sbx/netsvc"
	"github.com/sbx-sandbox/sbx/policy"
	"github.com/sbx-sandbox/sbx/runner"
	"github.com/sbx-sandbox/sbx/sandbox"
)

const doctorUsageText = `Usage: sbx doctor [--policy TIER] [--apparmor-profile]

Checks, on this host, every mechanism sbx builds on and says which tiers
"sbx run" would use, as the user who runs it (with root, or rootless).
It then runs "true" in a real sandbox with every tier "sbx run" would
pick, and reports that run's verdict. Exit status 0 only when that run
succeeded, so sbx can enforce both the file and the network policy; 1 when
sbx run would refuse or fail here; 125 for a usage error.
`

// check is one line of the doctor's report.
type check struct {
	name string
	err  error  // nil: available
	info string // detail when available
}

// doctorFlags registers sbx doctor's flags on fs and returns the check
// they configure.
func doctorFlags(fs *flag.FlagSet) action {
	var (
		tier     = "auto"
		apparmor bool
	)
	fs.StringVar(&tier, "policy", tier, "`TIER` decide and run the canary as sbx run --policy TIER would: auto, landlock or bpf")
	fs.BoolVar(&apparmor, "apparmor-profile", false, "print the AppArmor profile that lets this sbx binary create user namespaces (Ubuntu 23.10+), to install as /etc/apparmor.d/sbx")
	return func(args []string, s streams) int {
		if len(args) > 0 {
			return fail(s, fmt.Errorf("doctor: unexpected argument %q (see sbx doctor --help)", args[0]))
		}
		demand, err := runner.ParsePolicy(tier)
		if err != nil {
			return fail(s, fmt.Errorf("doctor: --policy: %v", err))
		}
		if apparmor {
			self, err := selfPath()
			if err != nil {
				return fail(s, err)
			}
			fmt.Fprint(s.out, sandbox.AppArmorProfile(self))
			return 0
		}
		self, _ := selfPath()
		host := hostcheck.Probe(hostcheck.Options{Full: true, Self: self})
		d := writeReport(s.out, host, demand)
		if d.Refused != nil {
			return 1
		}
		// The probes above only say what the host offers; a real run proves
		// that sbx works with it. Never claim more than that run showed.
		info, err := canaryRun(demand)
		if err != nil {
			fmt.Fprintf(s.out, "canary run:    failed: %v\n", err)
			fmt.Fprintln(s.out, "verdict:       sbx run fails here although the mechanisms are present (see the canary run)")
			return 1
		}
		fmt.Fprintf(s.out, "canary run:    ok: %s\n", info)
		fmt.Fprintln(s.out, "verdict:       sbx run can enforce files and network here")
		return 0
	}
}

// writeReport prints the checks of host and the decision sbx run makes
// there for demand (policy.Decide, from the same probe, so doctor cannot
// claim what run cannot do), and returns that decision. A refusal ends
// the report with the verdict.
func writeReport(w io.Writer, host policy.Host, demand runner.Policy) policy.Decision {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range doctorChecks(host) {
		state, detail := "ok", c.info
		if c.err != nil {
			state, detail = "missing", c.err.Error()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.name, state, detail)
	}
	tw.Flush()
	d := policy.Decide(host, policy.Demand{Files: demand})
	mode := "root"
	if d.Rootless {
		mode = "rootless (user namespace)"
	}
	fmt.Fprintf(w, "\nmode:          %s\n", mode)
	fmt.Fprintf(w, "file tiers:    %s\n", orNone(d.FileTiers()))
	fmt.Fprintf(w, "network tiers: %s\n", strings.Join(d.NetTiers(), ", "))
	if d.Rootless {
		fmt.Fprintf(w, "limits:        %s\n", limitsInfo(host.Delegation))
	}
	if d.Refused != nil {
		fmt.Fprintf(w, "refused:       %v\n", d.Refused)
		fmt.Fprintln(w, "verdict:       sbx run would refuse to run here (see the missing lines above)")
	}
	return d
}

func orNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

// doctorChecks are the lines of the report: the host value, in order.
func doctorChecks(h policy.Host) []check {
	var out []check
	add := func(name string, f policy.Feature) { out = append(out, check{name, f.Err, f.Info}) }
	switch {
	case h.EUID != 0:
		out = append(out, check{"root", errors.New("running as uid " + strconv.Itoa(h.EUID) + ": rootless sandboxes (run with sudo for the BPF tiers)"), ""})
	case !h.CapSysAdmin:
		out = append(out, check{"root", errors.New("euid 0 without CAP_SYS_ADMIN (in a container?): rootless sandboxes, without the BPF tiers"), ""})
	case !h.CapNetAdmin:
		out = append(out, check{"root", errors.New("euid 0 without CAP_NET_ADMIN: the root path needs it"), ""})
	default:
		out = append(out, check{"root", nil, "euid 0"})
	}
	kernel := h.Kernel
	if kernel == "" {
		kernel = "unknown"
	}
	out = append(out, check{"kernel", nil, kernel + " (the BPF LSM tier needs " + bpf.MinLSM.Version.String() + "+, Landlock " + bpf.MinLandlock.Version.String() + "+, the cgroup BPF wall " + bpf.MinWall.Version.String() + "+)"})
	add("namespaces", h.Namespaces)
	add("user namespaces", h.UserNS)
	add("cgroups", h.Cgroup2)
	add("seccomp", h.Seccomp)
	add("cgroup bpf", h.CgroupBPF)
	add("bpf lsm", h.BPFLSM)
	add("denial tracer", h.Tracer)
	add("landlock", h.Landlock)
	out = append(out, check{"egress", nil, netsvc.Info(h.Rootless())})
	add("securityfs", h.Securityfs)
	add("bpffs", h.BPFFS)
	return out
}

// limitsInfo says how a rootless run enforces its limits here.
func limitsInfo(deleg policy.Feature) string {
	if deleg.Err == nil {
		return "cgroup2 limits in the delegated subtree " + deleg.Info
	}
	return fmt.Sprintf("rlimits (weaker: %s), because no delegated cgroup2 subtree: %v; explicit --memory/--cpus/--pids refuse to run", sandbox.RlimitLimits, deleg.Err)
}

func selfPath() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find sbx binary: %w", err)
	}
	if r, err := filepath.EvalSymlinks(self); err == nil {
		self = r
	}
	return self, nil
}
