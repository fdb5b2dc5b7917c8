package events

import (
	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/policy"
)

// traceSyscalls is what the tracer watches, by x86_64 syscall number:
// the file operations Landlock and the read-only mounts refuse, the socket
// calls, and seccomp's deny list (policy.SeccompDenied, added by init).
// Argument indexes are 1-based.
var traceSyscalls = map[uint32]traceSyscall{
	// Opens. Flags are shown for the write hint (O_WRONLY, O_RDWR, O_CREAT).
	// EPERM: seccomp's refusal of a set-id mode (mode: its argument).
	unix.SYS_OPEN:    {name: "open", op: "open", class: classFile, sys: traceSys(fsErrs|bitEPERM, tkPlain, 1, 0, 0, 0, 2, 0), mode: 3},
	unix.SYS_OPENAT:  {name: "openat", op: "open", class: classFile, sys: traceSys(fsErrs|bitEPERM, tkPlain, 2, 1, 0, 0, 3, 0), mode: 4},
	unix.SYS_OPENAT2: {name: "openat2", op: "open", class: classFile, sys: traceSys(fsErrs, tkOpenHow, 2, 1, 0, 0, 3, 0)},
	unix.SYS_CREAT:   {name: "creat", op: "open", class: classFile, sys: traceSys(fsErrs|bitEPERM, tkPlain, 1, 0, 0, 0, 0, 0), mode: 2},
	unix.SYS_EXECVE:  {name: "execve", op: "exec", class: classFile, sys: traceSys(fsErrs, tkPlain, 1, 0, 0, 0, 0, 0)},
	unix.SYS_EXECVEAT: {name: "execveat", op: "exec", class: classFile,
		sys: traceSys(fsErrs, tkPlain, 2, 1, 0, 0, 5, 0)},
	unix.SYS_TRUNCATE: {name: "truncate", op: "truncate", class: classFile, sys: traceSys(fsErrs, tkPlain, 1, 0, 0, 0, 0, 0)},
	// Directory changes.
	unix.SYS_MKDIR:    {name: "mkdir", op: "mkdir", class: classFile, sys: traceSys(fsErrs, tkPlain, 1, 0, 0, 0, 0, 0)},
	unix.SYS_MKDIRAT:  {name: "mkdirat", op: "mkdir", class: classFile, sys: traceSys(fsErrs, tkPlain, 2, 1, 0, 0, 0, 0)},
	unix.SYS_RMDIR:    {name: "rmdir", op: "rmdir", class: classFile, sys: traceSys(fsErrs, tkPlain, 1, 0, 0, 0, 0, 0)},
	unix.SYS_UNLINK:   {name: "unlink", op: "unlink", class: classFile, sys: traceSys(fsErrs, tkPlain, 1, 0, 0, 0, 0, 0)},
	unix.SYS_UNLINKAT: {name: "unlinkat", op: "unlink", class: classFile, sys: traceSys(fsErrs, tkPlain, 2, 1, 0, 0, 3, 0)},
	unix.SYS_MKNOD:    {name: "mknod", op: "mknod", class: classFile, sys: traceSys(fsErrs|bitEPERM, tkPlain, 1, 0, 0, 0, 0, 0), mode: 2},
	unix.SYS_MKNODAT:  {name: "mknodat", op: "mknod", class: classFile, sys: traceSys(fsErrs|bitEPERM, tkPlain, 2, 1, 0, 0, 0, 0), mode: 3},
	// Mode changes: seccomp refuses set-id modes (EPERM), a read-only
	// mount any (EROFS). fchmod has no path; its fd is shown.
	unix.SYS_CHMOD:     {name: "chmod", op: "chmod", class: classFile, sys: traceSys(bitEPERM|bitEROFS, tkPlain, 1, 0, 0, 0, 2, 0), mode: 2},
	unix.SYS_FCHMOD:    {name: "fchmod", op: "chmod", class: classFile, sys: traceSys(bitEPERM|bitEROFS, tkPlain, 0, 0, 0, 0, 2, 0), mode: 2},
	unix.SYS_FCHMODAT:  {name: "fchmodat", op: "chmod", class: classFile, sys: traceSys(bitEPERM|bitEROFS, tkPlain, 2, 1, 0, 0, 3, 0), mode: 3},
	unix.SYS_FCHMODAT2: {name: "fchmodat2", op: "chmod", class: classFile, sys: traceSys(bitEPERM|bitEROFS, tkPlain, 2, 1, 0, 0, 3, 0), mode: 3},
	// Two paths: the target is "PATH -> PATH2".
	unix.SYS_LINK:      {name: "link", op: "link", class: classFile, sys: traceSys(fsErrs, tkPlain, 1, 0, 2, 0, 0, 0)},
	unix.SYS_LINKAT:    {name: "linkat", op: "link", class: classFile, sys: traceSys(fsErrs, tkPlain, 2, 1, 4, 3, 5, 0)},
	unix.SYS_RENAME:    {name: "rename", op: "rename", class: classFile, sys: traceSys(fsErrs, tkPlain, 1, 0, 2, 0, 0, 0)},
	unix.SYS_RENAMEAT:  {name: "renameat", op: "rename", class: classFile, sys: traceSys(fsErrs, tkPlain, 2, 1, 4, 3, 0, 0)},
	unix.SYS_RENAMEAT2: {name: "renameat2", op: "rename", class: classFile, sys: traceSys(fsErrs, tkPlain, 2, 1, 4, 3, 5, 0)},
	// symlink(content, path): only the new path is a file access.
	unix.SYS_SYMLINK:   {name: "symlink", op: "symlink", class: classFile, sys: traceSys(fsErrs, tkPlain, 2, 0, 0, 0, 0, 0)},
	unix.SYS_SYMLINKAT: {name: "symlinkat", op: "symlink", class: classFile, sys: traceSys(fsErrs, tkPlain, 3, 2, 0, 0, 0, 0)},

	// Sockets. EPERM of inet sockets and addresses is the network wall's
	// own report (trace.c leaves it out); seccomp refuses the other
	// families with EPERM; Landlock refuses TCP bind and connect with
	// EACCES and abstract unix sockets outside the sandbox with EPERM.
	unix.SYS_SOCKET:  {name: "socket", op: "socket", class: classSocket, sys: traceSys(bitEPERM|bitEACCES, tkSocket, 0, 0, 0, 0, 0, 0)},
	unix.SYS_CONNECT: {name: "connect", op: "connect", class: classSocket, sys: traceSys(bitEPERM|bitEACCES, tkSockaddr, 0, 0, 0, 0, 0, 2)},
	unix.SYS_BIND:    {name: "bind", op: "bind", class: classSocket, sys: traceSys(bitEPERM|bitEACCES, tkSockaddr, 0, 0, 0, 0, 0, 2)},
	unix.SYS_SENDTO:  {name: "sendto", op: "sendmsg", class: classSocket, sys: traceSys(bitEPERM|bitEACCES, tkSockaddr, 0, 0, 0, 0, 0, 5)},
	unix.SYS_SENDMSG: {name: "sendmsg", op: "sendmsg", class: classSocket, sys: traceSys(bitEPERM|bitEACCES, tkMsghdr, 0, 0, 0, 0, 0, 2)},
}

// sysNumbers are the x86_64 numbers of the syscalls seccomp refuses (the
// ABI's facts, not a policy): the tracer's entries for them are derived
// from policy.SeccompDenied and policy.SeccompArgDenied, so the deny list
// is written once. A name of the policy that x86_64 does not have is
// missing here on purpose, and lands in [SeccompAbsent].
var sysNumbers = map[string]uint32{
	"mount": unix.SYS_MOUNT, "umount2": unix.SYS_UMOUNT2, "pivot_root": unix.SYS_PIVOT_ROOT, "chroot": unix.SYS_CHROOT,
	"fsopen": unix.SYS_FSOPEN, "fsconfig": unix.SYS_FSCONFIG, "fsmount": unix.SYS_FSMOUNT, "fspick": unix.SYS_FSPICK,
	"move_mount": unix.SYS_MOVE_MOUNT, "open_tree": unix.SYS_OPEN_TREE, "mount_setattr": unix.SYS_MOUNT_SETATTR,
	"ptrace": unix.SYS_PTRACE, "process_vm_readv": unix.SYS_PROCESS_VM_READV, "process_vm_writev": unix.SYS_PROCESS_VM_WRITEV,
	"bpf": unix.SYS_BPF, "perf_event_open": unix.SYS_PERF_EVENT_OPEN, "lookup_dcookie": unix.SYS_LOOKUP_DCOOKIE, "syslog": unix.SYS_SYSLOG,
	"keyctl": unix.SYS_KEYCTL, "add_key": unix.SYS_ADD_KEY, "request_key": unix.SYS_REQUEST_KEY,
	"kexec_load": unix.SYS_KEXEC_LOAD, "kexec_file_load": unix.SYS_KEXEC_FILE_LOAD,
	"init_module": unix.SYS_INIT_MODULE, "finit_module": unix.SYS_FINIT_MODULE, "delete_module": unix.SYS_DELETE_MODULE,
	"create_module": unix.SYS_CREATE_MODULE, "get_kernel_syms": unix.SYS_GET_KERNEL_SYMS, "query_module": unix.SYS_QUERY_MODULE,
	"open_by_handle_at": unix.SYS_OPEN_BY_HANDLE_AT, "name_to_handle_at": unix.SYS_NAME_TO_HANDLE_AT,
	"io_uring_setup": unix.SYS_IO_URING_SETUP, "io_uring_enter": unix.SYS_IO_URING_ENTER, "io_uring_register": unix.SYS_IO_URING_REGISTER,
	"userfaultfd": unix.SYS_USERFAULTFD, "setns": unix.SYS_SETNS,
	"swapon": unix.SYS_SWAPON, "swapoff": unix.SYS_SWAPOFF, "reboot": unix.SYS_REBOOT, "acct": unix.SYS_ACCT,
	"quotactl": unix.SYS_QUOTACTL, "quotactl_fd": unix.SYS_QUOTACTL_FD, "vhangup": unix.SYS_VHANGUP,
	"settimeofday": unix.SYS_SETTIMEOFDAY, "clock_settime": unix.SYS_CLOCK_SETTIME,
	"iopl": unix.SYS_IOPL, "ioperm": unix.SYS_IOPERM, "nfsservctl": unix.SYS_NFSSERVCTL, "uselib": unix.SYS_USELIB,
	"sysfs": unix.SYS_SYSFS, "_sysctl": unix.SYS__SYSCTL, "ustat": unix.SYS_USTAT,
	// Refused for some arguments only.
	"clone": unix.SYS_CLONE, "unshare": unix.SYS_UNSHARE, "ioctl": unix.SYS_IOCTL, "personality": unix.SYS_PERSONALITY,
}

// seccompDenied are the syscalls of policy.SeccompDenied that exist on
// x86_64, by number; they are reported by name when they fail with EPERM.
var seccompDenied = map[uint32]string{}

// SeccompAbsent are names of seccomp's deny list that x86_64 does not have
// (libseccomp skips them there; socketcall is i386 only, whose syscalls the
// tracer does not decode), so the tracer cannot see them. Derived from
// policy.SeccompDenied and [sysNumbers].
var SeccompAbsent = []string{"socketcall"}

func init() {
	for _, name := range policy.SeccompDenied {
		nr, ok := sysNumbers[name]
		if !ok {
			SeccompAbsent = append(SeccompAbsent, name)
			continue
		}
		seccompDenied[nr] = name
		traceSyscalls[nr] = seccompSys(name, 0)
	}
	for _, r := range policy.SeccompArgDenied {
		nr, ok := sysNumbers[r.Name]
		if !ok {
			SeccompAbsent = append(SeccompAbsent, r.Name)
			continue
		}
		traceSyscalls[nr] = seccompSys(r.Name, r.Shown)
	}
}

// seccompSys is a syscall seccomp refuses (EPERM), reported by name; flags
// is the argument shown with it (clone's flags, ioctl's request), or 0.
func seccompSys(name string, flags uint8) traceSyscall {
	return traceSyscall{name: name, op: "syscall", class: classSeccomp, sys: traceSys(bitEPERM, tkPlain, 0, 0, 0, 0, flags, 0)}
}

func traceSys(errs uint32, kind eventsSbxTraceKind, path, dirfd, path2, dirfd2, flags, addr uint8) eventsSbxTraceSys {
	return eventsSbxTraceSys{Errs: errs, Kind: uint8(kind), Path: path, Dirfd: dirfd, Path2: path2, Dirfd2: dirfd2, Flags: flags, Addr: addr}
}
