package main

import (
	"context"
	"io"
	"syscall"
	"testing"
	"time"
)

// TestNoOrphansAfterSIGKILLDuringSetup: sbx killed with SIGKILL at any
// moment of its start (between libcontainer's start of the sandbox and the
// program's exec, runc's init waits on its exec FIFO and nothing else
// watches it) leaves no process behind: within 1 s of sbx's death nothing
// holds the caller's stdout and the program, if it had started, is gone.
// Not parallel: the next run reclaims what the killed ones left.
func TestNoOrphansAfterSIGKILLDuringSetup(t *testing.T) {
	b := newSerialBox(t)
	const marker = "300.0271"
	const tries = 60
	for i := 0; i < tries; i++ {
		delay := time.Duration(i*2) * time.Millisecond // 0 to 118 ms in
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := b.command(ctx, opts{}, sbxBin, "run", "--", "sleep", marker)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		killedRuns.Store(true)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		eof := make(chan struct{})
		go func() { io.Copy(io.Discard, out); close(eof) }()
		_ = cmd.Wait() // returns once sbx is reaped, before the pipe closes
		died := time.Now()
		select {
		case <-eof:
		case <-time.After(time.Second):
			t.Errorf("killed %v in: 1 s after sbx died something still holds its stdout", delay)
			<-eof
		}
		for len(pgrep(t, "sleep "+marker)) != 0 {
			if time.Since(died) > time.Second {
				t.Errorf("killed %v in: the program runs 1 s after sbx died", delay)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Logf("killed %v in: stdout closed %v after sbx died", delay, time.Since(died).Round(time.Millisecond))
		cancel()
	}
	if r := b.run("--", "true"); r.code != 0 {
		t.Errorf("next run\n%v", r)
	}
}
