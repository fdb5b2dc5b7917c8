package lsm

// Regenerate lsm_bpfel.go and lsm_bpfel.o from lsm.c (make generate). The
// output is deterministic for a given clang and bpf2go, and committed so a
// build needs no clang.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -I../include" -target bpfel -type sbx_net_policy -type sbx_allow_key -type sbx_selftest -type sbx_access -type sbx_mount_kind -type sbx_net_flag lsm lsm.c
