// Command sbx runs a program in a kernel-enforced sandbox: no network, no
// files outside its workspace and the read-only system, bounded memory, CPU
// and processes. See "sbx --help".
package main

import (
	"os"

	"github.com/sbx-sandbox/sbx/sandbox"
)

func main() {
	// The libcontainer bootstrap and the in-sandbox shim re-execute this
	// binary; dispatch them before anything else runs.
	sandbox.Init()
	os.Exit(sbxMain(os.Args[1:], stdStreams()))
}
