// Package netsvc serves a sandbox's network namespace from sbx's side:
// the egress proxy of --allow-host, the transparent forwarders of the
// allowed names and addresses (nameforward.go), the DNS answerer of --net
// loopback and the --publish listeners. The proxy and DNS mechanics are
// package egress's; netsvc wires them to one run and reports what they
// refuse.
package netsvc
