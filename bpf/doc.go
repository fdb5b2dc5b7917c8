// Package bpf is the root of sbx's eBPF programs and their Go loaders,
// split by kernel concept:
//
//   - bpf/netwall: the network wall (cgroup socket programs, net.c);
//   - bpf/lsm: the BPF LSM file and socket tier (lsm.c);
//   - bpf/tracer: the denial tracer (tp_btf on sys_exit, trace.c);
//   - bpf/events: the records every program writes, the per-run ring pool
//     and the reader;
//   - bpf/pin: the one lifecycle of the pinned objects the three programs
//     share (bpffs, pin root lock, held directories, sweeps of other
//     builds);
//   - bpf/include: the C headers the programs share (sbx_event.h,
//     sbx_net.h, sbx_trace.h, events.h, vmlinux.h).
//
// This package holds what they all need: [ErrNotSupported] and the cgroup2
// lookups ([CgroupID], [Cgroup2RootOf]; the mount itself is internal/cgroup2.Mount).
package bpf

import "github.com/cilium/ebpf"

// ErrNotSupported is wrapped by errors that mean the kernel lacks a feature
// (cgroup2, cgroup BPF, bpf_link, ...), as opposed to a broken setup.
var ErrNotSupported = ebpf.ErrNotSupported
