//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * events.c holds no program: it is compiled only so that bpf2go gives
 * package events the record layouts every program writes (struct sbx_event,
 * struct sbx_trace_event) and the ring pool's maps (events.h), from the
 * same headers the programs include.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "sbx_event.h"
#include "events.h"
#include "sbx_trace.h"

/* Anchors that make clang emit BTF for the types Go generates (bpf2go
 * -type); never referenced by a program, so never loaded. */
const struct sbx_event *sbx_event_btf __attribute__((unused));
const enum sbx_op *sbx_op_btf __attribute__((unused));
const struct sbx_trace_event *sbx_trace_event_btf __attribute__((unused));
const struct sbx_trace_sys *sbx_trace_sys_btf __attribute__((unused));
const enum sbx_trace_kind *sbx_trace_kind_btf __attribute__((unused));

char LICENSE[] SEC("license") = "Dual BSD/GPL";
