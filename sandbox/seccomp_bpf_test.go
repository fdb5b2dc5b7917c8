//go:build linux && seccomp

package sandbox

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runc/libcontainer/seccomp"
	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/sbxtest"
)

// These tests check the filter as the kernel gets it:
//   - compileSeccomp builds the cBPF from the config the way libcontainer's
//     seccomp.InitSeccomp does, and TestSeccompCompileMatchesLibcontainer
//     proves it byte for byte against the program libcontainer really loaded
//     (read back from the kernel with PTRACE_SECCOMP_GET_FILTER);
//   - TestSeccompBPF runs that program in golang.org/x/net/bpf's VM on
//     synthetic struct seccomp_data for the amd64, x32 and i386 ABIs;
//   - TestSeccompKernel runs testdata/trysyscall (amd64 and i386 builds)
//     without the filter and under the filter loaded by libcontainer, and
//     compares both with testdata/trysyscall/expect.txt;
//   - TestSeccompKernelGo runs a Go program under the filter (threads,
//     os/exec, clone3), like sbx's in-sandbox shim.

// Child modes of the test binary, chosen by seccompChildEnv (see init).
const (
	seccompChildEnv = "SBX_SECCOMP_TEST_CHILD"
	seccompNextEnv  = "SBX_SECCOMP_TEST_NEXT"
)

func init() {
	switch os.Getenv(seccompChildEnv) {
	case "":
		return
	case "exec":
		seccompChildExec()
	case "dump":
		seccompChildDump()
	case "go":
		seccompChildGo()
	}
	seccompChildDie(fmt.Errorf("unknown %s=%q", seccompChildEnv, os.Getenv(seccompChildEnv)))
}

func seccompChildDie(err error) {
	fmt.Fprintln(os.Stderr, "seccomp test child:", err)
	os.Exit(125)
}

// loadSeccompChild loads the default filter into this thread with
// libcontainer's own loader, as the sandbox's init does. It runs during
// package init, so on the main thread, which then execs or is traced.
func loadSeccompChild() {
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		seccompChildDie(fmt.Errorf("set no_new_privs: %w", err))
	}
	if _, err := seccomp.InitSeccomp(Seccomp()); err != nil {
		seccompChildDie(fmt.Errorf("load seccomp filter: %w", err))
	}
}

// seccompChildExec loads the filter and execs os.Args[1:], passing
// seccompNextEnv on as the next child mode.
func seccompChildExec() {
	loadSeccompChild()
	next := os.Getenv(seccompNextEnv)
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, seccompChildEnv+"=") || strings.HasPrefix(kv, seccompNextEnv+"=")
	})
	if next != "" {
		env = append(env, seccompChildEnv+"="+next)
	}
	seccompChildDie(unix.Exec(os.Args[1], os.Args[1:], env))
}

// seccompChildDump loads the filter, says so, and waits for stdin to close
// while the parent reads the filter back from the kernel.
func seccompChildDump() {
	loadSeccompChild()
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// seccompChildGo does what a Go program (sbx's shim) does at run time and
// reports it: start OS threads, fork and exec os.Args[1], try clone3.
func seccompChildGo() {
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			runtime.LockOSThread() // never unlocked: the thread exits, the next needs clone(2)
			time.Sleep(10 * time.Millisecond)
		})
	}
	wg.Wait()
	fmt.Println("go-threads OK")
	if err := exec.Command(os.Args[1]).Run(); err != nil {
		fmt.Println("go-exec", err)
	} else {
		fmt.Println("go-exec OK")
	}
	_, _, e := unix.RawSyscall(unix.SYS_CLONE3, 0, 0, 0)
	fmt.Println("go-clone3", errnoName(e))
	os.Exit(0)
}

// compileSeccomp builds the cBPF program from cfg with the same libseccomp
// calls, in the same order, as libcontainer's seccomp.InitSeccomp (runc
// v1.5.3) before it loads the filter; with an Allow default, libcontainer's
// patchbpf adds no -ENOSYS stub. Unlike libcontainer it fails on a syscall
// name libseccomp does not know instead of dropping the rule.
func compileSeccomp(cfg *configs.Seccomp) ([]bpf.RawInstruction, error) {
	if cfg.DefaultAction != configs.Allow || len(cfg.Flags) != 0 || cfg.ListenerPath != "" {
		return nil, errors.New("compileSeccomp handles only an Allow default without flags or listener")
	}
	f, err := libseccomp.NewFilter(libseccomp.ActAllow)
	if err != nil {
		return nil, err
	}
	defer f.Release()
	for _, a := range cfg.Architectures {
		arch, err := libseccomp.GetArchFromString(a)
		if err != nil {
			return nil, err
		}
		if err := f.AddArch(arch); err != nil {
			return nil, fmt.Errorf("add arch %s: %w", a, err)
		}
	}
	if len(cfg.Syscalls) > 32 {
		if err := f.SetOptimize(2); err != nil {
			return nil, err
		}
	}
	if err := f.SetNoNewPrivsBit(false); err != nil {
		return nil, err
	}
	ops := map[configs.Operator]libseccomp.ScmpCompareOp{
		configs.EqualTo: libseccomp.CompareEqual, configs.NotEqualTo: libseccomp.CompareNotEqual,
		configs.GreaterThan: libseccomp.CompareGreater, configs.GreaterThanOrEqualTo: libseccomp.CompareGreaterEqual,
		configs.LessThan: libseccomp.CompareLess, configs.LessThanOrEqualTo: libseccomp.CompareLessOrEqual,
		configs.MaskEqualTo: libseccomp.CompareMaskedEqual,
	}
	for _, r := range cfg.Syscalls {
		if r.Action != configs.Errno || r.ErrnoRet == nil {
			return nil, fmt.Errorf("%s: only Errno rules are handled", r.Name)
		}
		act := libseccomp.ActErrno.SetReturnCode(int16(*r.ErrnoRet))
		nr, err := libseccomp.GetSyscallFromName(r.Name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w (libcontainer would drop this rule silently)", r.Name, err)
		}
		if len(r.Args) == 0 {
			if err := f.AddRule(nr, act); err != nil {
				return nil, fmt.Errorf("%s: %w", r.Name, err)
			}
			continue
		}
		var conds []libseccomp.ScmpCondition
		seen := map[uint]bool{}
		for _, a := range r.Args {
			if seen[a.Index] {
				return nil, fmt.Errorf("%s: two conditions on arg %d (libcontainer splits them)", r.Name, a.Index)
			}
			seen[a.Index] = true
			c, err := libseccomp.MakeCondition(a.Index, ops[a.Op], a.Value, a.ValueTwo)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", r.Name, err)
			}
			conds = append(conds, c)
		}
		if err := f.AddRuleConditional(nr, act, conds); err != nil {
			return nil, fmt.Errorf("%s: %w", r.Name, err)
		}
	}
	tmp, err := os.CreateTemp("", "sbx-seccomp-*.bpf")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if err := f.ExportBPF(tmp); err != nil {
		return nil, fmt.Errorf("export bpf: %w", err)
	}
	raw, err := os.ReadFile(tmp.Name())
	if err != nil {
		return nil, err
	}
	return parseSockFilters(raw)
}

// parseSockFilters decodes an array of struct sock_filter in host (little
// endian) order.
func parseSockFilters(raw []byte) ([]bpf.RawInstruction, error) {
	if len(raw) == 0 || len(raw)%8 != 0 {
		return nil, fmt.Errorf("bpf program of %d bytes", len(raw))
	}
	prog := make([]bpf.RawInstruction, len(raw)/8)
	for i := range prog {
		b := raw[8*i:]
		prog[i] = bpf.RawInstruction{
			Op: binary.LittleEndian.Uint16(b), Jt: b[2], Jf: b[3], K: binary.LittleEndian.Uint32(b[4:]),
		}
	}
	return prog, nil
}

func mustCompileSeccomp(t *testing.T, cfg *configs.Seccomp) []bpf.RawInstruction {
	t.Helper()
	prog, err := compileSeccomp(cfg)
	if err != nil {
		t.Fatalf("compile seccomp filter: %v", err)
	}
	return prog
}

// kernelSeccompFilter returns the program libcontainer loaded in a child,
// read back from the kernel (needs CAP_SYS_ADMIN).
func kernelSeccompFilter(t *testing.T) []bpf.RawInstruction {
	t.Helper()
	runtime.LockOSThread() // every ptrace request must come from the tracer thread
	defer runtime.UnlockOSThread()

	cmd := exec.Command(testBinary(t))
	cmd.Env = append(os.Environ(), seccompChildEnv+"=dump")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("dump child: %v: %s", err, stderr.String())
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if line != "ready\n" {
		t.Fatalf("dump child: %q, %v: %s", line, err, stderr.String())
	}

	pid := cmd.Process.Pid // the main thread, which loaded the filter
	if err := unix.PtraceSeize(pid); err != nil {
		t.Fatalf("ptrace seize: %v", err)
	}
	defer unix.PtraceDetach(pid)
	if err := unix.PtraceInterrupt(pid); err != nil {
		t.Fatalf("ptrace interrupt: %v", err)
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, unix.WALL, nil); err != nil || !ws.Stopped() {
		t.Fatalf("wait for ptrace stop: %v (status %v)", err, ws)
	}
	getFilter := func(buf []unix.SockFilter) (int, error) {
		var p uintptr
		if len(buf) > 0 {
			p = uintptr(unsafe.Pointer(&buf[0]))
		}
		n, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SECCOMP_GET_FILTER, uintptr(pid), 0, p, 0, 0)
		if e != 0 {
			return 0, e
		}
		return int(n), nil
	}
	n, err := getFilter(nil)
	if errors.Is(err, unix.EINVAL) {
		t.Skip("kernel cannot read back seccomp filters (CONFIG_CHECKPOINT_RESTORE off)")
	}
	if err != nil {
		t.Fatalf("PTRACE_SECCOMP_GET_FILTER: %v", err)
	}
	buf := make([]unix.SockFilter, n)
	if _, err := getFilter(buf); err != nil {
		t.Fatalf("PTRACE_SECCOMP_GET_FILTER: %v", err)
	}
	prog := make([]bpf.RawInstruction, n)
	for i, f := range buf {
		prog[i] = bpf.RawInstruction{Op: f.Code, Jt: f.Jt, Jf: f.Jf, K: f.K}
	}
	return prog
}

func testBinary(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func needRoot(t *testing.T, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		sbxtest.Skip(t, sbxtest.Root, fmt.Sprintf("needs root: %s", why))
	}
}

func TestSeccompCompileMatchesLibcontainer(t *testing.T) {
	needRoot(t, "PTRACE_SECCOMP_GET_FILTER needs CAP_SYS_ADMIN")
	want := mustCompileSeccomp(t, Seccomp())
	got := kernelSeccompFilter(t)
	if !slices.Equal(got, want) {
		t.Fatalf("libcontainer loaded %d instructions, compileSeccomp built %d, or they differ", len(got), len(want))
	}
	t.Logf("filter: %d instructions (limit 4096)", len(got))
}

// TestSeccompNamesResolve: libcontainer drops rules whose name libseccomp
// cannot resolve, without an error. Each name must resolve natively and
// exist on at least one of the filter's ABIs.
func TestSeccompNamesResolve(t *testing.T) {
	cfg := Seccomp()
	for _, r := range cfg.Syscalls {
		if _, err := libseccomp.GetSyscallFromName(r.Name); err != nil {
			t.Errorf("%s: %v", r.Name, err)
		}
		exists := false
		for _, a := range cfg.Architectures {
			arch, err := libseccomp.GetArchFromString(a)
			if err != nil {
				t.Fatal(err)
			}
			if nr, err := libseccomp.GetSyscallFromNameByArch(r.Name, arch); err == nil && nr >= 0 {
				exists = true
			}
		}
		if !exists {
			t.Errorf("%s exists on none of %v", r.Name, cfg.Architectures)
		}
	}
	// Numbers from the kernel's tables, independent of libseccomp.
	for _, c := range []struct {
		name string
		arch libseccomp.ScmpArch
		nr   int
	}{
		{"mount", libseccomp.ArchAMD64, unix.SYS_MOUNT}, {"clone3", libseccomp.ArchAMD64, unix.SYS_CLONE3},
		{"ioctl", libseccomp.ArchAMD64, unix.SYS_IOCTL}, {"personality", libseccomp.ArchAMD64, unix.SYS_PERSONALITY},
		{"mount", libseccomp.ArchX32, x32Bit | unix.SYS_MOUNT}, {"ioctl", libseccomp.ArchX32, x32Bit | 514},
		{"mount", libseccomp.ArchX86, 21}, {"ioctl", libseccomp.ArchX86, 54}, {"clone", libseccomp.ArchX86, 120},
		{"personality", libseccomp.ArchX86, 136}, {"socketcall", libseccomp.ArchX86, 102},
		{"clone3", libseccomp.ArchX86, 435}, {"unshare", libseccomp.ArchX86, 310},
	} {
		if nr, err := libseccomp.GetSyscallFromNameByArch(c.name, c.arch); err != nil || int(nr) != c.nr {
			t.Errorf("%s on %v: %d, %v; want %d", c.name, c.arch, nr, err, c.nr)
		}
	}
}

// The ABIs the filter is run for in user space. x32 shares amd64's
// AUDIT_ARCH and sets bit 30 of the syscall number.
const (
	auditArchX86_64  = 0xc000003e
	auditArchI386    = 0x40000003
	auditArchAArch64 = 0xc00000b7
	x32Bit           = 0x40000000
	i386SocketNr     = 359 // direct socket(2) on i386, which libseccomp names by a pseudo number
)

// wideArgs: the task passes 64-bit arguments (i386 passes 32 bits,
// zero-extended). wideRules: the filter compares all 64 bits. libseccomp
// treats x32 as a 32-bit ABI and compares only the low 32 bits there, which
// is all the kernel uses of each argument the rules look at (int family,
// unsigned int request and persona, clone's lower_32_bits(flags); unshare
// fails with EINVAL on higher bits), so for x32 the policy is applied to
// the truncated arguments while the filter sees the full ones.
var seccompABIs = []struct {
	name                string
	arch                libseccomp.ScmpArch
	audit               uint32
	wideArgs, wideRules bool
}{
	{"amd64", libseccomp.ArchAMD64, auditArchX86_64, true, true},
	{"x32", libseccomp.ArchX32, auditArchX86_64, true, false},
	{"i386", libseccomp.ArchX86, auditArchI386, false, false},
}

// seccompData encodes a struct seccomp_data for x/net/bpf's VM. The kernel
// lays the fields out little endian and the filter loads 32-bit words;
// the VM loads words big endian, so each word is stored big endian at the
// offset the kernel's little-endian layout gives it (an argument's low
// half at +0, its high half at +4).
func seccompData(nr int, arch uint32, args [6]uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[0:], uint32(nr))
	binary.BigEndian.PutUint32(b[4:], arch)
	for i, a := range args {
		binary.BigEndian.PutUint32(b[16+8*i:], uint32(a))
		binary.BigEndian.PutUint32(b[20+8*i:], uint32(a>>32))
	}
	return b
}

const (
	seccompRetAllow  = 0x7fff0000
	seccompRetErrno  = 0x00050000
	seccompRetAction = 0xffff0000
)

func newSeccompVM(t *testing.T, prog []bpf.RawInstruction) *bpf.VM {
	t.Helper()
	insns, ok := bpf.Disassemble(prog)
	if !ok {
		t.Fatal("filter has instructions x/net/bpf cannot decode")
	}
	vm, err := bpf.NewVM(insns)
	if err != nil {
		t.Fatalf("bpf vm: %v", err)
	}
	return vm
}

func runSeccompVM(t *testing.T, vm *bpf.VM, nr int, arch uint32, args [6]uint64) uint32 {
	t.Helper()
	ret, err := vm.Run(seccompData(nr, arch, args))
	if err != nil {
		t.Fatalf("bpf vm: %v", err)
	}
	return uint32(ret)
}

// checkSeccompBPF runs every case of seccompCases on every ABI through the
// compiled cfg and compares with the policy.
func checkSeccompBPF(t *testing.T, cfg *configs.Seccomp, families []int) {
	vm := newSeccompVM(t, mustCompileSeccomp(t, cfg))
	for _, abi := range seccompABIs {
		ran := 0
		for _, c := range seccompCases() {
			nr, err := libseccomp.GetSyscallFromNameByArch(c.name, abi.arch)
			if abi.arch == libseccomp.ArchX86 && c.name == "socket" {
				nr, err = i386SocketNr, nil
			}
			if err != nil || nr < 0 {
				continue // no such syscall on this ABI
			}
			args, low := c.args, c.args
			for i := range low {
				low[i] = uint64(uint32(low[i]))
			}
			if !abi.wideArgs {
				args = low
			}
			policyArgs := args
			if !abi.wideRules {
				policyArgs = low
			}
			want := uint32(seccompRetAllow)
			if e := seccompOracle(c.name, policyArgs, families); e != 0 {
				want = seccompRetErrno | uint32(e)
			}
			if got := runSeccompVM(t, vm, int(nr), abi.audit, args); got != want {
				t.Errorf("%s %s(nr %d, %#x, %#x): filter returns %#x, want %#x",
					abi.name, c.name, nr, args[0], args[1], got, want)
			}
			ran++
		}
		t.Logf("%s: %d calls", abi.name, ran)
	}
}

func TestSeccompBPF(t *testing.T) {
	checkSeccompBPF(t, Seccomp(), nil)
}

func TestSeccompBPFSocketFamilies(t *testing.T) {
	fams := []int{unix.AF_INET, unix.AF_INET6}
	cfg, err := SeccompWith(SeccompOptions{SocketFamilies: fams})
	if err != nil {
		t.Fatal(err)
	}
	checkSeccompBPF(t, cfg, fams)
}

// TestSeccompBPFOtherArch: a syscall from an ABI the filter does not list
// is killed, not allowed.
func TestSeccompBPFOtherArch(t *testing.T) {
	vm := newSeccompVM(t, mustCompileSeccomp(t, Seccomp()))
	for _, nr := range []int{0, 63, 435} {
		got := runSeccompVM(t, vm, nr, auditArchAArch64, [6]uint64{})
		if act := got & seccompRetAction; act != 0 && act != 0x80000000 { // KILL_THREAD, KILL_PROCESS
			t.Errorf("aarch64 nr %d: %#x, want a kill action", nr, got)
		}
	}
}

// A probe of testdata/trysyscall/expect.txt.
type trysyscallProbe struct {
	name, want string
	abis       []string // "amd64", "i386"
}

func readTrysyscallExpect(t *testing.T) []trysyscallProbe {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "trysyscall", "expect.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var ps []trysyscallProbe
	for i, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) < 3 {
			t.Fatalf("expect.txt:%d: %q: want NAME RESULT ABI...", i+1, line)
		}
		ps = append(ps, trysyscallProbe{name: f[0], want: f[1], abis: f[2:]})
	}
	return ps
}

// TestSeccompProbesCoverFilter ties expect.txt to the filter: a probe for
// every rule, the listed ABIs where the call exists, and the expected
// result of every unconditional probe taken from the policy.
func TestSeccompProbesCoverFilter(t *testing.T) {
	probes := readTrysyscallExpect(t)
	byName := map[string]trysyscallProbe{}
	for _, p := range probes {
		byName[p.name] = p
	}
	for _, r := range Seccomp().Syscalls {
		if !slices.ContainsFunc(probes, func(p trysyscallProbe) bool {
			return p.name == r.Name || strings.HasPrefix(p.name, r.Name+"-")
		}) {
			t.Errorf("no trysyscall probe for %s", r.Name)
		}
	}
	abiArch := map[string]libseccomp.ScmpArch{"amd64": libseccomp.ArchAMD64, "i386": libseccomp.ArchX86}
	for _, p := range probes {
		if strings.Contains(p.name, "-") || p.want == "OK" {
			continue // argument variants and controls
		}
		var exists []string
		for _, abi := range []string{"amd64", "i386"} {
			if nr, err := libseccomp.GetSyscallFromNameByArch(p.name, abiArch[abi]); err == nil && nr >= 0 {
				exists = append(exists, abi)
			}
		}
		if !slices.Equal(exists, p.abis) {
			t.Errorf("%s: expect.txt lists ABIs %v, libseccomp knows it on %v", p.name, p.abis, exists)
		}
		if want := errnoName(seccompOracle(p.name, [6]uint64{}, nil)); want != p.want {
			t.Errorf("%s: expect.txt says %s, the policy %s", p.name, p.want, want)
		}
	}
}

// buildTrysyscall compiles testdata/trysyscall for the amd64 or i386 ABI.
func buildTrysyscall(t *testing.T, abi string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "trysyscall-"+abi)
	args := []string{"-static", "-O2", "-Wall", "-Wextra", "-Werror", "-o", out,
		filepath.Join("..", "testdata", "trysyscall", "trysyscall.c")}
	if abi == "i386" {
		args = append([]string{"-m32"}, args...)
	}
	if msg, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		hint := ""
		if abi == "i386" {
			hint = " (install gcc-multilib)"
		}
		t.Fatalf("gcc %s: %v%s\n%s", strings.Join(args, " "), err, hint, msg)
	}
	return out
}

// runTrysyscall runs bin with names, under the filter when filtered, and
// returns NAME -> RESULT.
func runTrysyscall(t *testing.T, bin string, filtered bool, names []string) map[string]string {
	t.Helper()
	var cmd *exec.Cmd
	if filtered {
		cmd = exec.Command(testBinary(t), append([]string{bin}, names...)...)
		cmd.Env = append(os.Environ(), seccompChildEnv+"=exec")
	} else {
		cmd = exec.Command(bin, names...)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v (filtered %v): %v\n%s", bin, filtered, err, stderr.String())
	}
	res := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		name, result, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("trysyscall line %q", line)
		}
		res[name] = result
	}
	return res
}

// TestSeccompKernel proves each entry on the real kernel: under the filter
// that libcontainer loads, each probe gives the result of expect.txt, and
// without the filter each denied probe gives a different one (so it is the
// filter that refuses), each control OK.
func TestSeccompKernel(t *testing.T) {
	needRoot(t, "the unfiltered controls (mount, clone(CLONE_NEWNS), TIOCSTI, ...) must be able to succeed")
	probes := readTrysyscallExpect(t)
	var names []string
	for _, p := range probes {
		names = append(names, p.name)
	}
	for _, abi := range []string{"amd64", "i386"} {
		t.Run(abi, func(t *testing.T) {
			bin := buildTrysyscall(t, abi)
			list, err := exec.Command(bin, "--list").Output()
			if abi == "i386" && errors.Is(err, unix.ENOEXEC) {
				t.Skip("kernel cannot run i386 programs (IA32 emulation off)")
			}
			if err != nil {
				t.Fatalf("%s --list: %v", bin, err)
			}
			if got := strings.Fields(string(list)); !slices.Equal(slices.Sorted(slices.Values(got)),
				slices.Sorted(slices.Values(names))) {
				t.Fatalf("trysyscall --list and expect.txt differ:\n%v\n%v", got, names)
			}
			outside := runTrysyscall(t, bin, false, names)
			inside := runTrysyscall(t, bin, true, names)
			for _, p := range probes {
				in, out := inside[p.name], outside[p.name]
				if !slices.Contains(p.abis, abi) {
					if in != "NA" || out != "NA" {
						t.Errorf("%s: %s / %s, want NA on %s", p.name, in, out, abi)
					}
					continue
				}
				switch {
				case in != p.want:
					t.Errorf("%s under the filter: %s, want %s", p.name, in, p.want)
				case p.want == "OK" && out != "OK":
					t.Errorf("control %s without the filter: %s, want OK", p.name, out)
				case p.want != "OK" && (out == p.want || out == "NA" ||
					strings.HasPrefix(out, "SETUP") || strings.HasPrefix(out, "SIG")):
					t.Errorf("%s without the filter: %s; the probe does not show the filter at work", p.name, out)
				}
			}
			t.Logf("%s without the filter: %v", abi, outside)
		})
	}
}

// TestSeccompKernelGo runs a Go program under the filter: the runtime's
// threads and os/exec use clone(2) without namespace flags, and clone3 gets
// ENOSYS (Go uses clone3 only for SysProcAttr.UseCgroupFD or CLONE_NEWTIME,
// and does not fall back).
func TestSeccompKernelGo(t *testing.T) {
	run := func(filtered bool) string {
		exe := testBinary(t)
		cmd := exec.Command(exe, "/bin/true")
		cmd.Env = append(os.Environ(), seccompChildEnv+"=go")
		if filtered {
			cmd = exec.Command(exe, exe, "/bin/true")
			cmd.Env = append(os.Environ(), seccompChildEnv+"=exec", seccompNextEnv+"=go")
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go child (filtered %v): %v\n%s", filtered, err, out)
		}
		return string(out)
	}
	if got, want := run(true), "go-threads OK\ngo-exec OK\ngo-clone3 ENOSYS\n"; got != want {
		t.Errorf("under the filter:\n%s\nwant:\n%s", got, want)
	}
	if got, want := run(false), "go-threads OK\ngo-exec OK\ngo-clone3 EINVAL\n"; got != want {
		t.Errorf("without the filter:\n%s\nwant:\n%s", got, want)
	}
}

// TestSeccompBPFNetlinkRoute: with NetlinkRoute, socket(AF_NETLINK, *,
// NETLINK_ROUTE) passes and every other netlink protocol (or a protocol
// with upper bits set) is refused; without it, every netlink socket is.
func TestSeccompBPFNetlinkRoute(t *testing.T) {
	route, err := SeccompWith(SeccompOptions{SocketFamilies: []int{unix.AF_INET, unix.AF_INET6}, NetlinkRoute: true})
	if err != nil {
		t.Fatal(err)
	}
	withRoute := newSeccompVM(t, mustCompileSeccomp(t, route))
	without := newSeccompVM(t, mustCompileSeccomp(t, Seccomp()))
	deny := uint32(seccompRetErrno | uint32(unix.EPERM))
	for _, c := range []struct {
		name          string
		family, proto uint64
		want, wantOff uint32
	}{
		{"route", unix.AF_NETLINK, unix.NETLINK_ROUTE, seccompRetAllow, deny},
		{"audit", unix.AF_NETLINK, unix.NETLINK_AUDIT, deny, deny},
		{"uevent", unix.AF_NETLINK, unix.NETLINK_KOBJECT_UEVENT, deny, deny},
		{"sock_diag", unix.AF_NETLINK, unix.NETLINK_SOCK_DIAG, deny, deny},
		{"route, upper bits", unix.AF_NETLINK, 1 << 32, deny, deny},
		{"inet", unix.AF_INET, 0, seccompRetAllow, deny},
		{"packet", unix.AF_PACKET, 0, deny, deny},
	} {
		args := [6]uint64{c.family, unix.SOCK_RAW, c.proto}
		if got := runSeccompVM(t, withRoute, unix.SYS_SOCKET, auditArchX86_64, args); got != c.want {
			t.Errorf("%s with NetlinkRoute: %#x, want %#x", c.name, got, c.want)
		}
		if got := runSeccompVM(t, without, unix.SYS_SOCKET, auditArchX86_64, args); got != c.wantOff {
			t.Errorf("%s by default: %#x, want %#x", c.name, got, c.wantOff)
		}
	}
	if _, err := SeccompWith(SeccompOptions{SocketFamilies: []int{unix.AF_NETLINK}}); err == nil {
		t.Error("SocketFamilies AF_NETLINK: want an error (NetlinkRoute only)")
	}
}
