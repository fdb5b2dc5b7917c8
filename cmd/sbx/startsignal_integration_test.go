package main

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSignalAtStartup: a SIGTERM sent to sbx at any moment of its start
// either refuses the run cleanly (nothing run, 143, nothing left: the box
// checks) or reaches the program, which then dies of it (143). Never exit
// 2 (a Go runtime that got it before its handler), never a program that
// runs to its end as if nothing was sent.
func TestSignalAtStartup(t *testing.T) {
	b := newBox(t)
	const tries = 40
	outcomes := map[string]int{}
	for i := 0; i < tries; i++ {
		p := b.start(opts{}, "run", "--", "sleep", "30")
		// A run refused before it made a sandbox has none to look for;
		// whatever sandbox it made is still checked for leftovers.
		p.sbxRun = false
		p.ownNoteCheck = true                             // the rootless note comes or not, by the moment
		time.Sleep(time.Duration(i*5) * time.Millisecond) // 0 to 195 ms in
		p.signal(syscall.SIGTERM)
		r := p.wait()
		switch {
		case r.code != 143:
			t.Errorf("SIGTERM %d ms in: want 143\n%v", i*5, r)
		case r.elapsed > 10*time.Second:
			t.Errorf("SIGTERM %d ms in: the program ran on (%v)", i*5, r.elapsed)
		case strings.Contains(r.stderr, "before the program started"):
			outcomes["refused"]++
		default:
			outcomes["delivered"]++
		}
	}
	t.Logf("outcomes of %d SIGTERMs: %v", tries, outcomes)
}
