package policy

// SeccompDenied is the one list of syscalls the seccomp filter refuses
// (EPERM) whatever their arguments: package sandbox compiles it into the
// filter, and package bpf derives the denial tracer's table from it, so the
// two cannot drift. Names that do not exist on an ABI (stime, vm86 on
// amd64; create_module on x32) are resolved per ABI by libseccomp and
// skipped where absent.
var SeccompDenied = []string{
	// Mounts and root changes, old and new mount API.
	"mount", "umount", "umount2", "pivot_root", "chroot",
	"fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
	// Other processes' memory.
	"ptrace", "process_vm_readv", "process_vm_writev",
	// Kernel programmability and introspection.
	"bpf", "perf_event_open", "lookup_dcookie", "syslog",
	// Kernel keyrings (not namespaced).
	"keyctl", "add_key", "request_key",
	// Loading kernels and modules.
	"kexec_load", "kexec_file_load",
	"init_module", "finit_module", "delete_module",
	"create_module", "get_kernel_syms", "query_module",
	// File handles bypass path-based checks.
	"open_by_handle_at", "name_to_handle_at",
	// io_uring runs operations that seccomp never sees.
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	// Page-fault handling in user space (widens kernel race windows).
	"userfaultfd",
	// Joining other namespaces.
	"setns",
	// Host-wide state.
	"swapon", "swapoff", "reboot", "acct", "quotactl", "quotactl_fd", "vhangup",
	"settimeofday", "clock_settime", "stime",
	// Port I/O and obsolete interfaces.
	"iopl", "ioperm", "nfsservctl", "uselib", "sysfs", "_sysctl", "ustat",
	"vm86", "vm86old",
}

// SeccompArgRule is a syscall the filter refuses only for some arguments.
type SeccompArgRule struct {
	Name string
	// Shown is the 1-based argument a report of its refusal shows (the
	// flags, the ioctl request), or 0.
	Shown uint8
}

// SeccompArgDenied are the syscalls refused (EPERM) for some arguments:
// clone and unshare with a namespace flag, ioctl TIOCSTI and TIOCLINUX,
// personality with a flag bit, socket of a family not allowed (and i386's
// socketcall(SYS_SOCKET)). The set-id mode rules of the file calls are not
// here: the tracer reports those as file operations. Package sandbox builds
// the conditions; the tracer reports each by name.
var SeccompArgDenied = []SeccompArgRule{
	{"clone", 1}, {"unshare", 1}, {"ioctl", 2}, {"personality", 1},
}
