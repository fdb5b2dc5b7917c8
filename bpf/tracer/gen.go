package tracer

// Regenerate trace_bpfel.go and trace_bpfel.o from trace.c (make generate).
// The output is deterministic for a given clang and bpf2go, and committed
// so a build needs no clang.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -I../include" -target bpfel -type sbx_trace_event -type sbx_trace_sys -type sbx_trace_kind trace trace.c
