package events

// Regenerate events_bpfel.go and events_bpfel.o from events.c (make
// generate): the record types and the ring pool's map specs. The output is
// deterministic for a given clang and bpf2go, and committed so a build
// needs no clang.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -I../include" -target bpfel -type sbx_event -type sbx_op -type sbx_run -type sbx_trace_event -type sbx_trace_sys -type sbx_trace_kind events events.c
