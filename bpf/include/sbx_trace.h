/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The denial tracer's record (trace.c) and its syscall table's rows. The
 * record starts with struct sbx_event and travels in the same per-run
 * rings, so the event decoder (bpf/events) reads it too.
 * Include after vmlinux.h and sbx_event.h.
 */
#ifndef SBX_TRACE_H
#define SBX_TRACE_H

/* Marks a tracer event (struct sbx_trace_event) in sbx_event.op. Outside
 * enum sbx_op on purpose: that enum is shared with net.c. */
#define SBX_OP_SYSCALL 64

/* Where a syscall's extra arguments are (sbx_trace_sys.kind). */
enum sbx_trace_kind {
	SBX_TK_PLAIN = 0,    /* paths and flags only */
	SBX_TK_SOCKET = 1,   /* socket(family, type, protocol) */
	SBX_TK_SOCKADDR = 2, /* addr is a struct sockaddr * (connect, bind, sendto) */
	SBX_TK_MSGHDR = 3,   /* addr is a struct user_msghdr * (sendmsg) */
	SBX_TK_OPENHOW = 4,  /* flags is a struct open_how * (openat2) */
};

/* What the program reads of one syscall. Argument indexes are 1-based
 * (0: none). */
struct sbx_trace_sys {
	__u32 errs;   /* bit N set: report a return of -N; 0: not traced */
	__u8 kind;    /* enum sbx_trace_kind */
	__u8 path;    /* arg holding a path (const char *) */
	__u8 dirfd;   /* arg holding the dirfd of path (else AT_FDCWD) */
	__u8 path2;   /* arg holding a second path (link, rename, symlink) */
	__u8 dirfd2;  /* arg holding the dirfd of path2 */
	__u8 flags;   /* arg copied into sbx_event.flags */
	__u8 addr;    /* arg holding the socket address (see kind) */
	__u8 pad;
};

/* One tracer event: the common event (op SBX_OP_SYSCALL; path is the
 * first path) and what only the tracer knows. */
struct sbx_trace_event {
	struct sbx_event ev;
	__u32 nr;                 /* syscall number (x86_64) */
	__u32 reserved;
	__u64 args[6];            /* the raw arguments */
	char base[SBX_PATH_MAX];  /* directory a relative path is in, or "" */
	char path2[SBX_PATH_MAX];
	char base2[SBX_PATH_MAX]; /* directory of a relative path2, or "" */
};

#endif /* SBX_TRACE_H */
