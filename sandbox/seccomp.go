//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"runtime"
	"slices"

	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/sbx-sandbox/sbx/policy"
	"golang.org/x/sys/unix"
)

// The seccomp filter is a deny list on top of an allow-by-default policy: the
// sandboxed program has no capabilities, so most of what the filter refuses the
// kernel would refuse too; the filter is the second wall, and the only one for
// the calls that need no capability at all (io_uring, userfaultfd, bpf,
// perf_event_open, keyctl, personality, unprivileged user namespaces, TIOCSTI
// on the program's own terminal, sockets of any family).
//
// How it reaches the kernel: libcontainer compiles the [configs.Seccomp] with
// libseccomp (binary build tag "seccomp") and loads it in the container's init
// right before exec. libcontainer silently drops a rule whose syscall name
// libseccomp does not know, so the tests check that every name resolves.
//
// Limits, by design:
//   - Arguments passed by pointer cannot be read by seccomp. clone3 keeps its
//     flags in a struct, so clone3 fails with ENOSYS, as on a kernel without
//     it: glibc (2.34+) then falls back to clone(2), whose flags are in a
//     register and are checked. Go uses clone(2) already; it uses clone3 only
//     for SysProcAttr.UseCgroupFD or CLONE_NEWTIME, which fail in the sandbox.
//   - On the i386 ABI, socket(2) may go through the socketcall(2) multiplexer,
//     whose arguments are behind a pointer; socketcall(SYS_SOCKET, ...) is
//     therefore refused for every family. Debian's i386 glibc creates sockets
//     that way, so 32-bit glibc programs cannot create sockets at all
//     (socketpair still works); the direct i386 socket syscall is filtered
//     by family like amd64's.
//   - On x32, libseccomp compares only the low 32 bits of an argument, which
//     is all the kernel uses of the arguments these rules look at.
//   - openat2(2) keeps its flags and mode in a struct open_how, so it fails
//     with ENOSYS like clone3, and callers fall back to openat(2), whose
//     flags and mode are in registers and are checked for set-id bits
//     (see setIDRules). glibc 2.36 has no call to it (no wrapper, no
//     syscall 437 in libc.so.6), nor has Go 1.26's standard library; runc's
//     filepath-securejoin (v0.7.0) probes it and uses openat after any
//     error. After loading the filter, libcontainer's init reopens its exec
//     FIFO through securejoin (by its code, every run then takes that
//     fallback; runs work); sbx's own shim and exec step do not call
//     openat2.
//   - open_tree_attr(2) (Linux 6.15) is newer than the libseccomp 2.5.4 this
//     is built with and cannot be named; like open_tree it needs
//     CAP_SYS_ADMIN to clone a mount tree, which the sandbox never has.
//   - adjtimex and clock_adjtime stay allowed: with modes == 0 they only read
//     the clock state (glibc's ntp_gettime), and changing it needs
//     CAP_SYS_TIME. sysfs(2), ustat(2) and the other obsolete calls are
//     refused: nothing current needs them.

// seccompErrno is the errno returned by a refused syscall.
const seccompErrno = unix.EPERM

// seccompDenied are the syscalls refused whatever their arguments: the one
// list of package policy, from which the tracer's table is derived too.
var seccompDenied = policy.SeccompDenied

// Namespace flags of clone(2) and unshare(2).
var (
	// cloneNamespaceFlags are refused in clone(2). CLONE_NEWTIME (0x80) is not
	// among them: in clone(2) the low byte is the exit signal.
	cloneNamespaceFlags = []uint64{
		unix.CLONE_NEWNS, unix.CLONE_NEWCGROUP, unix.CLONE_NEWUTS, unix.CLONE_NEWIPC,
		unix.CLONE_NEWUSER, unix.CLONE_NEWPID, unix.CLONE_NEWNET,
	}
	// unshareNamespaceFlags are refused in unshare(2).
	unshareNamespaceFlags = append(slices.Clone(cloneNamespaceFlags), unix.CLONE_NEWTIME)
)

// Terminal ioctls that push input into a terminal (TIOCSTI) or reach the
// virtual console's selection and paste (TIOCLINUX).
var deniedIoctls = []uint64{unix.TIOCSTI, unix.TIOCLINUX}

// The kernel reads an ioctl request as unsigned int, so only its low 32 bits
// are compared: 0x1_00005412 is TIOCSTI too.
const ioctlRequestMask = 0xffffffff

// personality(2): 0xffffffff only queries. Otherwise the low byte picks the
// execution domain (PER_LINUX, PER_LINUX32, ...), which is harmless, and bits
// 8-31 are flags (ADDR_NO_RANDOMIZE 0x40000, READ_IMPLIES_EXEC 0x400000,
// MMAP_PAGE_ZERO 0x100000, UNAME26 0x20000, ... of <linux/personality.h>),
// which are all refused, including those no kernel defines yet.
const personalityTopBit = 1 << 31

// AF_UNIX is the one socket family the default filter allows.
const afUnix = unix.AF_UNIX

// afMax bounds the families an option may name (AF_MAX of the kernel headers
// this was written against is 46).
const afMax = 46

// SeccompOptions selects the optional parts of the filter. The zero value is
// the default filter of [Seccomp].
type SeccompOptions struct {
	// SocketFamilies lists the address families socket(2) may create in
	// addition to AF_UNIX (for example unix.AF_INET when a later network
	// policy allows egress). Every other family fails with EPERM.
	SocketFamilies []int
	// AllowNewUser lets clone(2) create a user namespace (CLONE_NEWUSER
	// alone among the namespace flags). Only the filter of a rootless
	// sandbox's shim has it, which starts the program in a user namespace
	// of its own; the program gets the default filter stacked on top.
	AllowNewUser bool
	// NetlinkRoute lets socket(2) create AF_NETLINK sockets of protocol
	// NETLINK_ROUTE (and no other netlink protocol): reading the
	// namespace's links, addresses and routes. Changing them needs
	// CAP_NET_ADMIN, which the program never has.
	NetlinkRoute bool
}

// Seccomp returns sbx's default seccomp filter: every syscall is allowed
// except the deny list, which fails with EPERM: mounts and root changes,
// ptrace and process_vm_*, bpf, perf_event_open, keyrings, kexec and modules,
// file handles, io_uring, userfaultfd, setns, swap, reboot, clock setting,
// port I/O and obsolete calls; clone and unshare with a namespace flag;
// ioctl TIOCSTI and TIOCLINUX; personality with a flag bit; socket of any
// family but AF_UNIX; a file mode with the setuid or setgid bit in chmod,
// fchmod, fchmodat, fchmodat2, mknod, mknodat, creat, and open or openat
// that create. clone3 and openat2 fail with ENOSYS so that libc falls back
// to clone(2) and openat(2), whose arguments the filter can see. On amd64 the filter also covers
// the i386 and x32 ABIs; any other ABI is killed.
func Seccomp() *configs.Seccomp {
	s, err := SeccompWith(SeccompOptions{})
	if err != nil {
		panic("sandbox: default seccomp filter: " + err.Error()) // cannot happen: no options
	}
	return s
}

// SeccompWith returns the filter of [Seccomp] changed by opts.
func SeccompWith(opts SeccompOptions) (*configs.Seccomp, error) {
	allowed := []int{afUnix}
	for _, f := range opts.SocketFamilies {
		if f <= 0 || f >= afMax {
			return nil, fmt.Errorf("seccomp: socket family %d out of range (1..%d)", f, afMax-1)
		}
		if f == unix.AF_NETLINK {
			return nil, errors.New("seccomp: AF_NETLINK cannot be allowed whole (use NetlinkRoute)")
		}
		allowed = append(allowed, f)
	}
	if opts.NetlinkRoute {
		allowed = append(allowed, unix.AF_NETLINK)
	}
	slices.Sort(allowed)
	allowed = slices.Compact(allowed)

	var calls []*configs.Syscall
	for _, name := range seccompDenied {
		calls = append(calls, deny(name))
	}
	calls = append(calls, denyErrno("clone3", unix.ENOSYS))
	for _, f := range cloneNamespaceFlags {
		if f == unix.CLONE_NEWUSER && opts.AllowNewUser {
			continue
		}
		calls = append(calls, deny("clone", maskEq(0, f, f)))
	}
	for _, f := range unshareNamespaceFlags {
		calls = append(calls, deny("unshare", maskEq(0, f, f)))
	}
	for _, req := range deniedIoctls {
		calls = append(calls, deny("ioctl", maskEq(1, ioctlRequestMask, req)))
	}
	calls = append(calls, personalityRules()...)
	calls = append(calls, socketRules(allowed)...)
	if opts.NetlinkRoute {
		calls = append(calls, deny("socket",
			&configs.Arg{Index: 0, Value: unix.AF_NETLINK, Op: configs.EqualTo},
			&configs.Arg{Index: 2, Value: unix.NETLINK_ROUTE, Op: configs.NotEqualTo}))
	}
	calls = append(calls, setIDRules()...)
	calls = append(calls, denyErrno("openat2", unix.ENOSYS))

	return &configs.Seccomp{
		DefaultAction: configs.Allow,
		Architectures: seccompArchitectures(runtime.GOARCH),
		Syscalls:      calls,
	}, nil
}

// seccompArchitectures returns the ABIs, in libcontainer's names, that a
// process of a goarch kernel can use. libseccomp always adds the native one;
// any ABI not listed gets libseccomp's bad-architecture action (kill).
func seccompArchitectures(goarch string) []string {
	switch goarch {
	case "amd64":
		return []string{"amd64", "x86", "x32"}
	case "arm64":
		return []string{"arm64", "arm"}
	default:
		return nil
	}
}

// personalityRules refuse every personality(2) value with a flag bit, without
// refusing the query 0xffffffff. The kernel reads the argument as unsigned
// int, so all masks leave the upper 32 bits out. Rules on one syscall are
// ORed and a rule holds one condition per argument, so the value is split:
//   - bit 31 clear and flag bit b set: (v & (b|1<<31)) == b, for b in 8..30;
//   - bit 31 set but not all of bits 0..30: (v & (1<<31|1<<k)) == 1<<31, for
//     k in 0..30 (without these, 0x80040000 would set ADDR_NO_RANDOMIZE).
func personalityRules() []*configs.Syscall {
	var calls []*configs.Syscall
	for b := 8; b < 31; b++ {
		bit := uint64(1) << b
		calls = append(calls, deny("personality", maskEq(0, bit|personalityTopBit, bit)))
	}
	for k := 0; k < 31; k++ {
		bit := uint64(1) << k
		calls = append(calls, deny("personality", maskEq(0, personalityTopBit|bit, personalityTopBit)))
	}
	return calls
}

// socketRules refuse socket(2) for every family not in allowed (sorted, not
// empty). The family is compared as a full 64-bit value, so upper bits set by
// the caller (which the kernel would drop) are refused too. On i386,
// socketcall(SYS_SOCKET) hides the family behind a pointer and is refused.
func socketRules(allowed []int) []*configs.Syscall {
	var calls []*configs.Syscall
	top := allowed[len(allowed)-1]
	for f := 0; f < top; f++ {
		if !slices.Contains(allowed, f) {
			calls = append(calls, deny("socket", &configs.Arg{Index: 0, Value: uint64(f), Op: configs.EqualTo}))
		}
	}
	calls = append(calls,
		deny("socket", &configs.Arg{Index: 0, Value: uint64(top), Op: configs.GreaterThan}),
		deny("socketcall", &configs.Arg{Index: 0, Value: sysSocket, Op: configs.EqualTo}))
	return calls
}

// setIDBits are the mode bits that make an executable run with its file's
// owner (S_ISUID) or group (S_ISGID) ids. A file the program marks so
// would stay on the host after the run: started by root, a setuid copy
// of a shell is a root shell for every local user; under sudo, a shell
// of the user's for anyone who can reach the workspace.
var setIDBits = []uint64{unix.S_ISUID, unix.S_ISGID}

// oTmpfile is the bit that makes open(2) create an unnamed file
// (__O_TMPFILE; unix.O_TMPFILE adds O_DIRECTORY). The kernel uses the mode
// argument only with it or O_CREAT.
const oTmpfile = unix.O_TMPFILE &^ unix.O_DIRECTORY

// modeArgs are the calls that set a file's mode, and which argument holds
// it (0-based). mknod(2) creates regular files and FIFOs without any
// capability, so it is one of them.
var modeArgs = []struct {
	name string
	mode uint
}{
	{"chmod", 1}, {"fchmod", 1}, {"fchmodat", 2}, {"fchmodat2", 2},
	{"mknod", 1}, {"mknodat", 2}, {"creat", 1},
}

// openArgs are the calls that create a file with a mode when a flag asks
// for it: where their flags and mode are.
var openArgs = []struct {
	name        string
	flags, mode uint
}{
	{"open", 1, 2}, {"openat", 2, 3},
}

// setIDRules refuse (EPERM) every call that would give a file the setuid
// or setgid bit: chmod and friends, mknod, creat, and open or openat with
// O_CREAT or O_TMPFILE, when the mode has either bit. The kernel reads the
// mode as umode_t, of which these bits are part, so the higher bits need
// no rule. Also refused for directories, where the setgid bit only makes
// new entries inherit the group (seccomp cannot tell a directory from a
// file; mkdir(2) itself drops both bits, so only an explicit chmod g+s of a
// directory is refused). chown(2) of a set-id file by its owner needs no
// rule: the kernel clears the bits when an unprivileged caller changes the
// owner.
func setIDRules() []*configs.Syscall {
	var calls []*configs.Syscall
	for _, c := range modeArgs {
		for _, bit := range setIDBits {
			calls = append(calls, deny(c.name, maskEq(c.mode, bit, bit)))
		}
	}
	for _, c := range openArgs {
		for _, create := range []uint64{unix.O_CREAT, oTmpfile} {
			for _, bit := range setIDBits {
				calls = append(calls, deny(c.name, maskEq(c.flags, create, create), maskEq(c.mode, bit, bit)))
			}
		}
	}
	return calls
}

// sysSocket is socketcall's call number for socket(2) (SYS_SOCKET in
// <linux/net.h>).
const sysSocket = 1

// maskEq is the condition (arg[index] & mask) == value.
func maskEq(index uint, mask, value uint64) *configs.Arg {
	return &configs.Arg{Index: index, Value: mask, ValueTwo: value, Op: configs.MaskEqualTo}
}

// deny refuses name with EPERM when all args hold (always, without args).
func deny(name string, args ...*configs.Arg) *configs.Syscall {
	return denyErrno(name, seccompErrno, args...)
}

func denyErrno(name string, errno unix.Errno, args ...*configs.Arg) *configs.Syscall {
	ret := uint(errno)
	return &configs.Syscall{Name: name, Action: configs.Errno, ErrnoRet: &ret, Args: args}
}
