package escape

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// hostProcs returns the pids of host processes named comm.
func hostProcs(comm string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/comm")
		if err == nil && strings.TrimSpace(string(data)) == comm {
			pids = append(pids, pid)
		}
	}
	return pids
}

// commName is a process name (at most 15 bytes) no other process has.
func commName(prefix string) string {
	return fmt.Sprintf("%s%d", prefix, (time.Now().UnixNano()/1000+int64(os.Getpid()))%1e9)
}

// killAll kills the host processes named comm (a failed test's escapees).
func killAll(comm string) {
	for _, pid := range hostProcs(comm) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// TestNoPersistence: nothing the program starts outlives the run. A daemon
// made by double fork and setsid, ignoring SIGHUP and SIGTERM and holding
// no descriptor, that would create a file in the (writable, host-visible)
// workspace a second later: sbx returns as soon as the program exits, the
// daemon is gone from the host, and the file never appears. The control
// starts the same daemon on the host and sees the file.
func TestNoPersistence(t *testing.T) {
	b := newBox(t)
	name := commName("sbxd")
	t.Cleanup(func() { killAll(name) })
	marker := filepath.Join(b.ws, "marker")
	r := b.attackIn([]string{"--write"}, "daemon", marker, "1", name)
	if r.code != 0 || !strings.HasPrefix(r.steps()["daemon("+marker+",1,"+name+")"], "INFO ") {
		t.Fatalf("daemon in the sandbox\n%v", r)
	}
	if pids := hostProcs(name); len(pids) > 0 {
		t.Errorf("the daemon outlived the run: host pids %v", pids)
	}
	ctl := filepath.Join(t.TempDir(), "marker")
	ctlName := commName("sbxc")
	t.Cleanup(func() { killAll(ctlName) })
	c := b.attackHost(opts{}, "daemon", ctl, "1", ctlName)
	if pids := hostProcs(ctlName); len(pids) != 1 {
		t.Errorf("control: the daemon started on the host is not found by its name (%v)\n%v", pids, c)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(ctl); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := os.Stat(ctl); err != nil {
		t.Errorf("control: the host daemon's marker did not appear: %v", err)
	}
	// By now the sandboxed daemon's second has long passed too.
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the sandboxed daemon wrote %s after the run", marker)
	}
}

// TestLifeline: if sbx itself is killed (SIGKILL, so no teardown), the
// shim sees the lifeline pipe close and ends the sandbox. The program must
// not be able to keep it alive by holding a write end of that pipe, which
// it can open through /proc/1/fd/3 while the shim is dumpable. The control
// holds /dev/null instead: the sandbox then ends right after sbx.
//
// Not parallel: any other sbx run on the host reclaims the sandbox of a
// dead sbx, which would end it for the wrong reason. The test tells the
// two apart by the shim's own "supervisor died" message.
func TestLifeline(t *testing.T) {
	b := newSerialBox(t)
	for _, c := range []struct {
		name, path string
	}{
		{"control", "/dev/null"},
		{"lifeline held", "/proc/1/fd/3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := b.in(t)
			name := commName("sbxh")
			t.Cleanup(func() {
				killAll(name)
				// A run reclaims what the killed sbx left.
				b.sbx(opts{}, nil, "true")
			})
			// The first hold fails once the shim is out of reach; the
			// second keeps the program alive for the kill either way.
			// stdout is a pipe of our own, so that Wait does not wait
			// for a sandbox that outlives sbx to close it.
			out := &lineWatch{want: "HOLDING", seen: make(chan struct{})}
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer pr.Close()
			go func() { _, _ = io.Copy(out, pr) }()
			errf := tempFile(t)
			o := opts{stdout: pw, stderr: errf, started: func(p *os.Process) {
				pw.Close()
				go func() {
					select {
					case <-out.seen:
					case <-time.After(30 * time.Second):
					}
					_ = p.Signal(syscall.SIGKILL)
				}()
			}}
			r, _ := b.exec(o, sbxBin, "run", "--home", "tmp", "--", b.attack,
				"hold", c.path, "30", name, ";", "hold", "/dev/null", "30", name)
			if r.code != 128+int(syscall.SIGKILL) || !strings.Contains(out.String(), "HOLDING") {
				t.Fatalf("sbx was not killed while the program held %s\nexit %d\nstdout:\n%s", c.path, r.code, out)
			}
			// The shim reacts to the lifeline at once.
			const died = "sbx: supervisor died: ending the sandbox"
			deadline := time.Now().Add(1500 * time.Millisecond)
			for time.Now().Before(deadline) && (len(hostProcs(name)) > 0 || !strings.Contains(readBack(t, errf), died)) {
				time.Sleep(50 * time.Millisecond)
			}
			pids := hostProcs(name)
			switch stderr := readBack(t, errf); {
			case len(pids) > 0:
				t.Errorf("the sandbox outlived its killed sbx by 1.5 s (program holding %s; pids %v)\nstdout:\n%s", c.path, pids, out)
			case !strings.Contains(stderr, died):
				t.Errorf("the sandbox ended, but not by its lifeline (another sbx run reclaimed it?): no %q\nstderr:\n%s", died, stderr)
			}
		})
	}
}

// lineWatch collects output and closes seen once a line starts with want.
type lineWatch struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *lineWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for _, l := range strings.Split(w.buf.String(), "\n") {
		if strings.HasPrefix(l, w.want) || strings.Contains(l, " "+w.want) {
			w.once.Do(func() { close(w.seen) })
		}
	}
	return len(p), nil
}

func (w *lineWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
