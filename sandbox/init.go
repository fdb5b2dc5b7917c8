package sandbox

import (
	"os"

	"github.com/opencontainers/runc/libcontainer"

	"github.com/sbx-sandbox/sbx/egress"
	// nsenter's C constructor does the namespace setup of "init" before the
	// Go runtime starts; it must be linked into every binary that runs
	// sandboxes.
	_ "github.com/opencontainers/runc/libcontainer/nsenter"
	// Device rules need the cgroup devices controller code.
	_ "github.com/opencontainers/cgroups/devices"
)

// Init must be the first call in main (and in TestMain of tests that start
// sandboxes). When the process is the libcontainer bootstrap ("init"), the
// sandbox's shim ([ShimPath]), a rootless sandbox's exec step or its
// namespace helper ([egress.HelperArg0]), Init runs
// that role and never returns; otherwise it returns at once.
func Init() {
	if len(os.Args) > 1 && os.Args[1] == "init" {
		libcontainer.Init() // never returns
	}
	if len(os.Args) > 0 && os.Args[0] == watchArg0 {
		runWatch()
		os.Exit(0)
	}
	if len(os.Args) > 0 && os.Args[0] == egress.HelperArg0 {
		os.Exit(egress.RunHelper()) // rootless: sockets in the sandbox's netns
	}
	if len(os.Args) > 0 && os.Args[0] == ShimPath {
		os.Exit(RunShim(os.Args[1:]))
	}
	if len(os.Args) > 0 && os.Args[0] == execStepArg0 && os.Getenv(execStepEnv) != "" {
		os.Exit(runExecStep(os.Args[1:]))
	}
}
