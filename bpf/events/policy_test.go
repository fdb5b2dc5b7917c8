package events

import (
	"testing"

	"github.com/sbx-sandbox/sbx/policy"
)

// TestTraceTableFromPolicy: every syscall of the seccomp deny list is in
// the tracer's table, by name, or named absent on this ABI.
func TestTraceTableFromPolicy(t *testing.T) {
	absent := map[string]bool{}
	for _, n := range SeccompAbsent {
		absent[n] = true
	}
	names := map[string]bool{}
	for _, s := range traceSyscalls {
		if s.class == classSeccomp {
			names[s.name] = true
		}
	}
	for _, n := range policy.SeccompDenied {
		if !names[n] && !absent[n] && len(traceSyscalls) > 0 {
			t.Errorf("%s: denied by seccomp, not traced nor absent", n)
		}
	}
	for _, r := range policy.SeccompArgDenied {
		if !names[r.Name] && len(traceSyscalls) > 0 {
			t.Errorf("%s: denied by argument, not traced", r.Name)
		}
	}
}
