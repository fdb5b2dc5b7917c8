package lockfile

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// TestPublishAndTryOpen: a published lock is held while its file is open
// and free once closed; a second Publish of the same path is ErrExist; a
// missing file is neither held nor an error.
func TestPublishAndTryOpen(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "run.lock")
	f, err := Publish(p, []byte("42\n"))
	if err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(p); err != nil || string(data) != "42\n" {
		t.Errorf("lock file holds %q, %v", data, err)
	}
	if g, held, err := TryOpen(p); g != nil || !held || err != nil {
		t.Errorf("TryOpen of a held lock: %v, held %v, %v", g, held, err)
	}
	if _, err := Publish(p, nil); !errors.Is(err, os.ErrExist) {
		t.Errorf("Publish over an existing lock: %v, want ErrExist", err)
	}
	f.Close()
	g, held, err := TryOpen(p)
	if g == nil || held || err != nil {
		t.Fatalf("TryOpen after the owner closed: %v, held %v, %v", g, held, err)
	}
	g.Close()
	if g, held, err := TryOpen(filepath.Join(dir, "missing")); g != nil || held || err != nil {
		t.Errorf("TryOpen of a missing file: %v, %v, %v", g, held, err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".*tmp-*")); len(m) != 0 {
		t.Errorf("temporary files left: %q", m)
	}
}

// TestLockDiesWithProcess: a lock held by another process (flock(1)) is
// held; once that process is killed, it can be taken.
func TestLockDiesWithProcess(t *testing.T) {
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("flock(1) not installed (util-linux)")
	}
	p := filepath.Join(t.TempDir(), "lock")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// -o: only flock(1) itself holds the lock, not the command it runs.
	cmd := exec.Command("flock", "-o", "-x", p, "sh", "-c", "echo locked; exec sleep 60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 7)
	if _, err := out.Read(buf); err != nil || string(buf) != "locked\n" {
		t.Fatalf("flock(1) did not take the lock: %q, %v", buf, err)
	}
	if f, held, err := TryOpen(p); f != nil || !held || err != nil {
		t.Errorf("lock of a live process: %v, held %v, %v", f, held, err)
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // flock(1) and its command
	_ = cmd.Wait()
	f, held, err := TryOpen(p)
	if f == nil || held || err != nil {
		t.Fatalf("lock of a killed process: %v, held %v, %v", f, held, err)
	}
	f.Close()
}
