package netwall

// Regenerate net_bpfel.go and net_bpfel.o from net.c (make generate). The
// output is deterministic for a given clang and bpf2go, and committed so a
// build needs no clang.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -I../include" -target bpfel -type sbx_event -type sbx_op -type sbx_net_policy -type sbx_net_flag -type sbx_run net net.c
