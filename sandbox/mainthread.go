package sandbox

import "runtime"

// Keep the main thread to the main goroutine, in every program that runs
// sandboxes (sbx itself, and a harness that embeds the runner).
//
// libcontainer does some of its work (looking up mount sources in the
// sandbox's mount namespace, for one) on a goroutine that locks its OS
// thread, enters the sandbox's namespaces and counts on the thread being
// ended when the goroutine exits locked. The Go runtime cannot end the
// process's main thread: it is kept instead, still in the namespaces of a
// sandbox that is gone, and every later goroutine scheduled on it sees that
// sandbox's mount table (seen as "find cgroup2 mount: none in
// /proc/self/mountinfo" from the second or tenth run of a process on).
// Locking the main goroutine to the main thread from an init function keeps
// every other goroutine off that thread, so no such work ever lands there.
func init() { runtime.LockOSThread() }
