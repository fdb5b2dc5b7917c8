// Package policy is what a sandboxed program may do, as plain values, and
// the pure steps that turn it into what each enforcing tier gets.
//
// A [Policy] names the files the program may read, write and execute
// ([Files]), where its sockets may reach ([Network]) and its limits. It is
// compiled, without any system call, into:
//   - the Landlock rule set the shim applies to itself ([Policy.Landlock]);
//   - the BPF LSM tier's rules ([Policy.LSM]), the same set named by host
//     paths;
//   - the seccomp deny list ([SeccompDenied]), from which package sandbox
//     builds the filter and package bpf derives the tracer's table;
//   - the network wall's per-run map entry ([Network.Wall]), the one
//     encoding of the proxy exception both BPF programs read.
//
// [Decide] picks the tiers a run gets from a report of the host (package
// hostcheck fills it) and what the user demanded (--policy); "sbx run" and
// "sbx doctor" both call it, so doctor cannot claim what run cannot do.
//
// The package imports no system-call package (syscall, x/sys/unix,
// libcontainer, cilium/ebpf): every compiler is tested in tables without
// privileges, against golden files under testdata/. What the kernel makes of
// the compiled rules is tested where they are applied (packages sandbox,
// bpf and the integration tests of cmd/sbx).
package policy
