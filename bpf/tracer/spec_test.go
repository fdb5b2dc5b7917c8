package tracer

import (
	"testing"

	"github.com/sbx-sandbox/sbx/bpf/events"
)

// TestSyscallTableFits: the program's table map holds every traced
// syscall's number (the rows themselves are checked in package events).
func TestSyscallTableFits(t *testing.T) {
	spec, err := loadTrace()
	if err != nil {
		t.Fatal(err)
	}
	size := spec.Maps[traceMapSbxTraceSyscalls].MaxEntries
	if size != 512 {
		t.Errorf("sbx_trace_syscalls has %d entries, want 512", size)
	}
	for nr, s := range events.TracedSyscalls() {
		if nr >= size {
			t.Errorf("%s: number %d beyond the program's table (%d)", s.Name, nr, size)
		}
	}
}
