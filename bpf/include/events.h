/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Event routing shared by sbx's BPF programs.
 *
 * Several sbx runs share one set of pinned programs, so one shared ring
 * buffer would not work: every reader would race for every record. Each run
 * instead reads its own ring buffer, taken from a pool: sbx_events holds up
 * to SBX_RING_SLOTS rings, and sbx_drops maps a run's cgroup id to the slot
 * of its ring (and counts the run's events lost to a full ring). A program
 * that denies something finds the run its task belongs to (its own cgroup
 * or the nearest registered ancestor) and writes the event into that run's
 * ring. Events of tasks whose run registered no ring are counted in
 * sbx_unrouted.
 *
 * Why a pool rather than one ring per run put into a hash of maps: every
 * update or delete of a map-in-map from user space waits for an RCU grace
 * period (synchronize_rcu, 8-16 ms here), twice per run. A ring is put into
 * its slot once, when the pool grows; a run then only updates sbx_drops, a
 * plain hash (microseconds). Who owns a slot is decided in user space (a
 * lock on the slot's pin directory, bpf/events/reader.go).
 *
 * Include after vmlinux.h, <bpf/bpf_helpers.h> and sbx_event.h. The helpers
 * used here (bpf_get_current_cgroup_id, bpf_get_current_ancestor_cgroup_id,
 * bpf_get_current_pid_tgid, bpf_get_current_comm, ringbuf) are allowed for
 * cgroup socket programs and for LSM and tracing programs. A second object
 * shares these maps by defining them with the same names (include this file)
 * and replacing them with the pinned ones at load (MapReplacements).
 */
#ifndef SBX_EVENTS_H
#define SBX_EVENTS_H

/* Size of each ring buffer (a power of two, multiple of the page size).
 * One record is sizeof(struct sbx_event) + 8 bytes of header. */
#define SBX_RING_SIZE (256 * 1024)
/* Rings in the pool: runs that can have a reader at the same time. */
#define SBX_RING_SLOTS 64
/* Runs registered at the same time (a run holds one entry). */
#define SBX_MAX_RUNS 4096
/* Deepest cgroup level searched for a registered ancestor. */
#define SBX_MAX_CGROUP_LEVEL 32

struct sbx_ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, SBX_RING_SIZE);
};

/* Slot -> ring buffer; empty slots have none yet. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, SBX_RING_SLOTS);
	__type(key, __u32);
	__array(values, struct sbx_ring);
} sbx_events SEC(".maps");

/* A registered run. */
struct sbx_run {
	__u32 slot;  /* of its ring in sbx_events */
	__u32 pad;
	__u64 drops; /* events lost because the ring was full */
};

/* Run cgroup id -> the run's ring slot and lost-event count. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SBX_MAX_RUNS);
	__type(key, __u64);
	__type(value, struct sbx_run);
} sbx_drops SEC(".maps");

/* [0]: events of tasks whose run has no ring registered. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} sbx_unrouted SEC(".maps");

/* Anchor that makes clang emit BTF for struct sbx_run (bpf2go -type); never
 * referenced by a program, so never loaded. */
const struct sbx_run *sbx_run_btf __attribute__((unused));

/*
 * sbx_lookup_run returns the value that map holds for the current task's
 * cgroup or, failing that, for its nearest ancestor, and stores the
 * matching cgroup id in *id. NULL (and *id = 0) when none matches. The
 * common case (the task sits directly in its run's cgroup) costs one lookup;
 * tasks in nested cgroups cost one lookup per level, which only the (rare)
 * paths of sandboxed tasks pay.
 */
static __always_inline void *sbx_lookup_run(void *map, __u64 *id)
{
	__u64 cg = bpf_get_current_cgroup_id();
	void *v = bpf_map_lookup_elem(map, &cg);
	int level;

	if (v) {
		*id = cg;
		return v;
	}
	/* Deepest first would need the task's level, which no helper gives;
	 * walking down from the root finds the same (only run cgroups are
	 * keys) and stops at the task's own level, where the id becomes 0. */
	for (level = 1; level < SBX_MAX_CGROUP_LEVEL; level++) {
		cg = bpf_get_current_ancestor_cgroup_id(level);
		if (!cg)
			break;
		v = bpf_map_lookup_elem(map, &cg);
		if (v) {
			*id = cg;
			return v;
		}
	}
	*id = 0;
	return NULL;
}

/*
 * sbx_ring_reserve reserves size bytes (a constant) in the current run's
 * ring and stores the run's cgroup id in *id. NULL when the run has no ring
 * (counted in sbx_unrouted) or its ring is full (counted in the run's
 * drops); the caller then just returns its verdict. A reserved record must
 * be passed to bpf_ringbuf_submit.
 */
static __always_inline void *sbx_ring_reserve(__u64 size, __u64 *id)
{
	struct sbx_run *run;
	__u32 zero = 0;
	void *ring = NULL, *e;
	__u64 *n;

	run = sbx_lookup_run(&sbx_drops, id);
	if (run)
		ring = bpf_map_lookup_elem(&sbx_events, &run->slot);
	if (!run || !ring) {
		n = bpf_map_lookup_elem(&sbx_unrouted, &zero);
		if (n)
			__sync_fetch_and_add(n, 1);
		return NULL;
	}
	e = bpf_ringbuf_reserve(ring, size, 0);
	if (!e)
		__sync_fetch_and_add(&run->drops, 1);
	return e;
}

/* sbx_event_fill fills the fields every program knows: time, run cgroup
 * id, pid, comm, op and errno. */
static __always_inline void sbx_event_fill(struct sbx_event *e, __u64 id, __u32 op, __s32 err)
{
	e->ts_ns = bpf_ktime_get_ns();
	e->cgroup_id = id;
	e->pid = bpf_get_current_pid_tgid() >> 32;
	e->op = op;
	e->err = err;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
}

/*
 * sbx_event_reserve reserves a zeroed event in the current run's ring and
 * fills it (sbx_event_fill). NULL as sbx_ring_reserve; a reserved event
 * must be passed to bpf_ringbuf_submit.
 */
static __always_inline struct sbx_event *sbx_event_reserve(__u32 op, __s32 err)
{
	struct sbx_event *e;
	__u64 id = 0;

	e = sbx_ring_reserve(sizeof(*e), &id);
	if (!e)
		return NULL;
	__builtin_memset(e, 0, sizeof(*e));
	sbx_event_fill(e, id, op, err);
	return e;
}

#endif /* SBX_EVENTS_H */
