package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestReclaimOwnerless: Reclaim takes the run of a dead owner, leaves a
// live owner's run alone, and does not count as reclaimed a run dir whose
// owner record is gone (its own sbx is removing it: the record goes with
// the dir, after the container), removing it only once it is stale.
func TestReclaimOwnerless(t *testing.T) {
	dirs := Dirs{Root: t.TempDir()}
	mk := func(id, owner string) string {
		t.Helper()
		d := dirs.runDir(id)
		if err := os.MkdirAll(filepath.Join(d, "rootfs"), 0o700); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			if err := os.WriteFile(filepath.Join(d, ownerFile), []byte(owner), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	start, err := procStart(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	live := mk("1111111111111111", "")
	lock, err := writeOwner(live)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	dead := mk("2222222222222222", "2147483646 1\n") // no such pid
	going := mk("3333333333333333", "")
	stale := mk("4444444444444444", "")
	old := time.Now().Add(-2 * time.Minute)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	ids, err := Reclaim(dirs)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"2222222222222222"}; !slices.Equal(ids, want) {
		t.Errorf("reclaimed %q, want only the dead owner's %q (live owner started at %d)", ids, want, start)
	}
	for _, c := range []struct {
		dir  string
		kept bool
	}{{live, true}, {dead, false}, {going, true}, {stale, false}} {
		if _, err := os.Stat(c.dir); (err == nil) != c.kept {
			t.Errorf("%s: kept %v, want %v", c.dir, err == nil, c.kept)
		}
	}
}

// TestOwnerAliveZombie: an owner that died but is not reaped yet (a zombie
// keeps its pid and start time) is dead to ownerAlive, since the kernel
// dropped its flock when it exited; an old-style record of a live process
// is alive, one of a dead pid is not.
func TestOwnerAliveZombie(t *testing.T) {
	dir := t.TempDir()
	start, err := procStart(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// The owner: flock(1) takes the lock on the record, then holds it
	// until told to exit.
	rec := filepath.Join(dir, ownerFile)
	cmd := exec.Command("flock", "-x", rec, "sh", "-c", "read x")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pstart := waitStart(t, cmd.Process.Pid)
	if err := os.WriteFile(rec, []byte(fmt.Sprintf("%d %d %s\n", cmd.Process.Pid, pstart, ownerLock)), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !ownerAlive(dir) {
		if time.Now().After(deadline) {
			t.Fatal("control: the live owner holding the lock is not alive")
		}
		time.Sleep(10 * time.Millisecond)
	}
	stdin.Close() // the owner exits; not reaped yet: a zombie
	for state(t, cmd.Process.Pid) != "Z" {
		if time.Now().After(deadline) {
			t.Fatal("the owner did not become a zombie")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if ownerAlive(dir) {
		t.Error("a zombie owner (lock released) is alive")
	}
	_ = cmd.Wait()
	// Records of older versions: pid and start time.
	if err := os.WriteFile(rec, []byte(fmt.Sprintf("%d %d\n", os.Getpid(), start)), 0o600); err != nil {
		t.Fatal(err)
	}
	if !ownerAlive(dir) {
		t.Error("an old-style record of this live process is dead")
	}
}

func waitStart(t *testing.T, pid int) uint64 {
	t.Helper()
	s, err := procStart(pid)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// state returns the state letter of pid in /proc/pid/stat.
func state(t *testing.T, pid int) string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[0]
}

// TestProcStart: the start time (from libcontainer's /proc/PID/stat
// parser) is stable for a process, differs for a later one, and a pid
// that does not exist is an error.
func TestProcStart(t *testing.T) {
	a, err := procStart(os.Getpid())
	if err != nil || a == 0 {
		t.Fatalf("procStart(self) = %d, %v", a, err)
	}
	if b, err := procStart(os.Getpid()); err != nil || b != a {
		t.Errorf("procStart(self) again = %d, %v; want %d", b, err, a)
	}
	time.Sleep(20 * time.Millisecond) // at least one clock tick later
	cmd := exec.Command("sleep", "10")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if c, err := procStart(cmd.Process.Pid); err != nil || c <= a {
		t.Errorf("procStart(child) = %d, %v; want > %d", c, err, a)
	}
	if _, err := procStart(1 << 30); err == nil {
		t.Error("procStart of a pid that cannot exist: no error")
	}
}
