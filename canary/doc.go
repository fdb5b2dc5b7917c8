// Package canary holds the proofs the shim runs inside a new sandbox,
// right before it starts the program, that each tier holds for it: that
// the network wall refuses inet sockets ([Net]) or everything beyond the
// sandbox's loopback ([Loopback]), and that the BPF LSM file tier refuses
// a file outside its policy ([LSM]). Each proof is an operation that must
// fail with the tier's exact errno; any other outcome means the run must
// not start (fail closed). They need no privileges and load nothing: the
// tiers are set up from outside (package bpf), and the proofs only use
// them, so the sandbox side does not depend on the BPF loader.
package canary
