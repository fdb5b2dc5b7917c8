// Package lsm is sbx's BPF LSM tier (lsm.c): file access by identity
// (file_open, creation, removal, links, renames, truncate, chmod, chown),
// TIOCSTI/TIOCLINUX, ptrace and signals to tasks outside the sandbox's
// cgroup, bpf, mounts and sockets of every family but AF_UNIX, for the
// tasks of registered sandboxes, keyed by their cgroup id.
//
// [Open] loads the programs (or reuses their pins under a pin root, with
// package pin's lifecycle), [LSM.AddSandbox] registers a run with its
// [FilePolicy], [LSM.AllowNet] gives it the network wall's exceptions
// (the same struct sbx_net_policy, bpf/include/sbx_net.h), and its
// denials go to the run's ring of package events, shared with the
// network wall ([Options.Events]). [Supported] tells whether the kernel
// runs BPF LSM programs at all (bpf in the active LSM list).
package lsm
