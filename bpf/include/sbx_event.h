/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Shared definitions of sbx's BPF programs: the violation event every
 * program writes to the ring buffer, and the operation codes it carries.
 * Both the cgroup socket programs (net.c) and the LSM programs (lsm.c)
 * include this file; the Go side gets the types from bpf2go (-type).
 */
#ifndef SBX_EVENT_H
#define SBX_EVENT_H

#define SBX_PATH_MAX 256
#define SBX_COMM_LEN 16

/* Operation that was denied. Keep in sync with the Op constants in Go
 * (bpf/events/events.go), which a test checks against these values. */
enum sbx_op {
	SBX_OP_NONE = 0,
	SBX_OP_SOCKET_CREATE = 1,
	SBX_OP_CONNECT4 = 2,
	SBX_OP_CONNECT6 = 3,
	SBX_OP_SENDMSG4 = 4,
	SBX_OP_SENDMSG6 = 5,
	SBX_OP_BIND4 = 6,
	SBX_OP_BIND6 = 7,
	SBX_OP_FILE_OPEN = 8,
	SBX_OP_PATH_LINK = 9,
	SBX_OP_PATH_RENAME = 10,
	SBX_OP_FILE_IOCTL = 11,
	SBX_OP_PTRACE = 12,
	SBX_OP_TASK_KILL = 13,
	SBX_OP_BPF = 14,
	SBX_OP_SB_MOUNT = 15,
	SBX_OP_INODE_CREATE = 16,
	SBX_OP_SOCKET_CONNECT = 17,
	SBX_OP_PATH_UNLINK = 18,   /* unlink or rmdir (lsm.c) */
	SBX_OP_PATH_TRUNCATE = 19, /* truncate(2) (lsm.c) */
	SBX_OP_PATH_SETATTR = 20,  /* chmod or chown (lsm.c) */
};

/* One denied operation. Fixed size so it fits a ring buffer record. */
struct sbx_event {
	__u64 ts_ns;     /* bpf_ktime_get_ns() */
	__u64 cgroup_id; /* sandbox cgroup (cgroup2 id) */
	__u32 pid;       /* tgid as seen from the host */
	__u32 op;        /* enum sbx_op */
	__s32 err;       /* errno returned to the program (positive) */
	__u32 family;    /* socket family, or 0 */
	__u32 sock_type; /* socket type, or 0 */
	__u32 protocol;  /* socket protocol, or 0 */
	__u16 port;      /* host byte order, or 0 */
	__u16 pad;
	__u32 flags;     /* open flags, ioctl cmd, signal, ... */
	__u8 addr[16];   /* IPv4 in the first 4 bytes, or IPv6 */
	char comm[SBX_COMM_LEN];
	char path[SBX_PATH_MAX];
};

#endif /* SBX_EVENT_H */
