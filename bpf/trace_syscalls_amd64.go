package bpf

import "golang.org/x/sys/unix"

// traceSyscalls is what the tracer watches, by x86_64 syscall number:
// the file operations Landlock and the read-only mounts refuse, the socket
// calls, and seccomp's deny list (sandbox/seccomp.go; a runner test checks
// the two agree). Argument indexes are 1-based.
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

	// seccomp's refusals with arguments: EPERM only.
	unix.SYS_CLONE:       seccompSys("clone", 1),
	unix.SYS_UNSHARE:     seccompSys("unshare", 1),
	unix.SYS_IOCTL:       seccompSys("ioctl", 2),
	unix.SYS_PERSONALITY: seccompSys("personality", 1),
}

// seccompDenied are the syscalls of seccomp's deny list (sandbox/seccomp.go)
// that exist on x86_64; they are reported by name when they fail with
// EPERM.
var seccompDenied = map[uint32]string{
	unix.SYS_MOUNT: "mount", unix.SYS_UMOUNT2: "umount2", unix.SYS_PIVOT_ROOT: "pivot_root", unix.SYS_CHROOT: "chroot",
	unix.SYS_FSOPEN: "fsopen", unix.SYS_FSCONFIG: "fsconfig", unix.SYS_FSMOUNT: "fsmount", unix.SYS_FSPICK: "fspick",
	unix.SYS_MOVE_MOUNT: "move_mount", unix.SYS_OPEN_TREE: "open_tree", unix.SYS_MOUNT_SETATTR: "mount_setattr",
	unix.SYS_PTRACE: "ptrace", unix.SYS_PROCESS_VM_READV: "process_vm_readv", unix.SYS_PROCESS_VM_WRITEV: "process_vm_writev",
	unix.SYS_BPF: "bpf", unix.SYS_PERF_EVENT_OPEN: "perf_event_open", unix.SYS_LOOKUP_DCOOKIE: "lookup_dcookie", unix.SYS_SYSLOG: "syslog",
	unix.SYS_KEYCTL: "keyctl", unix.SYS_ADD_KEY: "add_key", unix.SYS_REQUEST_KEY: "request_key",
	unix.SYS_KEXEC_LOAD: "kexec_load", unix.SYS_KEXEC_FILE_LOAD: "kexec_file_load",
	unix.SYS_INIT_MODULE: "init_module", unix.SYS_FINIT_MODULE: "finit_module", unix.SYS_DELETE_MODULE: "delete_module",
	unix.SYS_CREATE_MODULE: "create_module", unix.SYS_GET_KERNEL_SYMS: "get_kernel_syms", unix.SYS_QUERY_MODULE: "query_module",
	unix.SYS_OPEN_BY_HANDLE_AT: "open_by_handle_at", unix.SYS_NAME_TO_HANDLE_AT: "name_to_handle_at",
	unix.SYS_IO_URING_SETUP: "io_uring_setup", unix.SYS_IO_URING_ENTER: "io_uring_enter", unix.SYS_IO_URING_REGISTER: "io_uring_register",
	unix.SYS_USERFAULTFD: "userfaultfd", unix.SYS_SETNS: "setns",
	unix.SYS_SWAPON: "swapon", unix.SYS_SWAPOFF: "swapoff", unix.SYS_REBOOT: "reboot", unix.SYS_ACCT: "acct",
	unix.SYS_QUOTACTL: "quotactl", unix.SYS_QUOTACTL_FD: "quotactl_fd", unix.SYS_VHANGUP: "vhangup",
	unix.SYS_SETTIMEOFDAY: "settimeofday", unix.SYS_CLOCK_SETTIME: "clock_settime",
	unix.SYS_IOPL: "iopl", unix.SYS_IOPERM: "ioperm", unix.SYS_NFSSERVCTL: "nfsservctl", unix.SYS_USELIB: "uselib",
	unix.SYS_SYSFS: "sysfs", unix.SYS__SYSCTL: "_sysctl", unix.SYS_USTAT: "ustat",
}

// SeccompAbsent are names of seccomp's deny list that x86_64 does not have
// (libseccomp skips them there; socketcall is i386 only, whose syscalls the
// tracer does not decode), so the tracer cannot see them.
var SeccompAbsent = []string{"umount", "stime", "vm86", "vm86old", "socketcall"}

func init() {
	for nr, name := range seccompDenied {
		traceSyscalls[nr] = seccompSys(name, 0)
	}
}

// seccompSys is a syscall seccomp refuses (EPERM), reported by name; flags
// is the argument shown with it (clone's flags, ioctl's request), or 0.
func seccompSys(name string, flags uint8) traceSyscall {
	return traceSyscall{name: name, op: "syscall", class: classSeccomp, sys: traceSys(bitEPERM, tkPlain, 0, 0, 0, 0, flags, 0)}
}

func traceSys(errs uint32, kind traceSbxTraceKind, path, dirfd, path2, dirfd2, flags, addr uint8) traceSbxTraceSys {
	return traceSbxTraceSys{Errs: errs, Kind: uint8(kind), Path: path, Dirfd: dirfd, Path2: path2, Dirfd2: dirfd2, Flags: flags, Addr: addr}
}
