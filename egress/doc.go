// Package egress is sbx's way out to the network: an HTTP proxy that lets
// through only the destinations of an allowlist.
//
// # Where it sits
//
// A sandbox keeps its empty network namespace (lo only). sbx opens a
// listener inside it with [ListenInNetns] (127.0.0.1:PORT in the sandbox's
// namespace, while the socket belongs to sbx), serves a [Proxy] on it from
// sbx's own process in the host namespace, and points the sandbox's
// HTTPS_PROXY/HTTP_PROXY/ALL_PROXY at it. Beyond the sandbox's own
// loopback and the forwarders below, the network wall lets the sandbox
// connect to that one address and port (policy.WallRules.Proxy), so the
// proxy is the way out, and it dials out from the host for allowed
// destinations only. Nothing in the sandbox needs DNS:
// the proxy resolves names itself. The proxy lives in sbx's process, so it
// dies with the run.
//
// [Netns] is how sbx opens sockets in the sandbox's namespace: as root it
// joins it on a locked thread (setns); rootless it cannot (joining a
// network namespace needs CAP_SYS_ADMIN in the caller's own user
// namespace too), so [OpenNetns] starts a helper, sbx's own binary as
// [HelperArg0], that joins the sandbox's user namespace (the user owns
// it) and network namespace in a C constructor before the Go runtime
// starts (nsjoin_linux.go) and passes each socket back over a Unix socket
// pair ([RunHelper]). Without a BPF wall the namespace itself, lo and
// nothing else, is the wall.
//
// # Transparent forwarding and DNS
//
// For clients that ignore the proxy variables, [Proxy.ServeForward]
// forwards each connection accepted on a listener in the sandbox to one
// fixed host:port after the same checks as a CONNECT to it would pass.
// sbx puts such listeners on a loopback address per allowed name, which
// [ServeDNS] answers in the sandbox (every other name gets NXDOMAIN at
// once), and on each allowed IP address and port itself
// ([Netns.AddLoopbackAddr] for addresses beyond loopback), so that a
// client dialing 127.0.0.1:11434 in the sandbox reaches the host's
// 127.0.0.1:11434.
//
// # Rules
//
// An [Allowlist] holds [Rule]s parsed by [ParseRule]: a host name
// ("api.example.com"), every subdomain of a name ("*.example.com": not the
// name itself, which needs its own rule), or an IP address ("10.1.2.3",
// "[::1]:8080"); each with one port, 443 unless given. A request is checked
// against the allowlist before anything is resolved, by the name or address
// the client asked for: a name passes only a name rule and an IP address only
// an IP rule, so an address is never reachable because some allowed name
// resolves to it. Host names must be plain ASCII DNS names whose last label
// starts with a letter: forms that resolvers read as numbers ("127.1",
// "2130706433", "0x7f000001") are refused, not resolved.
//
// # DNS-rebinding guard
//
// An allowed name is resolved by the proxy (Proxy.Resolver), and the request
// is refused (403) if ANY of its addresses is not public: loopback, private
// (RFC 1918, fc00::/7, site-local), carrier-grade NAT (100.64.0.0/10),
// link-local (169.254.0.0/16 with the cloud metadata address
// 169.254.169.254, fe80::/10), unspecified, multicast, broadcast and reserved
// ranges, and every address of the host itself (Proxy.Own: its interfaces'
// addresses, watched for changes, and whatever the kernel routes locally:
// a name resolving to the host's eth0 or docker0 address would reach every
// service listening on 0.0.0.0); IPv4-mapped, NAT64 (64:ff9b::/96), 6to4
// (2002::/16) and Teredo (2001::/32, server and client) addresses are judged
// by the IPv4 addresses they carry as well, and IPv4-compatible (::/96) and
// local-use NAT64 (64:ff9b:1::/48) addresses are refused whole. CONNECT,
// forwarded requests and the transparent forwarders all go through the one
// check (Proxy.checkResolved). The one exception is an address that an IP rule
// names exactly, with the same port: allowing "127.0.0.1:8080" lets
// "dev.test:8080" resolve there. The proxy then dials the addresses it
// checked, never the name again, so a second lookup cannot swap them.
//
// # Protocols
//
// CONNECT host:port opens a tunnel that carries any bytes (TLS in practice;
// the proxy does not inspect them). Requests in absolute form
// ("GET http://host/path") are forwarded for http:// only, without protocol
// upgrades, with hop-by-hop and proxy headers removed and the Host header
// taken from the checked URL. Anything else gets 400 or 501. Every refusal
// gets an HTTP error with a one-line reason and, for refused destinations
// (not allowed, a non-public address, the tunnel cap, a malformed target), a
// call to Proxy.Report with a [Denial], which sbx prints as
// "sbx: denied connect evil.example:443 (not allowed)".
//
// # Limits
//
// Resolving plus connecting is bounded by ConnectTimeout; a tunnel or
// forwarded exchange ends when no byte moved either way for IdleTimeout
// (each direction watches the other's activity, so a long one-way stream
// stays open) and when a write to either side makes no progress for that
// long; headers are bounded in size (MaxHeaderBytes, 431 beyond) and time
// (HeaderTimeout); at most MaxTunnels upstream exchanges are open at once
// (503 beyond) and at most MaxConns client connections (further ones wait
// in the kernel's backlog). Between two TCP connections bytes are spliced
// (TCPConn.ReadFrom: socket to pipe to socket in the kernel, in 256 KiB
// chunks that count as activity); otherwise copied with fixed 32 KiB
// buffers, two per tunnel, so memory is bounded by the caps. [Proxy.Close] ends
// every tunnel and connection.
//
// # What it does not do
//
//   - It does not look inside TLS: a client may send an allowed tunnel a
//     TLS name or Host header for another site served at the same address
//     (a CDN, "domain fronting"). Rules are per host and port, not per path.
//   - It does not authenticate clients: only the sandbox can reach its
//     listener (it is in the sandbox's network namespace).
//   - It speaks HTTP/1.1 to clients; clients that ignore the proxy
//     variables reach only what the transparent forwarders serve (allowed
//     names under sbx's DNS and allowed IP addresses, TCP only); UDP goes
//     nowhere.
//   - Answers are not cached: each tunnel resolves its name again.
package egress
