package main

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// sbx run's default limits are sized to the host, for an agent session or
// a build rather than one tool call: half the RAM (at least 512 MiB), all
// CPUs, and 4096 processes (a parallel build with its compilers and
// language servers stays well below it; fork bombs still stop there).
// sbx exec keeps the tool limits of runner (512 MiB, 1 CPU, 256).
const runDefaultPids = 4096

// hostMemory returns the default --memory of sbx run: half of the host's
// RAM, at least 512 MiB.
func hostMemory() int64 {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 512 << 20
	}
	half := int64(si.Totalram) * int64(si.Unit) / 2
	return max(half&^(1<<20-1), 512<<20) // whole MiB, as --memory prints it
}

// hostCPUs returns the default --cpus of sbx run: every CPU this process
// may run on.
func hostCPUs() float64 { return float64(runtime.NumCPU()) }

// formatSize prints a whole number of MiB as --memory accepts it (512m, 2g).
func formatSize(n int64) string {
	if n%(1<<30) == 0 {
		return fmt.Sprintf("%dg", n>>30)
	}
	return fmt.Sprintf("%dm", n>>20)
}
