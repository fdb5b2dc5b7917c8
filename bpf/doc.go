// Package bpf holds sbx's eBPF programs and their Go loaders: the network
// wall (cgroup socket programs, net.c), the LSM file policy (lsm*.go), the
// denial tracer (trace.c) and the violation events every program reports
// (events.h, sbx_event.h).
//
// # Network wall
//
// [OpenNet] loads the programs once per host and pins them under bpffs
// (<pin root>/net-<object hash>-<parent cgroup id>/: link_*, prog_* and
// map_* pins, and slot_N/ring for the event ring pool), so a later sbx
// process only opens the pins (~0.2 ms) instead of loading and verifying
// them (~20 ms). The programs deny, with EPERM, every AF_INET and AF_INET6
// socket and every connect, sendmsg and bind of any task whose cgroup is
// under one parent cgroup2 directory. Each run's cgroup is created under
// that parent, so a run is walled in from the moment its first task enters
// its cgroup, with no per-run attach and no map entry needed (fail closed).
// Per-run exceptions (the egress proxy endpoint) live in a map keyed by the
// run's cgroup id ([Net.Allow]). Their layout (struct sbx_net_policy) is
// in sbx_net.h, which the BPF LSM tier's socket hooks read too; both maps
// are filled from the one encoding of package policy ([policy.WallRules]).
//
// Where each program is attached, and why:
//
//   - cgroup/sock_create on the parent. A socket belongs to the cgroup of
//     the task that creates it, so this sees exactly the sockets created
//     under the parent. The kernel runs it only for AF_INET and AF_INET6
//     (inet_create, inet6_create), every type and protocol included (TCP,
//     UDP, raw, ICMP, MPTCP, SCTP); other families (AF_PACKET, AF_NETLINK,
//     AF_VSOCK, ...) never reach a cgroup program and must be refused by
//     seccomp or the LSM tier (TestNetSocketFamilies pins this down).
//   - cgroup/connect4, connect6, sendmsg4, sendmsg6, bind4, bind6 on the
//     cgroup2 root. The kernel runs these by the cgroup of the socket, not
//     of the caller: attached to the parent they would miss a socket created
//     outside and passed in (inherited or by SCM_RIGHTS; seen here). At the
//     root they run for every socket on the host and decide by the calling
//     task (bpf_current_task_under_cgroup), so a leaked socket cannot
//     connect, send to an address (UDP, TCP Fast Open) or bind. A leaked
//     socket that is already connected, bound or listening keeps working
//     (no cgroup hook runs for send, recv or accept), which is why sbx
//     closes every inherited descriptor. Host tasks pay one helper call per
//     connect, bind and addressed sendmsg.
//
// # Events
//
// Several sbx processes share the pinned programs, and readers of one shared
// ring buffer would race for each other's records. So each run reads its own
// ring ([Net.Events]), taken from a pool of up to 64 rings that the programs
// reach through the run's cgroup id (events.h explains why a pool and not a
// ring per run: map-in-map updates wait for an RCU grace period). A slot is
// held through a flock on its pin directory, which the kernel drops if sbx
// dies. [EventReader] decodes records into [Event]; the LSM programs share
// the same maps and readers ([Net.EventMaps]).
//
// # Denial tracer
//
// Landlock, seccomp, the read-only mounts and missing capabilities refuse
// without any sbx program seeing it. The syscalls of seccomp's deny list
// the tracer watches are derived from policy.SeccompDenied (written once). [OpenTrace] loads trace.c, a tp_btf
// program on sys_exit (raw tracepoints load here; fentry and LSM programs
// do not), once, and pins it (<pin root>/trace-<object hash>-<parent
// cgroup id>-ev<events map id>/prog). It pairs a refusing return value
// (-EACCES, -EPERM, -EROFS, -EXDEV) with the syscall's number and
// arguments, read from pt_regs at exit (a syscall seccomp refused never
// reaches sys_enter), copies the path (made absolute from the cwd or dirfd
// by walking the dentries and mounts) or socket address, and writes an
// event ([OpSyscall], [Event.Syscall], [Event.Tier]) into the run's ring,
// like the other programs. The network wall's own refusals (EPERM of inet
// sockets, connect, bind, sendmsg) are left out, so none is reported twice.
//
// Attached, the program runs on every syscall of the host, and the
// tracepoint moves every syscall to the kernel's slow path: measured here,
// an open()+close() pair outside any sandbox costs ~1.86 us detached and
// ~2.06 us attached (+~100 ns per syscall, +10%; BenchmarkTraceOpen), and
// a python loop of 200k opens inside a sandbox takes ~1.32 s instead of
// ~1.24 s (+6%). So it is attached only while some run uses it ([Trace.Acquire],
// [TraceUse.Release]: a link pinned while at least one holder directory is
// flocked). A run pays ~0.3 ms to attach when it is the only one, ~0.1 ms
// to detach, ~0.07 ms when another run holds it (BenchmarkTraceAcquire);
// attaching right after a detach waits for an RCU grace period (~10 ms),
// which the runner overlaps with creating the sandbox.
//
// The tracer only reports: if it cannot load, runs go ahead (with a
// warning; `sbx doctor` says why), and nothing it does can lift a refusal.
// It decodes the x86_64 syscall ABI only (i386 syscalls are not reported).
//
// # Proving the wall
//
// Before exec, a process already in the run's cgroup calls [Canary], which
// must see socket(AF_INET) refused with EPERM. Run it before the seccomp
// filter is installed if that filter also refuses inet sockets with EPERM,
// or the filter would pass the canary on the wall's behalf. The canary's own
// events carry canary.Comm ([Event.IsCanary]) so the runner can leave them
// out of its report.
//
// # Runner sequence
//
//	pin.Mount()                                  // bpffs at /sys/fs/bpf
//	n, _ := OpenNet(parent, nil)             // once per sbx process
//	mkdir parent/<run-id>; id, _ := CgroupID(dir)
//	r, _ := n.Events(id)                     // before the first task starts
//	n.Allow(id, Policy{...})                 // only if the run has exceptions
//	start the run in dir; in it, canary.Net() before exec
//	read r until the run ends; r.SetDeadline(time.Now()) and drain
//	r.Close(); n.Revoke(id); rmdir dir; n.Close()
//
// Keep n open until the run ends: open links keep the programs attached even
// if another sbx replaces the pins meanwhile.
//
// Everything here needs root (CAP_SYS_ADMIN, CAP_BPF, CAP_NET_ADMIN), cgroup2
// and bpf_link for cgroups (Linux 5.7); a kernel that lacks them yields an
// error wrapping [ErrNotSupported].
package bpf

import "github.com/cilium/ebpf"

// ErrNotSupported is wrapped by errors that mean the kernel lacks a feature
// (cgroup2, cgroup BPF, bpf_link, ...), as opposed to a broken setup.
var ErrNotSupported = ebpf.ErrNotSupported
