package sandbox

import (
	"runtime"
	"sync"
)

// Sandboxes are started from one OS thread that lives as long as the
// process.
//
// The kernel sends a parent-death signal (PR_SET_PDEATHSIG) when the
// *thread* that forked a process exits, not the process. libcontainer asks
// for SIGKILL on its bootstrap process and, through ParentDeathSignal, on
// the sandbox's init (cloned with CLONE_PARENT, so its parent is that same
// thread). Go ends OS threads whenever a goroutine exits while locked to
// one, which libcontainer's own namespace helpers and hostfs.Cred.Do do by
// design. A sandbox forked from such a thread dies with SIGKILL the moment
// the thread is reused and ended: in a process that runs sandboxes
// concurrently (a harness embedding the runner), "write init-p: broken
// pipe" at start or a run killed midway. Forking every sandbox from a
// goroutine locked for good to its own thread rules that out; starts are
// serialized, which costs little (a start is a few milliseconds of the
// parent's time).
var (
	startOnce sync.Once
	startQ    chan func()
)

// onStartThread runs fn on the start thread and returns its error.
func onStartThread(fn func() error) error {
	startOnce.Do(func() {
		startQ = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked: this thread never ends
			for f := range startQ {
				f()
			}
		}()
	})
	errc := make(chan error, 1)
	startQ <- func() { errc <- fn() }
	return <-errc
}
