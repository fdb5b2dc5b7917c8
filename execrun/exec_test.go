package execrun

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/gate"
	"github.com/sbx-sandbox/sbx/report"
	"github.com/sbx-sandbox/sbx/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.Init() // the test binary is the sandbox's init and shim too
	os.Exit(m.Run())
}

// apiCalls is how many sandboxes TestManyRunsInOneProcess runs each way
// (sequentially, then 8 at a time): 1,000 in all.
const apiCalls = 500

// TestManyRunsInOneProcess: a harness embedding sbx runs thousands of
// sandboxes in one process. Exec must keep working call after call,
// sequentially and 8 at a time, with the process's fds and goroutines
// back where they were.
func TestManyRunsInOneProcess(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("runs sandboxes as root")
	}
	calls := apiCalls
	if testing.Short() {
		calls = 50
	}
	ws := t.TempDir()
	if err := os.Chmod(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	req := gate.Request{Command: []string{"true"}, Workspace: ws}
	eo := ExecOptions{StateDir: t.TempDir(), Log: testLog{t}}
	one := func(i int) bool {
		res := Exec(context.Background(), req, eo)
		if res.Status != gate.StatusExited || res.ExitCode == nil || *res.ExitCode != 0 {
			t.Errorf("call %d: %+v", i, res)
			return false
		}
		return true
	}
	one(-1) // warm up: the BPF programs, the tracer, the caches
	fds, gs, rss := countFDs(t), runtime.NumGoroutine(), rssKiB(t)
	for i := 0; i < calls; i++ {
		if !one(i) {
			break
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := false
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < calls/8; i++ {
				mu.Lock()
				stop := failed
				mu.Unlock()
				if stop || !one(i) {
					mu.Lock()
					failed = true
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	// What a run leaves to finish after it returned (its reporter's last
	// read) ends within moments.
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end) && (countFDs(t) > fds || runtime.NumGoroutine() > gs); {
		time.Sleep(50 * time.Millisecond)
	}
	if n := countFDs(t); n > fds {
		t.Errorf("fds: %d before, %d after %d calls", fds, n, 2*calls)
	}
	if n := runtime.NumGoroutine(); n > gs {
		t.Errorf("goroutines: %d before, %d after %d calls", gs, n, 2*calls)
	}
	debug.FreeOSMemory()
	n := rssKiB(t)
	t.Logf("after %d calls: fds %d (before %d), goroutines %d (%d), RSS %d KiB (%d)", 2*calls, countFDs(t), fds, runtime.NumGoroutine(), gs, n, rss)
	if n > rss+32<<10 {
		t.Errorf("RSS grew from %d KiB to %d KiB over %d calls", rss, n, 2*calls)
	}
}

// rssKiB returns the process's resident set (VmRSS) in KiB.
func rssKiB(t *testing.T) int {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

func countFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// testLog sends sbx's own lines to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) { l.t.Logf("%s", p); return len(p), nil }

// TestViolationShapes: the report's violations convert to the result's
// one for one, and the report keeps as many as a result may carry.
func TestViolationShapes(t *testing.T) {
	if report.MaxKept != gate.MaxViolations {
		t.Errorf("report.MaxKept = %d, gate.MaxViolations = %d", report.MaxKept, gate.MaxViolations)
	}
	v := report.Violation{Pid: 1, Comm: "c", Op: "open", Target: "/x", Errno: "EACCES", Tier: "landlock", Reason: "r"}
	if g := gate.Violation(v); g.Op != v.Op || g.Reason != v.Reason || g.Target != v.Target {
		t.Errorf("converted %+v to %+v", v, g)
	}
}
