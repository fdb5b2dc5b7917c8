// Package hostcheck probes the host once for every mechanism sbx builds on
// (namespaces, user namespaces and AppArmor's restriction of them, cgroup2
// and its delegation, seccomp, Landlock and its ABI, the BPF LSM, cgroup
// BPF, the denial tracer, the capabilities sbx holds) and returns the
// result as a [policy.Host] value. "sbx doctor" prints that value and
// [policy.Decide]'s decision on it; "sbx run" decides from the same value
// (probed quickly: see [Options.Full]), so the two cannot disagree.
//
// The probes only say what the host offers. That sbx works with it is
// proven by using it: a run's canaries, and doctor's canary run.
package hostcheck
