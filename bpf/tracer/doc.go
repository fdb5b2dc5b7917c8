// Package tracer is sbx's denial tracer. Landlock, seccomp, the read-only
// mounts and missing capabilities refuse without any sbx program seeing
// it; the tracer reports those refusals.
//
// [Open] loads trace.c, a tp_btf program on sys_exit (raw tracepoints load
// here; fentry and LSM programs do not), once, and pins it (<pin
// root>/trace-<object hash>-<parent cgroup id>-ev<events map id>/prog;
// the lifecycle is package pin's). It pairs a refusing return value
// (-EACCES, -EPERM, -EROFS, -EXDEV) with the syscall's number and
// arguments, read from pt_regs at exit (a syscall seccomp refused never
// reaches sys_enter), copies the path (made absolute from the cwd or dirfd
// by walking the dentries and mounts) or socket address, and writes a
// record (struct sbx_trace_event, bpf/include/sbx_trace.h) into the run's
// ring, like the other programs; package events decodes it
// (events.OpSyscall, events.Event.Syscall, events.Event.Tier). Which
// syscalls it watches, and how to read their arguments, is one table
// ([events.TracedSyscalls]); the seccomp deny list's rows are derived
// from policy.SeccompDenied (written once). The network wall's own
// refusals (EPERM of inet sockets, connect, bind, sendmsg) are left out,
// so none is reported twice.
//
// Attached, the program runs on every syscall of the host, and the
// tracepoint moves every syscall to the kernel's slow path: measured here,
// an open()+close() pair outside any sandbox costs ~1.86 us detached and
// ~2.06 us attached (+~100 ns per syscall, +10%; BenchmarkTraceOpen), and
// a python loop of 200k opens inside a sandbox takes ~1.32 s instead of
// ~1.24 s (+6%). So it is attached only while some run uses it
// ([Tracer.Acquire], [Use.Release]: a link pinned while at least one
// holder directory is flocked). A run pays ~0.3 ms to attach when it is
// the only one, ~0.1 ms to detach, ~0.07 ms when another run holds it
// (BenchmarkTraceAcquire); attaching right after a detach waits for an RCU
// grace period (~10 ms), which the runner overlaps with creating the
// sandbox.
//
// The tracer only reports: if it cannot load, runs go ahead (with a
// warning; `sbx doctor` says why), and nothing it does can lift a refusal.
// It decodes the x86_64 syscall ABI only (i386 syscalls are not reported).
package tracer
