//go:build linux

package sandbox

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"
)

// These tests check the filter as a configuration, without libseccomp: the
// rules against a plain statement of the policy (seccompOracle), and the
// rule list against a golden file. seccomp_bpf_test.go (build tag seccomp)
// checks the compiled filter, in user space and on the real kernel.

var updateSeccompGolden = flag.Bool("update-seccomp", false, "rewrite testdata/seccomp_default.golden")

// issueDenied are the syscalls issue 2 names; each must fail with EPERM
// whatever its arguments.
var issueDenied = []string{
	"mount", "umount2", "pivot_root", "chroot", "ptrace", "process_vm_readv",
	"process_vm_writev", "bpf", "perf_event_open", "keyctl", "add_key", "request_key",
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"open_by_handle_at", "name_to_handle_at", "io_uring_setup", "io_uring_enter",
	"io_uring_register", "userfaultfd", "setns", "swapon", "swapoff", "reboot",
	"settimeofday", "clock_settime",
}

// seccompOracle states the policy plainly: the errno the filter must give
// name(a...), 0 for allowed, with the arguments as seccomp sees them.
// families are the socket families allowed besides AF_UNIX. It does not use
// the rule-building code, only the unconditional list.
func seccompOracle(name string, a [6]uint64, families []int) unix.Errno {
	const (
		cloneNS    = 0x7e020000 // NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET
		cloneTime  = 0x80       // CLONE_NEWTIME
		tiocsti    = 0x5412
		tioclinux  = 0x541c
		afUnixFam  = 1
		sysSockNum = 1
		setID      = 0o6000     // S_ISUID|S_ISGID
		creates    = 0o20000100 // O_CREAT|__O_TMPFILE
	)
	switch name {
	case "clone3", "openat2":
		return unix.ENOSYS
	case "chmod", "fchmod", "mknod", "creat":
		if a[1]&setID != 0 {
			return unix.EPERM
		}
	case "fchmodat", "fchmodat2", "mknodat":
		if a[2]&setID != 0 {
			return unix.EPERM
		}
	case "open":
		if a[1]&creates != 0 && a[2]&setID != 0 {
			return unix.EPERM
		}
	case "openat":
		if a[2]&creates != 0 && a[3]&setID != 0 {
			return unix.EPERM
		}
	case "clone":
		if a[0]&cloneNS != 0 {
			return unix.EPERM
		}
	case "unshare":
		if a[0]&(cloneNS|cloneTime) != 0 {
			return unix.EPERM
		}
	case "ioctl":
		if r := uint32(a[1]); r == tiocsti || r == tioclinux {
			return unix.EPERM
		}
	case "personality":
		if p := uint32(a[0]); p != 0xffffffff && p&^0xff != 0 {
			return unix.EPERM
		}
	case "socket":
		if a[0] != afUnixFam && !slices.ContainsFunc(families, func(f int) bool { return a[0] == uint64(f) }) {
			return unix.EPERM
		}
	case "socketcall":
		if a[0] == sysSockNum {
			return unix.EPERM
		}
	default:
		if slices.Contains(seccompDenied, name) {
			return unix.EPERM
		}
	}
	return 0
}

type seccompCase struct {
	name string
	args [6]uint64
}

func (c seccompCase) String() string {
	return fmt.Sprintf("%s(%#x, %#x)", c.name, c.args[0], c.args[1])
}

// seccompCases are the calls both the rule evaluator and the compiled filter
// are checked on: edges of every conditional rule, every denied name, a few
// allowed calls, and seeded random arguments.
func seccompCases() []seccompCase {
	var cs []seccompCase
	add := func(name string, args ...uint64) {
		c := seccompCase{name: name}
		copy(c.args[:], args)
		cs = append(cs, c)
	}
	for _, n := range seccompDenied {
		add(n)
		add(n, ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0))
	}
	for _, n := range []string{"read", "write", "openat", "execve", "mmap", "futex", "getpid",
		"wait4", "kill", "adjtimex", "clock_adjtime", "socketpair", "pidfd_open", "clone3"} {
		add(n)
	}

	const (
		sigchld = 0x11
		thread  = 0x3d0f00 // glibc's pthread clone flags: VM|FS|FILES|SIGHAND|THREAD|SYSVSEM|SETTLS|PARENT_SETTID|CHILD_CLEARTID
	)
	for _, v := range []uint64{0, sigchld, thread, 0x80 | sigchld, 0xff, unix.CLONE_VFORK | unix.CLONE_VM | sigchld,
		unix.CLONE_PIDFD | sigchld, 1 << 32, ^uint64(0) &^ 0xffffffff} {
		add("clone", v)
		add("unshare", v)
	}
	for _, f := range []uint64{unix.CLONE_NEWNS, unix.CLONE_NEWCGROUP, unix.CLONE_NEWUTS, unix.CLONE_NEWIPC,
		unix.CLONE_NEWUSER, unix.CLONE_NEWPID, unix.CLONE_NEWNET, unix.CLONE_NEWTIME} {
		for _, v := range []uint64{f, f | sigchld, f | thread, f | 1<<32} {
			add("clone", v)
			add("unshare", v)
		}
	}
	add("unshare", unix.CLONE_FILES)
	add("unshare", unix.CLONE_FS)

	for _, req := range []uint64{unix.TCGETS, unix.TCSETS, unix.TIOCGWINSZ, unix.TIOCINQ, unix.TIOCSCTTY,
		unix.TIOCSTI, unix.TIOCLINUX, 1<<32 | unix.TIOCSTI, 0xffffffff<<32 | unix.TIOCLINUX,
		0x10000 | unix.TIOCSTI, 0x80045412, 1 << 32} {
		add("ioctl", 0, req)
		add("ioctl", ^uint64(0), req)
	}

	pers := []uint64{0, 8, 6, 0xff, 0xffffffff, 1<<32 | 0xffffffff, ^uint64(0), 0x80000000, 0x80040000,
		0xfffffffe, 0x7fffffff, 0x7fffff00, 1<<32 | 0x40000, 1 << 32, 0x0008 | 0x8000000}
	for b := 8; b < 32; b++ {
		pers = append(pers, 1<<b, 1<<b|8, 1<<b|1<<31, 0xffffffff&^(1<<b))
	}
	for b := 0; b < 8; b++ {
		pers = append(pers, 0xffffffff&^(1<<b), 1<<31|1<<b)
	}
	for _, v := range pers {
		add("personality", v)
	}

	for f := uint64(0); f <= afMax+4; f++ {
		add("socket", f, unix.SOCK_STREAM)
	}
	for _, f := range []uint64{1<<32 | 1, 1<<32 | 2, 0xffffffff, ^uint64(0), 1 << 63} {
		add("socket", f)
	}
	for _, call := range []uint64{1, 2, 3, 8, 17} { // SYS_SOCKET, BIND, CONNECT, SOCKETPAIR, SENDMSG
		add("socketcall", call)
	}

	// File modes: set-id bits alone, with others, above umode_t's 16 bits.
	modes := []uint64{0, 0o644, 0o755, 0o4755, 0o2755, 0o6755, 0o1777, 0o7777, 0o4000, 0o2000,
		unix.S_IFREG | 0o4755, unix.S_IFIFO | 0o2644, unix.S_IFDIR | 0o2775, 1<<32 | 0o4755, 1<<32 | 0o755,
		0x10000 | 0o755, 0xffffffff &^ 0o6000, ^uint64(0)}
	openFlags := []uint64{unix.O_RDONLY, unix.O_WRONLY, unix.O_CREAT, unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC,
		unix.O_CREAT | unix.O_EXCL | unix.O_CLOEXEC, unix.O_TMPFILE | unix.O_RDWR, unix.O_DIRECTORY,
		unix.O_TMPFILE &^ unix.O_DIRECTORY, 1<<32 | unix.O_CREAT, 1 << 32, ^uint64(0) &^ (unix.O_CREAT | unix.O_TMPFILE)}
	for _, m := range modes {
		add("chmod", 0, m)
		add("fchmod", 3, m)
		add("mknod", 0, m, 0)
		add("creat", 0, m)
		add("fchmodat", 0, 0, m)
		add("fchmodat2", 0, 0, m, unix.AT_SYMLINK_NOFOLLOW)
		add("mknodat", 0, 0, m, 0)
		add("mkdir", 0, m)
		add("mkdirat", 0, 0, m)
		for _, f := range openFlags {
			add("open", 0, f, m)
			add("openat", 0, 0, f, m)
			add("openat2", 0, 0, f, m) // openat2's how is a pointer: any value
		}
	}

	rng := rand.New(rand.NewPCG(2, 7))
	for range 2000 {
		v := rng.Uint64()
		switch rng.IntN(4) {
		case 1:
			v &= 0xffffffff
		case 2:
			v &= 0xff
		case 3:
			v |= 0xffffff00
		}
		add("personality", v)
		add("clone", v&^uint64(rng.Uint32()))
		add("unshare", v&^uint64(rng.Uint32()))
		add("ioctl", 3, v&^0xffff|uint64(unix.TIOCSTI+rng.IntN(16)))
		add("socket", v&0x3f)
		add("chmod", 0, v)
		add("fchmodat", 3, 0, v&^uint64(rng.Uint32()))
		add("open", 0, v&^uint64(rng.Uint32()), v)
		add("openat", 3, 0, v, v&^uint64(rng.Uint32()))
	}
	return cs
}

// evalRules applies the config's rules to one call the way libseccomp does:
// a rule matches when all its conditions hold. It fails the test when two
// matching rules disagree, or when a rule has two conditions on one
// argument (libcontainer would split them into separate, ORed rules).
func evalRules(t *testing.T, cfg *configs.Seccomp, c seccompCase) unix.Errno {
	t.Helper()
	verdict, matched := unix.Errno(0), false
	for _, r := range cfg.Syscalls {
		if r.Name != c.name {
			continue
		}
		ok := true
		seen := map[uint]bool{}
		for _, a := range r.Args {
			if seen[a.Index] {
				t.Fatalf("rule %s has two conditions on arg %d", r.Name, a.Index)
			}
			seen[a.Index] = true
			ok = ok && argHolds(t, a, c.args[a.Index])
		}
		if !ok {
			continue
		}
		if r.Action != configs.Errno || r.ErrnoRet == nil {
			t.Fatalf("rule %s: action %v, want Errno with an errno", r.Name, r.Action)
		}
		e := unix.Errno(*r.ErrnoRet)
		if matched && e != verdict {
			t.Fatalf("%v: rules disagree: %v and %v", c, verdict, e)
		}
		verdict, matched = e, true
	}
	return verdict
}

func argHolds(t *testing.T, a *configs.Arg, v uint64) bool {
	switch a.Op {
	case configs.EqualTo:
		return v == a.Value
	case configs.NotEqualTo:
		return v != a.Value
	case configs.GreaterThan:
		return v > a.Value
	case configs.MaskEqualTo:
		return v&a.Value == a.ValueTwo
	}
	t.Fatalf("operator %v not handled by the test", a.Op)
	return false
}

func TestSeccompRulesMatchPolicy(t *testing.T) {
	cfg := Seccomp()
	if cfg.DefaultAction != configs.Allow {
		t.Fatalf("default action %v, want Allow", cfg.DefaultAction)
	}
	for _, c := range seccompCases() {
		if got, want := evalRules(t, cfg, c), seccompOracle(c.name, c.args, nil); got != want {
			t.Errorf("%v: rules give %v, policy says %v", c, errnoName(got), errnoName(want))
		}
	}
}

func TestSeccompIssueList(t *testing.T) {
	cfg := Seccomp()
	for _, n := range issueDenied {
		for _, args := range [][6]uint64{{}, {^uint64(0), ^uint64(0)}} {
			if got := evalRules(t, cfg, seccompCase{name: n, args: args}); got != unix.EPERM {
				t.Errorf("%s%v: %v, want EPERM", n, args, errnoName(got))
			}
		}
	}
}

func TestSeccompWithSocketFamilies(t *testing.T) {
	fams := []int{unix.AF_INET, unix.AF_INET6, unix.AF_INET} // duplicates are fine
	cfg, err := SeccompWith(SeccompOptions{SocketFamilies: fams})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range seccompCases() {
		if got, want := evalRules(t, cfg, c), seccompOracle(c.name, c.args, fams); got != want {
			t.Errorf("%v: rules give %v, policy says %v", c, errnoName(got), errnoName(want))
		}
	}
	for _, bad := range []int{0, -1, afMax, 1000} {
		if _, err := SeccompWith(SeccompOptions{SocketFamilies: []int{bad}}); err == nil {
			t.Errorf("family %d: no error", bad)
		}
	}
}

// TestSeccompAllowNewUser: the shim's filter of a rootless sandbox lets
// clone create a user namespace and nothing else the default filter
// refuses; unshare(CLONE_NEWUSER) and every other namespace flag stay
// refused.
func TestSeccompAllowNewUser(t *testing.T) {
	cfg, err := SeccompWith(SeccompOptions{AllowNewUser: true})
	if err != nil {
		t.Fatal(err)
	}
	def := Seccomp()
	for _, c := range seccompCases() {
		got, want := evalRules(t, cfg, c), evalRules(t, def, c)
		onlyNewUser := c.name == "clone" && c.args[0]&unix.CLONE_NEWUSER != 0 &&
			c.args[0]&uint64(unix.CLONE_NEWNS|unix.CLONE_NEWCGROUP|unix.CLONE_NEWUTS|unix.CLONE_NEWIPC|unix.CLONE_NEWPID|unix.CLONE_NEWNET) == 0
		if onlyNewUser {
			want = 0
		}
		if got != want {
			t.Errorf("%v: rules give %v, want %v", c, errnoName(got), errnoName(want))
		}
	}
	// The cases do hold a clone with CLONE_NEWUSER alone, refused by
	// the default filter (so the comparison above can fail).
	c := seccompCase{name: "clone", args: [6]uint64{unix.CLONE_NEWUSER | 0x11}}
	if got := evalRules(t, def, c); got != unix.EPERM {
		t.Errorf("default filter: %v gives %v, want EPERM", c, errnoName(got))
	}
	if got := evalRules(t, cfg, c); got != 0 {
		t.Errorf("AllowNewUser: %v gives %v, want allowed", c, errnoName(got))
	}
}

func TestSeccompArchitectures(t *testing.T) {
	for goarch, want := range map[string][]string{
		"amd64": {"amd64", "x86", "x32"},
		"arm64": {"arm64", "arm"},
		"ppc64": nil,
	} {
		if got := seccompArchitectures(goarch); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", goarch, got, want)
		}
	}
}

// TestSeccompGolden keeps the rule list reviewable: any change to the
// filter shows up as a diff of testdata/seccomp_default.golden
// (go test -tags seccomp -run SeccompGolden -update-seccomp ./sandbox/).
func TestSeccompGolden(t *testing.T) {
	got := formatSeccomp(Seccomp())
	path := filepath.Join("testdata", "seccomp_default.golden")
	if *updateSeccompGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update-seccomp to create it)", err)
	}
	if got != string(want) {
		t.Errorf("filter differs from %s (rerun with -update-seccomp and review the diff):\n%s", path, got)
	}
}

// formatSeccomp renders a filter one rule a line.
func formatSeccomp(cfg *configs.Seccomp) string {
	var b strings.Builder
	fmt.Fprintf(&b, "default %s\narchitectures %s\n", actionName(cfg.DefaultAction, cfg.DefaultErrnoRet),
		strings.Join(cfg.Architectures, " "))
	for _, r := range cfg.Syscalls {
		fmt.Fprintf(&b, "%s %s", r.Name, actionName(r.Action, r.ErrnoRet))
		for _, a := range r.Args {
			switch a.Op {
			case configs.EqualTo:
				fmt.Fprintf(&b, " arg%d==%#x", a.Index, a.Value)
			case configs.NotEqualTo:
				fmt.Fprintf(&b, " arg%d!=%#x", a.Index, a.Value)
			case configs.GreaterThan:
				fmt.Fprintf(&b, " arg%d>%#x", a.Index, a.Value)
			case configs.MaskEqualTo:
				fmt.Fprintf(&b, " arg%d&%#x==%#x", a.Index, a.Value, a.ValueTwo)
			default:
				fmt.Fprintf(&b, " arg%d op%d %#x %#x", a.Index, a.Op, a.Value, a.ValueTwo)
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func actionName(a configs.Action, errno *uint) string {
	switch {
	case a == configs.Allow:
		return "allow"
	case a == configs.Errno && errno != nil:
		return "errno " + errnoName(unix.Errno(*errno))
	}
	return fmt.Sprintf("action%d", a)
}

func errnoName(e unix.Errno) string {
	if e == 0 {
		return "allow"
	}
	if n := unix.ErrnoName(e); n != "" {
		return n
	}
	return fmt.Sprintf("errno%d", int(e))
}
