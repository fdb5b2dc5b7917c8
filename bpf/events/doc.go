// Package events is the transport of sbx's BPF denials: the record every
// program writes (struct sbx_event, bpf/include/sbx_event.h; the tracer's
// longer struct sbx_trace_event, sbx_trace.h), the ring pool the programs
// write it to (bpf/include/events.h), and the reader that decodes it into
// [Event].
//
// Several sbx processes share the pinned programs, and readers of one
// shared ring buffer would race for each other's records. So each run
// reads its own ring ([NewReader]), taken from a pool of up to 64 rings
// that the programs reach through the run's cgroup id (events.h explains
// why a pool and not a ring per run: map-in-map updates wait for an RCU
// grace period). A slot is held through a flock on its pin directory,
// which the kernel drops if sbx dies. The network wall creates the pool
// ([Maps]); the LSM programs and the tracer are loaded with the same maps,
// so one reader per run sees every tier's denials.
//
// events.c holds no program: bpf2go compiles it only to give this package
// the record types and the pool's map specs from the headers the programs
// include. The tracer's syscall table lives here too ([TracedSyscalls]),
// because decoding its records (names, tiers, paths) needs it.
package events
