package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf/ringbuf"
)

// fakeClock is a settable Reporter clock.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// fileLines decodes the --violations lines: op and, for dropped records,
// count, lost and the kinds.
func fileLines(t *testing.T, data []byte) []string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if l == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("--violations line %q: %v", l, err)
		}
		if rec["op"] != DroppedOp {
			out = append(out, fmt.Sprint(rec["op"]))
			continue
		}
		out = append(out, fmt.Sprintf("dropped count=%v lost=%v kinds=%v", rec["count"], rec["lost"], rec["kinds"]))
	}
	return out
}

// compact folds runs of one line into "LINE xN".
func compact(ls []string) []string {
	var out []string
	for i := 0; i < len(ls); {
		j := i
		for j < len(ls) && ls[j] == ls[i] {
			j++
		}
		if j-i > 1 {
			out = append(out, fmt.Sprintf("%s x%d", ls[i], j-i))
		} else {
			out = append(out, ls[i])
		}
		i = j
	}
	return out
}

func violationN(op, tier string, i int) Violation {
	return Violation{Op: op, Target: fmt.Sprintf("/usr/f-%d", i), Errno: "EROFS", Tier: tier, Pid: 9, Comm: "flood"}
}

// TestViolationsFileRate: --violations takes at most violationsPerSecond
// records a second; the rest become one dropped record, written before the
// first record of a later second or at the end of the run, with the
// kernel's lost events in the last one.
func TestViolationsFileRate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps func(r *Reporter, c *fakeClock)
		want  []string
	}{
		{
			name: "under the rate",
			steps: func(r *Reporter, c *fakeClock) {
				for i := range violationsPerSecond {
					r.Add(violationN("open", "mount", i))
				}
			},
			want: []string{"open x1000"},
		},
		{
			name: "flood then a later second",
			steps: func(r *Reporter, c *fakeClock) {
				for i := range violationsPerSecond + 500 {
					r.Add(violationN("open", "mount", i))
				}
				r.Add(violationN("mkdir", "landlock", 0))
				c.advance(time.Second)
				r.Add(violationN("unlink", "mount", 0))
			},
			want: []string{"open x1000", "dropped count=501 lost=<nil> kinds=map[mkdir/landlock:1 open/mount:500]", "unlink"},
		},
		{
			name: "flood to the end, with lost events",
			steps: func(r *Reporter, c *fakeClock) {
				for i := range violationsPerSecond + 3 {
					r.Add(violationN("open", "mount", i))
				}
				r.AddLost(40)
			},
			want: []string{"open x1000", "dropped count=43 lost=40 kinds=map[open/mount:3]"},
		},
		{
			name: "lost only",
			steps: func(r *Reporter, c *fakeClock) {
				r.Add(violationN("open", "mount", 0))
				r.AddLost(7)
			},
			want: []string{"open", "dropped count=7 lost=7 kinds=<nil>"},
		},
		{
			name: "one dropped record a second at most",
			steps: func(r *Reporter, c *fakeClock) {
				for s := range 3 {
					for i := range violationsPerSecond + 10 {
						r.Add(violationN("open", "mount", s*10000+i))
					}
					c.advance(time.Second)
				}
			},
			want: []string{"open x1000", "dropped count=10 lost=<nil> kinds=map[open/mount:10]", "open x1000",
				"dropped count=10 lost=<nil> kinds=map[open/mount:10]", "open x1000", "dropped count=10 lost=<nil> kinds=map[open/mount:10]"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var file bytes.Buffer
			r := New(nil, &file)
			c := &fakeClock{t: time.Unix(1000, 0)}
			r.now = c.now
			tc.steps(r, c)
			r.Finish()
			if got := compact(fileLines(t, file.Bytes())); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("--violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestReporterDistinctBound: past maxDistinct operations the Reporter
// keeps counts by kind, not each operation, and says so at exit.
func TestReporterDistinctBound(t *testing.T) {
	var log bytes.Buffer
	r := New(&log, nil)
	for i := range maxDistinct + 300 {
		r.Add(violationN("open", "mount", i))
	}
	for i := range 20 {
		r.Add(violationN("syscall", "seccomp", i+maxDistinct*2))
	}
	r.Add(violationN("open", "mount", 5)) // seen before the bound: still told apart
	r.AddLost(9)
	r.Finish()
	if len(r.seen) != maxDistinct || len(r.order) != maxDistinct {
		t.Errorf("%d operations told apart (%d in order), want %d", len(r.seen), len(r.order), maxDistinct)
	}
	if r.seen["open /usr/f-5"] != 2 {
		t.Errorf("a repeated operation counted %d times, want 2", r.seen["open /usr/f-5"])
	}
	want := fmt.Sprintf("sbx: %d operation(s) denied in all (%d distinct, then 320 more by kind: open/mount 300, syscall/seccomp 20); 9 more lost, read too slowly\n",
		maxDistinct+321, maxDistinct)
	if lines := strings.SplitAfter(log.String(), "\n"); lines[len(lines)-2] != want {
		t.Errorf("summary %q, want %q", lines[len(lines)-2], want)
	}
	if n := strings.Count(log.String(), "sbx: denied "); n != maxViolationLines {
		t.Errorf("%d denial lines, want %d", n, maxViolationLines)
	}
}

// TestPumpBudget: the pump reads eventsPerSecond a second at most, in
// windows of pumpWindow, sleeping out the rest of a window it used up.
func TestPumpBudget(t *testing.T) {
	c := &fakeClock{t: time.Unix(1000, 0)}
	var slept []time.Duration
	b := newPumpBudget(c.now)
	b.sleep = func(d time.Duration) { slept = append(slept, d); c.advance(d) }
	perWindow := eventsPerSecond * int(pumpWindow) / int(time.Second)
	for range perWindow {
		b.wait()
	}
	if len(slept) != 0 {
		t.Fatalf("slept %v within the budget", slept)
	}
	c.advance(pumpWindow / 4)
	b.wait() // over budget: sleeps out the window's remaining 3/4
	if len(slept) != 1 || slept[0] != pumpWindow*3/4 {
		t.Fatalf("slept %v, want [%v]", slept, pumpWindow*3/4)
	}
	for range perWindow - 1 {
		b.wait()
	}
	c.advance(2 * pumpWindow) // a quiet spell: a new window, no sleep
	b.wait()
	if len(slept) != 1 {
		t.Errorf("slept %v after a quiet spell, want no more sleeps", slept)
	}
}

// TestReaderDone: the pump ends on the reader's own ends (closed, past the
// deadline, flushed: wrapped as the ring reader wraps them) and skips a
// record it cannot decode.
func TestReaderDone(t *testing.T) {
	for _, tc := range []struct {
		err  error
		done bool
	}{
		{fmt.Errorf("ringbuffer: %w", os.ErrClosed), true},
		{os.ErrDeadlineExceeded, true},
		{fmt.Errorf("read: %w", ringbuf.ErrFlushed), true},
		{errors.New("decode trace event: syscall 90 is not traced"), false},
		{errors.New("decode event: 12 bytes, want 320"), false},
	} {
		if got := readerDone(tc.err); got != tc.done {
			t.Errorf("readerDone(%v) = %v, want %v", tc.err, got, tc.done)
		}
	}
}
