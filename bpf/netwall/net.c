//go:build ignore

/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * sbx's network wall: cgroup socket programs that refuse, with EPERM, every
 * inet socket and every connect, sendmsg and bind of sandboxed tasks.
 *
 * Attachment (package bpf/netwall, its doc.go):
 *  - sbx_sock_create is attached to the parent cgroup under which every run
 *    cgroup is created. A socket belongs to the cgroup of the task that
 *    created it, so it only runs for sockets created under the parent, and
 *    denies all of them but the run's exceptions (fail closed: no map entry
 *    needed). The kernel calls it from inet_create/inet6_create only, so
 *    AF_UNIX never gets here and other families are seccomp's job.
 *  - the address hooks are attached to the cgroup2 root. The kernel runs
 *    them by the cgroup of the *socket*, so attached at the parent they would
 *    miss a socket created outside and passed in; at the root they see every
 *    socket and decide by the cgroup of the *calling task*: sandboxed when
 *    one of its cgroup2 ancestors is the parent (sbx_parent_id, set at
 *    load; bpf_get_current_ancestor_cgroup_id, which sock_addr programs have
 *    since Linux 5.7, unlike bpf_current_task_under_cgroup). Host tasks pay
 *    one helper call per level of their cgroup per connect/bind/addressed
 *    sendmsg.
 *
 * sbx_net_sandboxes only grants exceptions (the egress proxy endpoint, the
 * run's own loopback and its forwarders' endpoints on it, or everything for
 * a run that shares the host network); a run without an entry is denied everything. Every denial is reported through
 * the run's ring buffer (events.h). All helpers used here are allowed for
 * BPF_PROG_TYPE_CGROUP_SOCK and _SOCK_ADDR, so every event field applies.
 */

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "sbx_event.h"
#include "events.h"
#include "sbx_net.h"

#define AF_UNIX 1
#define AF_INET 2
#define AF_INET6 10
#define EPERM 1

/* Cgroup socket programs: 1 lets the operation through, 0 fails it with
 * EPERM. */
#define SBX_ALLOW 1
#define SBX_DENY 0

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SBX_MAX_RUNS);
	__type(key, __u64);
	__type(value, struct sbx_net_policy);
} sbx_net_sandboxes SEC(".maps");

/* The cgroup2 id of the parent cgroup, set by the loader: tasks under it
 * are sandboxed. */
volatile const __u64 sbx_parent_id = 0;

/* Anchors that make clang emit BTF for the types Go generates (bpf2go
 * -type); never referenced by a program, so never loaded. */
const struct sbx_event *sbx_event_btf __attribute__((unused));
const enum sbx_op *sbx_op_btf __attribute__((unused));
const enum sbx_net_flag *sbx_net_flag_btf __attribute__((unused));

char LICENSE[] SEC("license") = "Dual BSD/GPL";

static __always_inline struct sbx_net_policy *sbx_policy(void)
{
	__u64 id;

	return sbx_lookup_run(&sbx_net_sandboxes, &id);
}

/* sbx_sandboxed reports whether the calling task is under the parent
 * cgroup: one of its ancestors (level 1 down to its own cgroup) is it. */
static __always_inline int sbx_sandboxed(void)
{
	int level;

	for (level = 1; level < SBX_MAX_CGROUP_LEVEL; level++) {
		__u64 id = bpf_get_current_ancestor_cgroup_id(level);

		if (!id)
			return 0;
		if (id == sbx_parent_id)
			return 1;
	}
	return 0;
}

/* sbx_allow_all reports whether the calling task's run shares the host
 * network (SBX_NET_ALLOW_ALL). */
static __always_inline int sbx_allow_all(void)
{
	struct sbx_net_policy *p = sbx_policy();

	return p && (p->flags & SBX_NET_ALLOW_ALL);
}


/* sbx_own_netns reports whether the socket of ctx lives in the run's own
 * network namespace (see sbx_net_policy.netns_cookie). A socket that leaked
 * in from the host lives in the host's, where loopback is the host's. */
static __always_inline int sbx_own_netns(struct bpf_sock_addr *ctx, struct sbx_net_policy *p)
{
	__u64 cookie = bpf_get_netns_cookie(ctx);

	if (p->netns_cookie)
		return cookie == p->netns_cookie;
	return cookie != bpf_get_netns_cookie(NULL);
}

/* sbx_loopback_ok reports whether the run may use ctx's address: its run
 * has SBX_NET_ALLOW_LOOPBACK, the socket is in the run's namespace and
 * (unless binding: only local addresses can be bound, and the namespace has
 * only lo) the destination is a loopback address. */
static __always_inline int sbx_loopback_ok(struct bpf_sock_addr *ctx, __u32 family, int binding)
{
	struct sbx_net_policy *p = sbx_policy();

	if (!p || !(p->flags & SBX_NET_ALLOW_LOOPBACK) || !sbx_own_netns(ctx, p))
		return 0;
	if (binding)
		return 1;
	if (family == AF_INET)
		return (bpf_ntohl(ctx->user_ip4) >> 24) == 127;
	if (ctx->user_ip6[0] != 0 || ctx->user_ip6[1] != 0)
		return 0;
	/* ::1 */
	if (ctx->user_ip6[2] == 0 && ctx->user_ip6[3] == bpf_htonl(1))
		return 1;
	/* ::ffff:127.x.y.z, an IPv4 loopback address on an IPv6 socket */
	return ctx->user_ip6[2] == bpf_htonl(0xffff) &&
	       (bpf_ntohl(ctx->user_ip6[3]) >> 24) == 127;
}

/* sbx_forward_ok reports whether the run may connect ctx to its address:
 * its run has SBX_NET_ALLOW_LOOPBACK, the socket is a stream socket in the
 * run's namespace and the destination is one of the run's forwarder
 * endpoints (an IPv4 one also as ::ffff:a.b.c.d on an IPv6 socket). */
static __always_inline int sbx_forward_ok(struct bpf_sock_addr *ctx, __u32 family)
{
	struct sbx_net_policy *p = sbx_policy();
	__u32 a[4] = {};

	if (!p || !(p->flags & SBX_NET_ALLOW_LOOPBACK) || !p->nfwd ||
	    ctx->type != SOCK_STREAM || !sbx_own_netns(ctx, p))
		return 0;
	if (family == AF_INET) {
		a[0] = ctx->user_ip4;
	} else {
		a[0] = ctx->user_ip6[0];
		a[1] = ctx->user_ip6[1];
		a[2] = ctx->user_ip6[2];
		a[3] = ctx->user_ip6[3];
		if (a[0] == 0 && a[1] == 0 && a[2] == bpf_htonl(0xffff)) {
			family = AF_INET;
			a[0] = a[3];
			a[2] = a[3] = 0;
		}
	}
	return sbx_is_forward(p, family, (const __u8 *)a, bpf_ntohs((__u16)ctx->user_port));
}

SEC("cgroup/sock_create")
int sbx_sock_create(struct bpf_sock *sk)
{
	__u32 family = sk->family, type = sk->type, protocol = sk->protocol;
	struct sbx_net_policy *p;
	struct sbx_event *e;

	if (family == AF_UNIX) /* not called for it today; stay correct if it is */
		return SBX_ALLOW;
	p = sbx_policy();
	/* A task of the run creates sockets in the run's namespace only. */
	if (p && (p->flags & (SBX_NET_ALLOW_ALL | SBX_NET_ALLOW_LOOPBACK)))
		return SBX_ALLOW;
	if (p && (p->flags & SBX_NET_ALLOW_PROXY) && family == p->proxy_family &&
	    type == SOCK_STREAM && (protocol == 0 || protocol == IPPROTO_TCP))
		return SBX_ALLOW;

	e = sbx_event_reserve(SBX_OP_SOCKET_CREATE, EPERM);
	if (e) {
		e->family = family;
		e->sock_type = type;
		e->protocol = protocol;
		bpf_ringbuf_submit(e, 0);
	}
	return SBX_DENY;
}

/* sbx_deny_addr reports a denied connect, sendmsg or bind. family is a
 * constant (AF_INET for the *4 programs): the verifier lets the *4 programs
 * read only user_ip4 and the *6 ones only user_ip6. */
static __always_inline int sbx_deny_addr(struct bpf_sock_addr *ctx, __u32 op, __u32 family)
{
	struct sbx_event *e = sbx_event_reserve(op, EPERM);

	if (!e)
		return SBX_DENY;
	e->family = family;
	e->sock_type = ctx->type;
	e->protocol = ctx->protocol;
	e->port = bpf_ntohs((__u16)ctx->user_port);
	if (family == AF_INET) {
		__u32 a = ctx->user_ip4;

		__builtin_memcpy(e->addr, &a, 4);
	} else {
		__u32 a[4];

		a[0] = ctx->user_ip6[0];
		a[1] = ctx->user_ip6[1];
		a[2] = ctx->user_ip6[2];
		a[3] = ctx->user_ip6[3];
		__builtin_memcpy(e->addr, a, 16);
	}
	bpf_ringbuf_submit(e, 0);
	return SBX_DENY;
}

/* sbx_is_proxy reports whether ctx's destination is the run's proxy. */
static __always_inline int sbx_is_proxy(struct bpf_sock_addr *ctx, __u32 family)
{
	struct sbx_net_policy *p = sbx_policy();
	__u32 want[4];

	if (!p || !(p->flags & SBX_NET_ALLOW_PROXY) || p->proxy_family != family)
		return 0;
	if (bpf_ntohs((__u16)ctx->user_port) != p->proxy_port)
		return 0;
	__builtin_memcpy(want, p->proxy_addr, 16);
	if (family == AF_INET)
		return ctx->user_ip4 == want[0];
	return ctx->user_ip6[0] == want[0] && ctx->user_ip6[1] == want[1] &&
	       ctx->user_ip6[2] == want[2] && ctx->user_ip6[3] == want[3];
}

SEC("cgroup/connect4")
int sbx_connect4(struct bpf_sock_addr *ctx)
{
	if (!sbx_sandboxed() || sbx_is_proxy(ctx, AF_INET) || sbx_allow_all() ||
	    sbx_loopback_ok(ctx, AF_INET, 0) || sbx_forward_ok(ctx, AF_INET))
		return SBX_ALLOW;
	return sbx_deny_addr(ctx, SBX_OP_CONNECT4, AF_INET);
}

SEC("cgroup/connect6")
int sbx_connect6(struct bpf_sock_addr *ctx)
{
	if (!sbx_sandboxed() || sbx_is_proxy(ctx, AF_INET6) || sbx_allow_all() ||
	    sbx_loopback_ok(ctx, AF_INET6, 0) || sbx_forward_ok(ctx, AF_INET6))
		return SBX_ALLOW;
	return sbx_deny_addr(ctx, SBX_OP_CONNECT6, AF_INET6);
}

SEC("cgroup/sendmsg4")
int sbx_sendmsg4(struct bpf_sock_addr *ctx)
{
	if (!sbx_sandboxed() || sbx_allow_all() ||
	    sbx_loopback_ok(ctx, AF_INET, 0))
		return SBX_ALLOW;
	return sbx_deny_addr(ctx, SBX_OP_SENDMSG4, AF_INET);
}

SEC("cgroup/sendmsg6")
int sbx_sendmsg6(struct bpf_sock_addr *ctx)
{
	if (!sbx_sandboxed() || sbx_allow_all() ||
	    sbx_loopback_ok(ctx, AF_INET6, 0))
		return SBX_ALLOW;
	return sbx_deny_addr(ctx, SBX_OP_SENDMSG6, AF_INET6);
}

SEC("cgroup/bind4")
int sbx_bind4(struct bpf_sock_addr *ctx)
{
	if (!sbx_sandboxed() || sbx_allow_all() ||
	    sbx_loopback_ok(ctx, AF_INET, 1))
		return SBX_ALLOW;
	return sbx_deny_addr(ctx, SBX_OP_BIND4, AF_INET);
}

SEC("cgroup/bind6")
int sbx_bind6(struct bpf_sock_addr *ctx)
{
	if (!sbx_sandboxed() || sbx_allow_all() ||
	    sbx_loopback_ok(ctx, AF_INET6, 1))
		return SBX_ALLOW;
	return sbx_deny_addr(ctx, SBX_OP_BIND6, AF_INET6);
}
