//go:build ignore

/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * sbx's denial tracer: reports the refusals that no sbx program makes
 * itself (Landlock, seccomp, the read-only mounts, the missing
 * capabilities) by watching syscalls return.
 *
 * One tp_btf program on sys_exit. Every syscall of the host passes through
 * it while it is attached (bpf/tracer attaches it only while a run uses
 * it), so it leaves as early and as cheaply as it can:
 *   1. the return value must be one of the refusals in SBX_REFUSALS;
 *   2. the task must be under sbx's parent cgroup (one helper call at the
 *      parent's level: sbx_parent_level and sbx_parent_id are set at load);
 *   3. the syscall must be in sbx_trace_syscalls with that errno allowed.
 * Only then are the arguments read (from pt_regs, as the syscall got them:
 * a syscall refused by seccomp never reaches sys_enter, but does reach
 * sys_exit with its registers intact) and an event written to the run's
 * ring (events.h).
 *
 * What the syscalls mean (op names, tiers) is decided in Go from the
 * syscall number (bpf/events/syscalls_amd64.go); the table tells this program
 * only where each syscall keeps its path, dirfd, flags or socket address.
 * Refusals the network wall reports itself (EPERM of an AF_INET/AF_INET6
 * socket, connect, bind or sendmsg) are left out here, so none is reported
 * twice.
 *
 * Relative paths are reported with the directory they are relative to
 * (the cwd, or the dirfd's file), rebuilt from the dentries up through the
 * mounts to the task's mount namespace root: the path as the sandboxed
 * program sees it.
 *
 * Only the x86_64 (and x32) syscall ABI is decoded; i386 syscalls (int
 * 0x80, TS_COMPAT) number differently and are not reported.
 */

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "sbx_event.h"
#include "events.h"
#include "sbx_trace.h"

#define EPERM 1
#define EXDEV 18
#define EACCES 13
#define EROFS 30
#define SBX_REFUSALS ((1u << EPERM) | (1u << EACCES) | (1u << EXDEV) | (1u << EROFS))

#define AF_UNIX 1
#define AF_INET 2
#define AF_INET6 10
#define SOCK_RAW 3
#define SOCK_TYPE_MASK 0xf
#define AT_FDCWD -100
#define TS_COMPAT 0x0002
#define X32_SYSCALL_BIT 0x40000000

/* Syscall numbers covered by sbx_trace_syscalls (x86_64 ones are < 512). */
#define SBX_TRACE_NR_MAX 512
/* Directory components kept when rebuilding a relative path's base, and
 * dentries visited at most (components plus mount crossings). */
#define SBX_DIR_DEPTH 32
#define SBX_DIR_WALK 64

/* Set at load (bpf/tracer/tracer.go). */
volatile const __u64 sbx_parent_id = 0;
volatile const __u32 sbx_parent_level = 0;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SBX_TRACE_NR_MAX);
	__type(key, __u32);
	__type(value, struct sbx_trace_sys);
} sbx_trace_syscalls SEC(".maps");

/* Per-CPU scratch of sbx_dir_path: the path being built and the state of
 * the walk. The walk's state lives here, not on the stack, on purpose:
 * values loaded from a map are unknown to the verifier, so the states of
 * successive iterations of the walk compare equal and it verifies the
 * loop in a few passes instead of once per possible path. */
struct sbx_trace_scratch {
	char buf[2 * SBX_PATH_MAX];
	__u64 names[SBX_DIR_DEPTH]; /* const unsigned char *, leaf first */
	__u64 d;                    /* struct dentry * being climbed */
	__u64 vm;                   /* struct vfsmount * it is on */
	__u64 m;                    /* struct mount * of vm */
	__u32 n;                    /* names collected */
	__u32 off;                  /* bytes written to buf */
	__s32 status;               /* 0 walking, 1 at the root, -1 cannot tell */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sbx_trace_scratch);
} sbx_trace_scratch SEC(".maps");

/* Anchors that make clang emit BTF for the types Go generates. */
const struct sbx_trace_event *sbx_trace_event_btf __attribute__((unused));
const struct sbx_trace_sys *sbx_trace_sys_btf __attribute__((unused));
const enum sbx_trace_kind *sbx_trace_kind_btf __attribute__((unused));

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* sbx_trace_reserve is sbx_event_reserve (events.h) for the larger
 * struct sbx_trace_event. */
static __always_inline struct sbx_trace_event *sbx_trace_reserve(__s32 err)
{
	struct sbx_trace_event *e;
	__u64 id = 0;

	e = sbx_ring_reserve(sizeof(*e), &id);
	if (!e)
		return NULL;
	/* Too large for one memset: the strings are C strings, so their
	 * first byte is enough. */
	__builtin_memset(&e->ev, 0, sizeof(e->ev));
	e->reserved = 0;
	e->base[0] = 0;
	e->path2[0] = 0;
	e->base2[0] = 0;
	sbx_event_fill(&e->ev, id, SBX_OP_SYSCALL, err);
	return e;
}

/* sbx_fd_path finds the struct path of the directory that dirfd names for
 * the current task (its cwd for AT_FDCWD). 0 on success. */
static __always_inline int sbx_fd_path(long dirfd, struct path *p)
{
	struct task_struct *t = bpf_get_current_task_btf();

	if ((int)dirfd == AT_FDCWD) {
		struct fs_struct *fs = BPF_CORE_READ(t, fs);

		if (!fs)
			return -1;
		return bpf_core_read(p, sizeof(*p), &fs->pwd);
	}
	if ((int)dirfd < 0)
		return -1;
	struct fdtable *fdt = BPF_CORE_READ(t, files, fdt);
	unsigned int max = BPF_CORE_READ(fdt, max_fds);
	struct file **fds = BPF_CORE_READ(fdt, fd);
	struct file *f = NULL;

	if ((unsigned int)dirfd >= max || !fds)
		return -1;
	if (bpf_core_read(&f, sizeof(f), &fds[(unsigned int)dirfd]) || !f)
		return -1;
	return bpf_core_read(p, sizeof(*p), &f->f_path);
}

/* bpf_loop's context must be on the stack: it points to the scratch. */
struct sbx_walk_ctx {
	struct sbx_trace_scratch *w;
};

/* sbx_walk_step climbs one dentry, or from a mount's root to its
 * mountpoint (a bpf_loop callback). */
static long sbx_walk_step(__u64 i, void *ctx)
{
	struct sbx_trace_scratch *w = ((struct sbx_walk_ctx *)ctx)->w;
	struct dentry *d = (void *)w->d;
	struct vfsmount *vm = (void *)w->vm;
	struct mount *m = (void *)w->m, *mp;
	struct dentry *mroot = BPF_CORE_READ(vm, mnt_root);
	struct dentry *parent = BPF_CORE_READ(d, d_parent);

	if (d == mroot || d == parent) {
		mp = BPF_CORE_READ(m, mnt_parent);
		if (!mp || mp == m) {
			w->status = 1; /* the namespace's root */
			return 1;
		}
		w->d = (__u64)BPF_CORE_READ(m, mnt_mountpoint);
		w->m = (__u64)mp;
		w->vm = (__u64)mp + bpf_core_field_offset(struct mount, mnt);
		return 0;
	}
	if (w->n >= SBX_DIR_DEPTH) {
		w->status = -1; /* too deep to tell */
		return 1;
	}
	w->names[w->n & (SBX_DIR_DEPTH - 1)] = (__u64)BPF_CORE_READ(d, d_name.name);
	w->n++;
	w->d = (__u64)parent;
	return 0;
}

/* sbx_copy_step appends "/" and the next name, root first. */
static long sbx_copy_step(__u64 i, void *ctx)
{
	struct sbx_trace_scratch *w = ((struct sbx_walk_ctx *)ctx)->w;
	__u32 o, n = w->n;
	long len;

	if (i >= n || w->off >= SBX_PATH_MAX - 1)
		return 1;
	o = w->off;
	asm volatile("%0 &= 255" : "+r"(o)); /* SBX_PATH_MAX - 1, kept from clang */
	w->buf[o] = '/';
	o = w->off + 1;
	asm volatile("%0 &= 255" : "+r"(o));
	w->off++;
	len = bpf_probe_read_kernel_str(&w->buf[o], SBX_PATH_MAX,
					(const void *)w->names[(n - 1 - i) & (SBX_DIR_DEPTH - 1)]);
	if (len > 1)
		w->off += len - 1;
	return 0;
}

/* sbx_dir_path writes into out (SBX_PATH_MAX bytes) the absolute path of
 * the directory dirfd names, as seen from the task's mount namespace:
 * dentry names up to each mount's root, then across to its mountpoint.
 * Leaves out empty when it cannot tell. A path too long is cut at
 * SBX_PATH_MAX - 1 bytes. */
static __noinline int sbx_dir_path(long dirfd, char *out)
{
	struct sbx_trace_scratch *w;
	struct sbx_walk_ctx c;
	struct path p = {};
	__u32 zero = 0;

	w = bpf_map_lookup_elem(&sbx_trace_scratch, &zero);
	if (!w || sbx_fd_path(dirfd, &p) || !p.dentry || !p.mnt)
		return 0;
	w->d = (__u64)p.dentry;
	w->vm = (__u64)p.mnt;
	w->m = (__u64)p.mnt - bpf_core_field_offset(struct mount, mnt);
	w->n = 0;
	w->off = 0;
	w->status = 0;
	c.w = w;
	bpf_loop(SBX_DIR_WALK, sbx_walk_step, &c, 0);
	if (w->status != 1)
		return 0;
	bpf_loop(SBX_DIR_DEPTH, sbx_copy_step, &c, 0);
	if (w->off == 0) {
		w->buf[0] = '/';
		w->buf[1] = 0;
	}
	if (w->off >= SBX_PATH_MAX)
		w->buf[SBX_PATH_MAX - 1] = 0;
	bpf_probe_read_kernel(out, SBX_PATH_MAX, w->buf);
	out[SBX_PATH_MAX - 1] = 0;
	return 0;
}

static __always_inline __u64 sbx_arg(const __u64 *args, __u8 i)
{
	if (i < 1 || i > 6)
		return 0;
	return args[(i - 1) & 7];
}

/* sbx_read_sockaddr copies the family, port and address (or a unix
 * socket's path, "@" marked by flags bit 0 when abstract) of the user
 * sockaddr at uaddr into e. Returns the family, or 0. */
static __always_inline __u32 sbx_read_sockaddr(struct sbx_trace_event *e, const void *uaddr)
{
	__u16 family = 0, port = 0;

	if (!uaddr || bpf_probe_read_user(&family, sizeof(family), uaddr))
		return 0;
	e->ev.family = family;
	switch (family) {
	case AF_INET:
		bpf_probe_read_user(&port, sizeof(port), uaddr + 2);
		bpf_probe_read_user(e->ev.addr, 4, uaddr + 4);
		break;
	case AF_INET6:
		bpf_probe_read_user(&port, sizeof(port), uaddr + 2);
		bpf_probe_read_user(e->ev.addr, 16, uaddr + 8);
		break;
	case AF_UNIX: {
		char first = 0;

		bpf_probe_read_user(&first, 1, uaddr + 2);
		if (first == 0) {
			e->ev.flags = 1; /* abstract */
			bpf_probe_read_user_str(e->ev.path, 108, uaddr + 3);
		} else {
			bpf_probe_read_user_str(e->ev.path, 108, uaddr + 2);
		}
		break;
	}
	}
	e->ev.port = __builtin_bswap16(port);
	return family;
}

static __always_inline int sbx_inet(__u32 family)
{
	return family == AF_INET || family == AF_INET6;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(sbx_sys_exit, struct pt_regs *regs, long ret)
{
	struct sbx_trace_sys *sys;
	struct sbx_trace_event *e;
	struct task_struct *t;
	__u64 args[6];
	__u32 nr, err;

	if (ret >= 0 || ret < -31)
		return 0;
	err = -ret;
	if (!((1u << err) & SBX_REFUSALS))
		return 0;
	if (bpf_get_current_ancestor_cgroup_id(sbx_parent_level) != sbx_parent_id)
		return 0;
	t = bpf_get_current_task_btf();
	if (BPF_CORE_READ(t, thread_info.status) & TS_COMPAT)
		return 0;
	nr = (__u32)regs->orig_ax & ~X32_SYSCALL_BIT;
	if (nr >= SBX_TRACE_NR_MAX)
		return 0;
	sys = bpf_map_lookup_elem(&sbx_trace_syscalls, &nr);
	if (!sys || !(sys->errs & (1u << err)))
		return 0;

	args[0] = regs->di;
	args[1] = regs->si;
	args[2] = regs->dx;
	args[3] = regs->r10;
	args[4] = regs->r8;
	args[5] = regs->r9;

	/* Refusals the network wall reports itself: EPERM of inet sockets
	 * (but raw ones: the missing CAP_NET_RAW refuses those before the
	 * wall runs) and of connect, bind and sendmsg (any address: only
	 * sockets the wall allowed can get there). */
	if (err == EPERM && sys->kind == SBX_TK_SOCKET && sbx_inet(args[0]) &&
	    (args[1] & SOCK_TYPE_MASK) != SOCK_RAW)
		return 0;

	e = sbx_trace_reserve(err);
	if (!e)
		return 0;
	e->nr = nr;
	__builtin_memcpy(e->args, args, sizeof(args));

	switch (sys->kind) {
	case SBX_TK_SOCKET:
		e->ev.family = args[0];
		e->ev.sock_type = args[1] & SOCK_TYPE_MASK;
		e->ev.protocol = args[2];
		break;
	case SBX_TK_SOCKADDR:
		sbx_read_sockaddr(e, (const void *)sbx_arg(args, sys->addr));
		break;
	case SBX_TK_MSGHDR: {
		void *name = NULL;
		const struct user_msghdr *msg = (const void *)sbx_arg(args, sys->addr);

		if (msg)
			bpf_probe_read_user(&name, sizeof(name), &msg->msg_name);
		sbx_read_sockaddr(e, name);
		break;
	}
	case SBX_TK_OPENHOW: {
		__u64 flags = 0;

		bpf_probe_read_user(&flags, sizeof(flags), (const void *)sbx_arg(args, sys->flags));
		e->ev.flags = flags;
		break;
	}
	default:
		if (sys->flags)
			e->ev.flags = sbx_arg(args, sys->flags);
	}
	if (err == EPERM && (sys->kind == SBX_TK_SOCKADDR || sys->kind == SBX_TK_MSGHDR) &&
	    (sbx_inet(e->ev.family) || e->ev.family == 0)) {
		bpf_ringbuf_discard(e, 0);
		return 0;
	}

	if (sys->path) {
		bpf_probe_read_user_str(e->ev.path, SBX_PATH_MAX, (const void *)sbx_arg(args, sys->path));
		if (e->ev.path[0] && e->ev.path[0] != '/')
			sbx_dir_path(sys->dirfd ? (long)sbx_arg(args, sys->dirfd) : AT_FDCWD, e->base);
	}
	if (sys->path2) {
		bpf_probe_read_user_str(e->path2, SBX_PATH_MAX, (const void *)sbx_arg(args, sys->path2));
		if (e->path2[0] && e->path2[0] != '/')
			sbx_dir_path(sys->dirfd2 ? (long)sbx_arg(args, sys->dirfd2) : AT_FDCWD, e->base2);
	}
	bpf_ringbuf_submit(e, 0);
	return 0;
}
