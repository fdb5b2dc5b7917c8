// Package netwall is sbx's network wall: cgroup socket programs (net.c)
// that deny, with EPERM, every AF_INET and AF_INET6 socket and every
// connect, sendmsg and bind of any task whose cgroup is under one parent
// cgroup2 directory.
//
// sbx gives each build of the programs a parent of its own,
// <cgroup2>/sbx/<[WallID]>, and creates its root runs' cgroups there. A
// build's programs refuse every socket of a run they have no entry for,
// so with one parent shared by two builds in use at once (an upgrade
// while a run goes on, two checkouts), each would refuse the other's
// runs; with a parent each, a build's wall never sees another build's
// runs. Opening the wall removes the parent of another build once no pins
// name it (its last run ended and its pins were removed) and no run
// cgroup is in it. A wall attached above the parent (an sbx from before
// per-build parents attached its wall to <cgroup2>/sbx itself) does apply
// to this build's runs: [Wall.ForeignSockCreate] finds it.
//
// [Open] loads the programs once per host and pins them under bpffs
// (<pin root>/net-<object hash>-<parent cgroup id>/: link_*, prog_* and
// map_* pins, and slot_N/ring for the event ring pool; the lifecycle is
// package pin's), so a later sbx process only opens the pins (~0.2 ms)
// instead of loading and verifying them (~20 ms). Each run's cgroup is
// created under the parent, so a run is walled in from the moment its
// first task enters its cgroup, with no per-run attach and no map entry
// needed (fail closed). Per-run exceptions (the egress proxy endpoint,
// loopback and the forwarder endpoints on it, the host network) live in a
// map keyed by the run's cgroup id
// ([Wall.Allow]). Their layout (struct sbx_net_policy) is in
// bpf/include/sbx_net.h, which the BPF LSM tier's socket hooks read too;
// both maps are filled from the one encoding of package policy
// ([policy.WallRules]).
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
// The wall's denials go to the run's own ring ([Wall.Events], package
// events); the LSM and tracer programs share the same maps
// ([Wall.EventMaps]).
//
// # Proving the wall
//
// Before exec, a process already in the run's cgroup calls canary.Net,
// which must see socket(AF_INET) refused with EPERM. Run it before the
// seccomp filter is installed if that filter also refuses inet sockets
// with EPERM, or the filter would pass the canary on the wall's behalf.
// The canary's own events carry canary.Comm (events.Event.IsCanary) so
// the runner can leave them out of its report.
//
// # Runner sequence
//
//	pin.Mount()                              // bpffs at /sys/fs/bpf
//	parent := <cgroup2>/sbx/netwall.WallID(); mkdir -p parent
//	w, _ := netwall.Open(parent, nil)        // once per sbx process
//	mkdir parent/<run-id>; id, _ := bpf.CgroupID(dir)
//	r, _ := w.Events(id)                     // before the first task starts
//	w.Allow(id, policy.WallRules{...})       // only if the run has exceptions
//	start the run in dir; in it, canary.Net() before exec
//	read r until the run ends; r.SetDeadline(time.Now()) and drain
//	r.Close(); w.Revoke(id); rmdir dir; w.Close()
//
// Keep w open until the run ends: open links keep the programs attached
// even if another sbx replaces the pins meanwhile.
//
// Everything here needs root (CAP_SYS_ADMIN, CAP_BPF, CAP_NET_ADMIN),
// cgroup2 and bpf_link for cgroups (Linux 5.7); a kernel that lacks them
// yields an error wrapping bpf.ErrNotSupported.
package netwall
