/* SPDX-License-Identifier: GPL-2.0 */
/* The network exceptions of one run, in the one layout both programs that
 * enforce them read: the cgroup wall (net.c, map sbx_net_sandboxes) and
 * the BPF LSM tier's socket hooks (lsm.c, map sbx_lsm_sandboxes). Go fills
 * it from policy.WallEntry (bpf2go generates the Go types from here). */
#ifndef SBX_NET_H
#define SBX_NET_H

/* sbx_net_policy.flags */
enum sbx_net_flag {
	/* Allow TCP sockets of proxy_family and connects (and sends) to
	 * exactly proxy_addr:proxy_port: sbx's egress proxy. */
	SBX_NET_ALLOW_PROXY = 1,
	/* Allow every inet socket and address: the run shares the host's
	 * network (sbx run --net host), the wall does not apply. */
	SBX_NET_ALLOW_ALL = 2,
	/* Allow every inet socket, binds, and connects and addressed sends
	 * to loopback addresses (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104),
	 * all only in the run's own network namespace: the namespace is
	 * empty but for lo, so that is the sandbox talking to itself (sbx
	 * run --net loopback). The LSM tier also allows NETLINK_ROUTE
	 * sockets then. */
	SBX_NET_ALLOW_LOOPBACK = 4,
};

/* Per-run exceptions, keyed by the run's cgroup id. */
struct sbx_net_policy {
	__u32 flags;         /* enum sbx_net_flag */
	__u32 proxy_family;  /* AF_INET or AF_INET6 */
	__u8 proxy_addr[16]; /* IPv4 in the first 4 bytes, or IPv6 */
	__u16 proxy_port;    /* host byte order */
	__u16 pad;
	__u32 reserved;
	/* The run's network namespace (SO_NETNS_COOKIE) for
	 * SBX_NET_ALLOW_LOOPBACK on the cgroup wall; 0 when the kernel cannot
	 * tell it (before Linux 5.14): then any namespace but the host's
	 * (init_net). The LSM tier compares the socket's namespace with the
	 * task's instead. */
	__u64 netns_cookie;
};

#endif /* SBX_NET_H */
