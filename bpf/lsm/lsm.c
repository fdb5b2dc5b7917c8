//go:build ignore

/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * BPF LSM file tier of sbx.
 *
 * Tasks of a sandbox are recognised by cgroup: the sandbox's cgroup2 id (or
 * that of its nearest registered ancestor, so nested cgroups, every
 * descendant process and io_uring workers are covered) is a key of
 * sbx_lsm_sandboxes. For such tasks:
 *
 *  - file_open: the file must be in the sandbox's allowed set, decided by
 *    identity: walk the dentry ancestry up through the mounts and look up
 *    (sandbox, dev, ino) of each ancestor in sbx_lsm_allow. The nearest hit
 *    gives the access (read-only or read-write); a write open needs
 *    read-write. (sandbox, dev, 0) allows a whole filesystem (the sandbox's
 *    own procfs, pipefs). Never a string from the syscall, so symlinks,
 *    /proc/<pid>/root and /proc/<pid>/fd links cannot alias a denied file.
 *  - path_mknod/mkdir/symlink/unlink/rmdir/truncate/chmod/chown, path_link,
 *    path_rename: the directories and files changed must be read-write (an
 *    O_CREAT open outside the set is stopped here before the file exists).
 *  - file_ioctl: TIOCSTI and TIOCLINUX refused.
 *  - ptrace_access_check, task_kill: only tasks of the same sandbox.
 *  - bpf, sb_mount, move_mount, sb_umount, sb_pivotroot: refused.
 *  - socket_create/connect/bind/sendmsg: every family but AF_UNIX refused
 *    (a second wall behind the cgroup programs; it also holds for sockets
 *    that leaked in from outside), except TCP to the run's egress proxy
 *    when sbx set one (SBX_NET_ALLOW_PROXY), and the run's own loopback
 *    and its forwarders' endpoints on it (sbx_net_policy.fwd) under --net
 *    loopback (SBX_NET_ALLOW_LOOPBACK).
 *  - unix_stream_connect/unix_may_send: no unix socket of another network
 *    namespace (a host daemon's socket file in the workspace).
 *
 * File policy denials return -EACCES, all others -EPERM. Every denial is
 * reported as a struct sbx_event in the run's ring buffer (events.h).
 */

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "sbx_event.h"
#include "events.h"
#include "sbx_net.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define EPERM 1
#define EACCES 13

#define AF_UNIX 1
#define AF_INET 2
#define AF_INET6 10
#define AF_NETLINK 16
#define NETLINK_ROUTE 0

#define FMODE_WRITE 0x2
#define O_TRUNC 01000

#define TIOCSTI 0x5412
#define TIOCLINUX 0x541C

/* Deepest dentry ancestry (crossing mounts counts one step) searched for
 * an allowed ancestor. A file deeper than this is denied (fail closed). */
#define SBX_MAX_DEPTH 64
/* Components put into an event's path by dentry_path. */
#define SBX_PATH_DEPTH 64

/* Access stored in sbx_lsm_allow; a larger value includes the smaller. */
enum sbx_access {
	SBX_ACCESS_NONE = 0,
	SBX_ACCESS_READ = 1,
	SBX_ACCESS_WRITE = 2,
	/* Outside the order above: the listed directory itself may be opened
	 * for reading (listed), nothing below it; an ancestry walk passes it
	 * by. It is the sandbox's root, which "ls /" opens. */
	SBX_ACCESS_LIST = 3,
};

/* What kind of mount operation an SBX_OP_SB_MOUNT event was (flags). */
enum sbx_mount_kind {
	SBX_MOUNT_MOUNT = 1,
	SBX_MOUNT_MOVE = 2,
	SBX_MOUNT_UMOUNT = 3,
	SBX_MOUNT_PIVOT_ROOT = 4,
};

/* Key of sbx_lsm_allow: sandbox cgroup id, inode number (0: whole
 * filesystem) and device in the kernel's encoding (major << 20 | minor). */
struct sbx_allow_key {
	__u64 sandbox;
	__u64 ino;
	__u32 dev;
	__u32 pad;
};

/* A loader's self-test (value of sbx_lsm_selftest, keyed by the loader's
 * tgid): its open of (dev, ino) is refused and counted, proving that the
 * programs run and that their verdict is honoured. */
struct sbx_selftest {
	__u64 ino;
	__u32 dev;
	__u32 pad;
	__u64 hits;
};

/* Force BTF for the enums the Go side gets from bpf2go (-type). */
const enum sbx_access *unused_access __attribute__((unused));
const enum sbx_mount_kind *unused_mount_kind __attribute__((unused));
const enum sbx_net_flag *unused_net_flag __attribute__((unused));

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SBX_MAX_RUNS);
	__type(key, __u64);
	__type(value, struct sbx_net_policy);
} sbx_lsm_sandboxes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct sbx_allow_key);
	__type(value, __u32);
} sbx_lsm_allow SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, struct sbx_selftest);
} sbx_lsm_selftest SEC(".maps");

/* Scratch space of dentry_path: names are written backwards from the
 * middle, so every masked offset plus masked length stays inside. */
#define SBX_SCRATCH (2 * SBX_PATH_MAX)
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, char[SBX_SCRATCH]);
} sbx_lsm_scratch SEC(".maps");

/* current_sandbox returns the sandbox cgroup id of the current task, 0 if
 * the task belongs to no sandbox. */
static __always_inline __u64 current_sandbox(void)
{
	__u64 id = 0;

	if (!sbx_lookup_run(&sbx_lsm_sandboxes, &id))
		return 0;
	return id;
}

/*
 * The ancestry walks below run as bpf_loop callbacks: verified once, where
 * an open-coded loop makes the verifier explore every combination of
 * "parent" and "mount crossing" steps.
 */

/* walk_step moves *dentry one step up: to its parent, or at a mount's root
 * to the mountpoint in the parent mount. It returns false at the root of
 * the mount tree and at a disconnected dentry (open_by_handle_at), where
 * the walk ends. */
static __always_inline bool walk_step(struct dentry **dentry, struct mount **mnt)
{
	struct dentry *d = *dentry, *parent, *root;
	struct mount *m = *mnt, *mparent;

	root = BPF_CORE_READ(m, mnt.mnt_root);
	if (d == root) {
		mparent = BPF_CORE_READ(m, mnt_parent);
		if (!mparent || mparent == m)
			return false;
		*dentry = BPF_CORE_READ(m, mnt_mountpoint);
		*mnt = mparent;
		return true;
	}
	parent = BPF_CORE_READ(d, d_parent);
	if (!parent || parent == d)
		return false;
	*dentry = parent;
	return true;
}

struct access_walk {
	struct sbx_allow_key key;
	struct dentry *dentry;
	struct mount *mnt;
	__u32 access;
};

/* Locals, not w->field, go into BPF_CORE_READ: the macro would record a
 * CO-RE relocation for the access to this file's own struct. */
static long access_step(__u64 i, struct access_walk *w)
{
	struct dentry *d = w->dentry;
	struct inode *inode = BPF_CORE_READ(d, d_inode);
	__u32 *acc;

	if (inode) {
		w->key.dev = BPF_CORE_READ(d, d_sb, s_dev);
		w->key.ino = BPF_CORE_READ(inode, i_ino);
		acc = bpf_map_lookup_elem(&sbx_lsm_allow, &w->key);
		if (acc && *acc == SBX_ACCESS_LIST) {
			/* Step 0 is the opened file itself. */
			if (i == 0) {
				w->access = SBX_ACCESS_READ;
				return 1;
			}
		} else if (acc) {
			w->access = *acc;
			return 1;
		}
	}
	return walk_step(&w->dentry, &w->mnt) ? 0 : 1;
}

/*
 * policy_access returns the access the sandbox has to dentry (seen through
 * vmnt): that of the nearest ancestor (the dentry itself first) listed in
 * sbx_lsm_allow, or of its filesystem, else SBX_ACCESS_NONE. The walk
 * follows d_parent and, at a mount's root, continues at its mountpoint in
 * the parent mount; it stops at the root of the mount tree and at
 * disconnected dentries, which are denied. So is a file deeper than
 * SBX_MAX_DEPTH steps (fail closed).
 */
static __always_inline __u32 policy_access(__u64 sandbox, struct dentry *dentry,
					   struct vfsmount *vmnt)
{
	struct access_walk w = {
		.key = { .sandbox = sandbox },
		.dentry = dentry,
		.mnt = container_of(vmnt, struct mount, mnt),
	};
	__u32 *acc;

	w.key.dev = BPF_CORE_READ(dentry, d_sb, s_dev);
	w.key.ino = 0;
	acc = bpf_map_lookup_elem(&sbx_lsm_allow, &w.key);
	if (acc)
		return *acc;
	bpf_loop(SBX_MAX_DEPTH, access_step, &w, 0);
	return w.access;
}

#define SBX_MASK (SBX_PATH_MAX - 1)

struct path_walk {
	struct dentry *dentry;
	struct mount *mnt;
	int pos;	/* start of the path in the scratch buffer */
	int complete;	/* reached the root */
};

static long path_step(__u64 i, struct path_walk *w)
{
	struct dentry *d = w->dentry;
	struct mount *m = w->mnt;
	const unsigned char *name;
	__u32 zero = 0, len;
	int pos = w->pos;
	char *s;

	if (BPF_CORE_READ(d, d_parent) != d && d != BPF_CORE_READ(m, mnt.mnt_root)) {
		s = bpf_map_lookup_elem(&sbx_lsm_scratch, &zero);
		if (!s)
			return 1;
		len = BPF_CORE_READ(d, d_name.len);
		name = BPF_CORE_READ(d, d_name.name);
		if (len == 0 || pos < 1 || len + 1 >= (__u32)pos)
			return 1;
		pos -= len;
		bpf_probe_read_kernel(s + (pos & SBX_MASK), len & SBX_MASK, name);
		pos--;
		s[pos & SBX_MASK] = '/';
		w->pos = pos;
	}
	if (!walk_step(&w->dentry, &w->mnt)) {
		w->complete = 1;
		return 1;
	}
	return 0;
}

/*
 * dentry_path writes the path of dentry (as seen through vmnt, up to the
 * root of its mount tree) into buf, for events of hooks where bpf_d_path is
 * not allowed. A path deeper than SBX_PATH_DEPTH components or longer than
 * the buffer keeps its last components and starts with "...".
 */
static __always_inline void dentry_path(struct dentry *dentry, struct vfsmount *vmnt,
					char *buf)
{
	struct path_walk w = {
		.dentry = dentry,
		.mnt = container_of(vmnt, struct mount, mnt),
		.pos = SBX_PATH_MAX - 1,
	};
	__u32 zero = 0;
	int pos;
	char *s;

	s = bpf_map_lookup_elem(&sbx_lsm_scratch, &zero);
	if (!s)
		return;
	s[SBX_PATH_MAX - 1] = 0;
	bpf_loop(SBX_PATH_DEPTH, path_step, &w, 0);
	pos = w.pos;
	if (pos == SBX_PATH_MAX - 1) {
		/* The root itself. */
		pos--;
		s[pos & SBX_MASK] = '/';
	}
	if (!w.complete && pos >= 4) {
		pos -= 3;
		s[pos & SBX_MASK] = '.';
		s[(pos + 1) & SBX_MASK] = '.';
		s[(pos + 2) & SBX_MASK] = '.';
	}
	if (pos < 1 || pos >= SBX_PATH_MAX)
		return;
	bpf_probe_read_kernel(buf, (SBX_PATH_MAX - pos) & SBX_MASK, s + (pos & SBX_MASK));
}

/* report_path reports a denied path operation on dentry. */
static __always_inline void report_path(__u32 op, __s32 err, struct dentry *dentry,
					struct vfsmount *mnt, __u32 flags)
{
	struct sbx_event *e = sbx_event_reserve(op, err);

	if (!e)
		return;
	e->flags = flags;
	dentry_path(dentry, mnt, e->path);
	bpf_ringbuf_submit(e, 0);
}

/* report reports a denial that has no path. */
static __always_inline void report(__u32 op, __s32 err, __u32 flags)
{
	struct sbx_event *e = sbx_event_reserve(op, err);

	if (!e)
		return;
	e->flags = flags;
	bpf_ringbuf_submit(e, 0);
}

/* selftest_hit refuses the loader's canary open. */
static __always_inline bool selftest_hit(struct file *file)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct sbx_selftest *st;

	st = bpf_map_lookup_elem(&sbx_lsm_selftest, &tgid);
	if (!st)
		return false;
	if (st->ino != BPF_CORE_READ(file, f_inode, i_ino) ||
	    st->dev != BPF_CORE_READ(file, f_inode, i_sb, s_dev))
		return false;
	__sync_fetch_and_add(&st->hits, 1);
	return true;
}

SEC("lsm/file_open")
int BPF_PROG(sbx_file_open, struct file *file, int ret)
{
	__u32 need = SBX_ACCESS_READ, acc, flags;
	struct sbx_event *e;
	__u64 sandbox;

	if (ret)
		return ret;
	if (selftest_hit(file))
		return -EACCES;
	sandbox = current_sandbox();
	if (!sandbox)
		return 0;

	flags = BPF_CORE_READ(file, f_flags);
	if ((BPF_CORE_READ(file, f_mode) & FMODE_WRITE) || (flags & O_TRUNC))
		need = SBX_ACCESS_WRITE;
	acc = policy_access(sandbox, BPF_CORE_READ(file, f_path.dentry),
			    BPF_CORE_READ(file, f_path.mnt));
	if (acc >= need)
		return 0;

	e = sbx_event_reserve(SBX_OP_FILE_OPEN, EACCES);
	if (e) {
		e->flags = flags;
		bpf_d_path((struct path *)&file->f_path, e->path, sizeof(e->path));
		bpf_ringbuf_submit(e, 0);
	}
	return -EACCES;
}

/* deny_create is the verdict on creating dentry in dir. */
static __always_inline int deny_create(const struct path *dir, struct dentry *dentry,
				       __u32 op, __u32 mode)
{
	struct vfsmount *mnt = BPF_CORE_READ(dir, mnt);
	__u64 sandbox = current_sandbox();

	if (!sandbox)
		return 0;
	if (policy_access(sandbox, BPF_CORE_READ(dir, dentry), mnt) >= SBX_ACCESS_WRITE)
		return 0;
	report_path(op, EACCES, dentry, mnt, mode);
	return -EACCES;
}

/* deny_change is the verdict on changing (removing, truncating, chmod)
 * the existing dentry. */
static __always_inline int deny_change(struct vfsmount *mnt, struct dentry *dentry,
				       __u32 op, __u32 flags)
{
	__u64 sandbox = current_sandbox();

	if (!sandbox)
		return 0;
	if (policy_access(sandbox, dentry, mnt) >= SBX_ACCESS_WRITE)
		return 0;
	report_path(op, EACCES, dentry, mnt, flags);
	return -EACCES;
}

SEC("lsm/path_mknod")
int BPF_PROG(sbx_path_mknod, const struct path *dir, struct dentry *dentry, umode_t mode,
	     unsigned int dev, int ret)
{
	if (ret)
		return ret;
	return deny_create(dir, dentry, SBX_OP_INODE_CREATE, mode);
}

SEC("lsm/path_mkdir")
int BPF_PROG(sbx_path_mkdir, const struct path *dir, struct dentry *dentry, umode_t mode,
	     int ret)
{
	if (ret)
		return ret;
	return deny_create(dir, dentry, SBX_OP_INODE_CREATE, mode);
}

SEC("lsm/path_symlink")
int BPF_PROG(sbx_path_symlink, const struct path *dir, struct dentry *dentry,
	     const char *old_name, int ret)
{
	if (ret)
		return ret;
	return deny_create(dir, dentry, SBX_OP_INODE_CREATE, 0);
}

SEC("lsm/path_unlink")
int BPF_PROG(sbx_path_unlink, const struct path *dir, struct dentry *dentry, int ret)
{
	if (ret)
		return ret;
	return deny_change(BPF_CORE_READ(dir, mnt), dentry, SBX_OP_PATH_UNLINK, 0);
}

SEC("lsm/path_rmdir")
int BPF_PROG(sbx_path_rmdir, const struct path *dir, struct dentry *dentry, int ret)
{
	if (ret)
		return ret;
	return deny_change(BPF_CORE_READ(dir, mnt), dentry, SBX_OP_PATH_UNLINK, 0);
}

SEC("lsm/path_truncate")
int BPF_PROG(sbx_path_truncate, const struct path *path, int ret)
{
	if (ret)
		return ret;
	return deny_change(BPF_CORE_READ(path, mnt), BPF_CORE_READ(path, dentry),
			   SBX_OP_PATH_TRUNCATE, 0);
}

SEC("lsm/path_chmod")
int BPF_PROG(sbx_path_chmod, const struct path *path, umode_t mode, int ret)
{
	if (ret)
		return ret;
	return deny_change(BPF_CORE_READ(path, mnt), BPF_CORE_READ(path, dentry),
			   SBX_OP_PATH_SETATTR, mode);
}

SEC("lsm/path_chown")
int BPF_PROG(sbx_path_chown, const struct path *path, __u64 uid, __u64 gid, int ret)
{
	if (ret)
		return ret;
	return deny_change(BPF_CORE_READ(path, mnt), BPF_CORE_READ(path, dentry),
			   SBX_OP_PATH_SETATTR, 0);
}

/* A hard link makes the file reachable under new_dir, whose access it then
 * gets: both the file and new_dir must be read-write. Links never cross
 * mounts, so old_dentry is seen through new_dir's mount. */
SEC("lsm/path_link")
int BPF_PROG(sbx_path_link, struct dentry *old_dentry, const struct path *new_dir,
	     struct dentry *new_dentry, int ret)
{
	struct vfsmount *mnt = BPF_CORE_READ(new_dir, mnt);
	__u64 sandbox;

	if (ret)
		return ret;
	sandbox = current_sandbox();
	if (!sandbox)
		return 0;
	if (policy_access(sandbox, old_dentry, mnt) >= SBX_ACCESS_WRITE &&
	    policy_access(sandbox, BPF_CORE_READ(new_dir, dentry), mnt) >= SBX_ACCESS_WRITE)
		return 0;
	report_path(SBX_OP_PATH_LINK, EACCES, old_dentry, mnt, 0);
	return -EACCES;
}

/* A rename moves old_dentry (with its subtree) from old_dir to new_dir and
 * may replace new_dentry: all of them must be read-write. */
SEC("lsm/path_rename")
int BPF_PROG(sbx_path_rename, const struct path *old_dir, struct dentry *old_dentry,
	     const struct path *new_dir, struct dentry *new_dentry, unsigned int flags,
	     int ret)
{
	struct vfsmount *mnt = BPF_CORE_READ(old_dir, mnt);
	__u64 sandbox;

	if (ret)
		return ret;
	sandbox = current_sandbox();
	if (!sandbox)
		return 0;
	if (policy_access(sandbox, old_dentry, mnt) >= SBX_ACCESS_WRITE &&
	    policy_access(sandbox, BPF_CORE_READ(new_dir, dentry), mnt) >= SBX_ACCESS_WRITE &&
	    (!BPF_CORE_READ(new_dentry, d_inode) ||
	     policy_access(sandbox, new_dentry, mnt) >= SBX_ACCESS_WRITE))
		return 0;
	report_path(SBX_OP_PATH_RENAME, EACCES, old_dentry, mnt, flags);
	return -EACCES;
}

SEC("lsm/file_ioctl")
int BPF_PROG(sbx_file_ioctl, struct file *file, unsigned int cmd, unsigned long arg, int ret)
{
	struct sbx_event *e;

	if (ret)
		return ret;
	if (cmd != TIOCSTI && cmd != TIOCLINUX)
		return 0;
	if (!current_sandbox())
		return 0;
	e = sbx_event_reserve(SBX_OP_FILE_IOCTL, EPERM);
	if (e) {
		e->flags = cmd;
		bpf_d_path((struct path *)&file->f_path, e->path, sizeof(e->path));
		bpf_ringbuf_submit(e, 0);
	}
	return -EPERM;
}

/* task_in_sandbox tells whether t's cgroup is sandbox or below it. */
static __always_inline bool task_in_sandbox(struct task_struct *t, __u64 sandbox)
{
	struct cgroup *cg = BPF_CORE_READ(t, cgroups, dfl_cgrp);
	int i;

	for (i = 0; i < SBX_MAX_CGROUP_LEVEL && cg; i++) {
		if (BPF_CORE_READ(cg, kn, id) == sandbox)
			return true;
		/* self is the first member of struct cgroup. */
		cg = (struct cgroup *)BPF_CORE_READ(cg, self.parent);
	}
	return false;
}

/* deny_task is the verdict on the current task acting on target. */
static __always_inline int deny_task(struct task_struct *target, __u32 op, __u32 flags)
{
	__u64 sandbox = current_sandbox();
	char comm[SBX_COMM_LEN];
	struct sbx_event *e;

	if (!sandbox || task_in_sandbox(target, sandbox))
		return 0;
	e = sbx_event_reserve(op, EPERM);
	if (e) {
		e->flags = flags;
		/* The target, as "<pid> <comm>". */
		BPF_CORE_READ_STR_INTO(&comm, target, comm);
		BPF_SNPRINTF(e->path, sizeof(e->path), "%d %s", BPF_CORE_READ(target, tgid), comm);
		bpf_ringbuf_submit(e, 0);
	}
	return -EPERM;
}

SEC("lsm/ptrace_access_check")
int BPF_PROG(sbx_ptrace_access_check, struct task_struct *child, unsigned int mode, int ret)
{
	if (ret)
		return ret;
	return deny_task(child, SBX_OP_PTRACE, mode);
}

SEC("lsm/task_kill")
int BPF_PROG(sbx_task_kill, struct task_struct *p, struct kernel_siginfo *info, int sig,
	     const struct cred *cred, int ret)
{
	if (ret)
		return ret;
	return deny_task(p, SBX_OP_TASK_KILL, sig);
}

SEC("lsm/bpf")
int BPF_PROG(sbx_bpf, int cmd)
{
	if (!current_sandbox())
		return 0;
	report(SBX_OP_BPF, EPERM, cmd);
	return -EPERM;
}

SEC("lsm/sb_mount")
int BPF_PROG(sbx_sb_mount, const char *dev_name, const struct path *path, const char *type,
	     unsigned long flags, void *data, int ret)
{
	struct sbx_event *e;

	if (ret)
		return ret;
	if (!current_sandbox())
		return 0;
	e = sbx_event_reserve(SBX_OP_SB_MOUNT, EPERM);
	if (e) {
		e->flags = SBX_MOUNT_MOUNT;
		bpf_d_path((struct path *)path, e->path, sizeof(e->path));
		bpf_ringbuf_submit(e, 0);
	}
	return -EPERM;
}

SEC("lsm/move_mount")
int BPF_PROG(sbx_move_mount, const struct path *from_path, const struct path *to_path, int ret)
{
	if (ret)
		return ret;
	if (!current_sandbox())
		return 0;
	report_path(SBX_OP_SB_MOUNT, EPERM, BPF_CORE_READ(to_path, dentry),
		    BPF_CORE_READ(to_path, mnt), SBX_MOUNT_MOVE);
	return -EPERM;
}

SEC("lsm/sb_umount")
int BPF_PROG(sbx_sb_umount, struct vfsmount *mnt, int flags, int ret)
{
	if (ret)
		return ret;
	if (!current_sandbox())
		return 0;
	report_path(SBX_OP_SB_MOUNT, EPERM, BPF_CORE_READ(mnt, mnt_root), mnt,
		    SBX_MOUNT_UMOUNT);
	return -EPERM;
}

SEC("lsm/sb_pivotroot")
int BPF_PROG(sbx_sb_pivotroot, const struct path *old_path, const struct path *new_path,
	     int ret)
{
	if (ret)
		return ret;
	if (!current_sandbox())
		return 0;
	report_path(SBX_OP_SB_MOUNT, EPERM, BPF_CORE_READ(new_path, dentry),
		    BPF_CORE_READ(new_path, mnt), SBX_MOUNT_PIVOT_ROOT);
	return -EPERM;
}

/* What current_net found for the current task. */
enum sbx_net_verdict {
	SBX_NET_FREE,    /* in no sandbox, or its run shares the host network */
	SBX_NET_WALLED,  /* sandboxed, no exception */
	SBX_NET_PROXIED, /* sandboxed, its run may reach the proxy in *px */
};

/* current_net looks up the current task's run and copies its entry to *px
 * (by value: a pointer chosen by a condition can compile to a masked
 * select that the verifier refuses on map values). */
static __always_inline enum sbx_net_verdict current_net(struct sbx_net_policy *px)
{
	struct sbx_net_policy *sb;
	__u64 id = 0;

	sb = sbx_lookup_run(&sbx_lsm_sandboxes, &id);
	if (!sb)
		return SBX_NET_FREE;
	__builtin_memcpy(px, sb, sizeof(*px));
	if (px->flags & SBX_NET_ALLOW_ALL)
		return SBX_NET_FREE;
	if (px->flags & SBX_NET_ALLOW_PROXY)
		return SBX_NET_PROXIED;
	return SBX_NET_WALLED;
}

SEC("lsm/socket_create")
int BPF_PROG(sbx_socket_create, int family, int type, int protocol, int kern, int ret)
{
	struct sbx_net_policy px = {};
	enum sbx_net_verdict v;
	struct sbx_event *e;

	if (ret)
		return ret;
	if (kern || family == AF_UNIX)
		return 0;
	v = current_net(&px);
	if (v == SBX_NET_FREE)
		return 0;
	if ((px.flags & SBX_NET_ALLOW_LOOPBACK) &&
	    (family == AF_INET || family == AF_INET6 ||
	     (family == AF_NETLINK && protocol == NETLINK_ROUTE)))
		return 0;
	if (v == SBX_NET_PROXIED && family == px.proxy_family && type == SOCK_STREAM &&
	    (protocol == 0 || protocol == IPPROTO_TCP))
		return 0;
	/* Report the protocol the kernel will pick for 0, as the cgroup wall
	 * does (it sees the created sock's sk_protocol), so that a denial
	 * reads the same whichever tier refused it. */
	if (protocol == 0 && (family == AF_INET || family == AF_INET6)) {
		if (type == SOCK_STREAM)
			protocol = IPPROTO_TCP;
		else if (type == SOCK_DGRAM)
			protocol = IPPROTO_UDP;
	}
	e = sbx_event_reserve(SBX_OP_SOCKET_CREATE, EPERM);
	if (e) {
		e->family = family;
		e->sock_type = type;
		e->protocol = protocol;
		bpf_ringbuf_submit(e, 0);
	}
	return -EPERM;
}

/* fill_addr copies an inet address and port into the event. */
static __always_inline void fill_addr(struct sbx_event *e, struct sockaddr *addr)
{
	__u16 fam;

	if (!addr)
		return;
	fam = BPF_CORE_READ(addr, sa_family);
	if (fam == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)addr;

		e->port = bpf_ntohs(BPF_CORE_READ(in, sin_port));
		bpf_probe_read_kernel(e->addr, 4, &in->sin_addr);
	} else if (fam == AF_INET6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)addr;

		e->port = bpf_ntohs(BPF_CORE_READ(in6, sin6_port));
		bpf_probe_read_kernel(e->addr, 16, &in6->sin6_addr);
	}
}

/* is_proxy reports whether addr is exactly the proxy endpoint of px. */
static __always_inline bool is_proxy(struct sbx_net_policy *px, struct sockaddr *addr)
{
	__u8 a[16] = {};
	__u16 fam, port;

	fam = BPF_CORE_READ(addr, sa_family);
	if (fam != px->proxy_family)
		return false;
	if (fam == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)addr;

		port = bpf_ntohs(BPF_CORE_READ(in, sin_port));
		bpf_probe_read_kernel(a, 4, &in->sin_addr);
	} else if (fam == AF_INET6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)addr;

		port = bpf_ntohs(BPF_CORE_READ(in6, sin6_port));
		bpf_probe_read_kernel(a, 16, &in6->sin6_addr);
	} else {
		return false;
	}
	if (port != px->proxy_port)
		return false;
	return sbx_same_addr16(px->proxy_addr, a);
}

/* peer_is_proxy reports whether sock is connected to exactly the proxy
 * endpoint of px (a send without an address goes to the peer). */
static __always_inline bool peer_is_proxy(struct sbx_net_policy *px, struct socket *sock)
{
	struct sock *sk = BPF_CORE_READ(sock, sk);
	__u8 a[16] = {};

	if (bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport)) != px->proxy_port)
		return false;
	if (px->proxy_family == AF_INET) {
		__be32 d = BPF_CORE_READ(sk, __sk_common.skc_daddr);

		__builtin_memcpy(a, &d, 4);
	} else {
		BPF_CORE_READ_INTO(&a, sk, __sk_common.skc_v6_daddr);
	}
	return sbx_same_addr16(px->proxy_addr, a);
}

/* sock_dest reads where using sock with addr goes: the family, address
 * (IPv4 in a[0]) and port of addr, or without one of the socket's peer.
 * It reports false for an address of another family than the socket's. */
static __always_inline bool sock_dest(struct socket *sock, struct sockaddr *addr, __u16 *fam,
				      __u32 a[4], __u16 *port)
{
	struct sock *sk = BPF_CORE_READ(sock, sk);

	*fam = BPF_CORE_READ(sk, __sk_common.skc_family);
	if (addr) {
		if (BPF_CORE_READ(addr, sa_family) != *fam)
			return false;
		if (*fam == AF_INET) {
			bpf_probe_read_kernel(a, 4, &((struct sockaddr_in *)addr)->sin_addr);
			*port = bpf_ntohs(BPF_CORE_READ((struct sockaddr_in *)addr, sin_port));
		} else {
			bpf_probe_read_kernel(a, 16, &((struct sockaddr_in6 *)addr)->sin6_addr);
			*port = bpf_ntohs(BPF_CORE_READ((struct sockaddr_in6 *)addr, sin6_port));
		}
		return true;
	}
	/* a is a pointer here: give the size (BPF_CORE_READ_INTO would take
	 * sizeof(*a), one word). */
	if (*fam == AF_INET)
		a[0] = BPF_CORE_READ(sk, __sk_common.skc_daddr);
	else
		bpf_core_read(a, 16, &sk->__sk_common.skc_v6_daddr);
	*port = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	return true;
}

/* own_netns reports whether sock lives in the current task's network
 * namespace: a sandboxed task's is the run's own; a socket leaked in from
 * the host lives in the host's, where loopback is the host's. */
static __always_inline bool own_netns(struct socket *sock)
{
	struct task_struct *task = bpf_get_current_task_btf();

	return BPF_CORE_READ(sock, sk, __sk_common.skc_net.net) ==
	       BPF_CORE_READ(task, nsproxy, net_ns);
}

/* loopback_ok reports whether a run with SBX_NET_ALLOW_LOOPBACK may
 * use sock with addr: sock lives in the run's namespace (own_netns) and,
 * unless binding, addr (or, without one, the socket's peer) is
 * 127.0.0.0/8, ::1 or ::ffff:127.0.0.0/104. */
static __always_inline bool loopback_ok(struct socket *sock, struct sockaddr *addr, bool binding)
{
	__u32 a[4] = {};
	__u16 fam, port;

	if (!own_netns(sock))
		return false;
	if (binding)
		return true;
	if (!sock_dest(sock, addr, &fam, a, &port))
		return false;
	if (fam == AF_INET)
		return (bpf_ntohl(a[0]) >> 24) == 127;
	if (a[0] || a[1])
		return false;
	return (a[2] == 0 && a[3] == bpf_htonl(1)) ||
	       (a[2] == bpf_htonl(0xffff) && (bpf_ntohl(a[3]) >> 24) == 127);
}

/* forward_ok reports whether a run with SBX_NET_ALLOW_LOOPBACK may
 * connect (or send on) stream socket sock to addr (or its peer): sock lives
 * in the run's namespace and the destination is one of px's forwarder
 * endpoints (an IPv4 one also as ::ffff:a.b.c.d on an IPv6 socket). */
static __always_inline bool forward_ok(struct sbx_net_policy *px, struct socket *sock,
				       struct sockaddr *addr)
{
	__u32 a[4] = {};
	__u16 fam, port;

	if (!px->nfwd || BPF_CORE_READ(sock, type) != SOCK_STREAM || !own_netns(sock))
		return false;
	if (!sock_dest(sock, addr, &fam, a, &port))
		return false;
	if (fam == AF_INET6 && a[0] == 0 && a[1] == 0 && a[2] == bpf_htonl(0xffff)) {
		fam = AF_INET;
		a[0] = a[3];
		a[2] = a[3] = 0;
	}
	return sbx_is_forward(px, fam, (const __u8 *)a, port);
}

/* deny_sock is the verdict on using sock (connect, bind, send) with addr:
 * 0 outside sandboxes, for AF_UNIX, and for the run's proxy (a TCP socket
 * of its family connected, or sending, to exactly its endpoint; never a
 * bind); -EPERM, reported, for everything else. */
static __always_inline int deny_sock(struct socket *sock, struct sockaddr *addr, __u32 op4,
				     __u32 op6, bool binding)
{
	__u16 fam = BPF_CORE_READ(sock, sk, __sk_common.skc_family);
	struct sbx_net_policy px = {};
	enum sbx_net_verdict v;
	struct sbx_event *e;

	if (fam == AF_UNIX)
		return 0;
	v = current_net(&px);
	if (v == SBX_NET_FREE)
		return 0;
	if ((px.flags & SBX_NET_ALLOW_LOOPBACK) && (fam == AF_INET || fam == AF_INET6) &&
	    (loopback_ok(sock, addr, binding) || (!binding && forward_ok(&px, sock, addr))))
		return 0;
	if (v == SBX_NET_PROXIED && !binding && fam == px.proxy_family &&
	    BPF_CORE_READ(sock, type) == SOCK_STREAM &&
	    (addr ? is_proxy(&px, addr) : peer_is_proxy(&px, sock)))
		return 0;
	e = sbx_event_reserve(fam == AF_INET6 ? op6 : op4, EPERM);
	if (e) {
		e->family = fam;
		e->sock_type = BPF_CORE_READ(sock, type);
		e->protocol = BPF_CORE_READ(sock, sk, sk_protocol);
		fill_addr(e, addr);
		bpf_ringbuf_submit(e, 0);
	}
	return -EPERM;
}

SEC("lsm/socket_connect")
int BPF_PROG(sbx_socket_connect, struct socket *sock, struct sockaddr *address, int addrlen,
	     int ret)
{
	if (ret)
		return ret;
	return deny_sock(sock, address, SBX_OP_SOCKET_CONNECT, SBX_OP_SOCKET_CONNECT, false);
}

SEC("lsm/socket_bind")
int BPF_PROG(sbx_socket_bind, struct socket *sock, struct sockaddr *address, int addrlen,
	     int ret)
{
	if (ret)
		return ret;
	return deny_sock(sock, address, SBX_OP_BIND4, SBX_OP_BIND6, true);
}

SEC("lsm/socket_sendmsg")
int BPF_PROG(sbx_socket_sendmsg, struct socket *sock, struct msghdr *msg, int size, int ret)
{
	if (ret)
		return ret;
	/* No address: the socket's peer decides; with one: TCP Fast Open or
	 * a datagram. */
	return deny_sock(sock, (struct sockaddr *)BPF_CORE_READ(msg, msg_name), SBX_OP_SENDMSG4,
			 SBX_OP_SENDMSG6, false);
}

/*
 * deny_unix_peer is the verdict on a sandboxed task reaching the unix
 * socket other from its socket sk: refused (EPERM, reported with the
 * peer's path) when other lives in another network namespace. A sandbox
 * has its own, so that is a socket of the host (a daemon's, say, whose
 * socket file lies in the workspace): pathname sockets are found through
 * the file system, not the namespace, and the file tiers cannot tell a
 * connect from an open. Sockets the sandbox made itself stay usable.
 */
static __always_inline int deny_unix_peer(struct sock *sk, struct sock *other)
{
	struct unix_address *ua;
	struct sbx_event *e;

	if (!current_sandbox())
		return 0;
	if (BPF_CORE_READ(sk, __sk_common.skc_net.net) == BPF_CORE_READ(other, __sk_common.skc_net.net))
		return 0;
	e = sbx_event_reserve(SBX_OP_SOCKET_CONNECT, EPERM);
	if (e) {
		e->family = AF_UNIX;
		e->sock_type = BPF_CORE_READ(sk, sk_type);
		ua = BPF_CORE_READ((struct unix_sock *)other, addr);
		if (ua)
			bpf_probe_read_kernel_str(e->path, sizeof(e->path), &ua->name[0].sun_path);
		bpf_ringbuf_submit(e, 0);
	}
	return -EPERM;
}

SEC("lsm/unix_stream_connect")
int BPF_PROG(sbx_unix_stream_connect, struct sock *sock, struct sock *other, struct sock *newsk,
	     int ret)
{
	if (ret)
		return ret;
	return deny_unix_peer(sock, other);
}

SEC("lsm/unix_may_send")
int BPF_PROG(sbx_unix_may_send, struct socket *sock, struct socket *other, int ret)
{
	if (ret)
		return ret;
	return deny_unix_peer(BPF_CORE_READ(sock, sk), BPF_CORE_READ(other, sk));
}

/* [0]: tgid whose opens sbx_probe_file_open counts, [1]: the count. Used
 * only by the Go probe LSMSupported, which loads nothing else. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} sbx_lsm_probe SEC(".maps");

SEC("lsm/file_open")
int BPF_PROG(sbx_probe_file_open, struct file *file)
{
	__u32 k = 0;
	__u64 *tgid = bpf_map_lookup_elem(&sbx_lsm_probe, &k), *n;

	if (!tgid || *tgid != bpf_get_current_pid_tgid() >> 32)
		return 0;
	k = 1;
	n = bpf_map_lookup_elem(&sbx_lsm_probe, &k);
	if (n)
		__sync_fetch_and_add(n, 1);
	return 0;
}
