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

/* The most forwarder endpoints one run's entry holds (sbx_net_policy.fwd);
 * policy.MaxWallForwards in Go. */
#define SBX_NET_MAX_FWD 8

/* A TCP endpoint on the run's own lo that one of sbx's forwarders listens
 * on: an allowed IP address beyond loopback (sbx run --allow-host
 * 10.0.0.5:5432), which sbx puts on the sandbox's lo so that a client that
 * dials the literal reaches the forwarder. */
struct sbx_net_endpoint {
	__u32 family; /* AF_INET or AF_INET6 */
	__u16 port;   /* host byte order */
	__u16 pad;
	__u8 addr[16]; /* IPv4 in the first 4 bytes, or IPv6 */
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
	/* With SBX_NET_ALLOW_LOOPBACK: TCP connects (and sends on sockets
	 * connected there) to exactly fwd[0..nfwd), on sockets of the run's
	 * own namespace (the same test as for loopback), are allowed too. */
	__u32 nfwd;
	__u32 pad2;
	struct sbx_net_endpoint fwd[SBX_NET_MAX_FWD];
};

/* sbx_same_addr16 compares two 16-byte addresses as words (no indexed loop
 * into a map value, which the verifier would reject). */
static __always_inline int sbx_same_addr16(const __u8 *map_addr, const __u8 *a)
{
	__u32 want[4], got[4];

	__builtin_memcpy(want, map_addr, 16);
	__builtin_memcpy(got, a, 16);
	return want[0] == got[0] && want[1] == got[1] && want[2] == got[2] && want[3] == got[3];
}

/* sbx_is_forward reports whether family, addr (16 bytes, IPv4 in the first
 * 4) and port (host byte order) are one of p's forwarder endpoints. The
 * caller checks the flags, the socket type and the namespace. */
static __always_inline int sbx_is_forward(const struct sbx_net_policy *p, __u32 family,
					  const __u8 *addr, __u16 port)
{
	__u32 i, n = p->nfwd;

	for (i = 0; i < SBX_NET_MAX_FWD; i++) {
		const struct sbx_net_endpoint *e = &p->fwd[i];

		if (i >= n)
			return 0;
		if (e->family == family && e->port == port && sbx_same_addr16(e->addr, addr))
			return 1;
	}
	return 0;
}

#endif /* SBX_NET_H */
