package tracer

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/internal/cgroup2"
	"golang.org/x/sys/unix"
)

// BenchmarkTraceOpen measures what the tracer costs a syscall: an
// open()+close() of /etc/hostname by this process outside any run with the
// tracer detached and attached (the host's cost), and inside a run cgroup
// (the filter's whole cost, no refusal); plus a refused rename (EXDEV
// across filesystems: an event written per call) inside. Compare the
// sub-benchmarks of one invocation, with -count.
func BenchmarkTraceOpen(b *testing.B) {
	env := newTraceEnv(b)
	if err := env.use.Release(); err != nil {
		b.Fatal(err)
	}
	open := func(b *testing.B) {
		for b.Loop() {
			fd, err := unix.Open("/etc/hostname", unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				b.Fatal(err)
			}
			unix.Close(fd)
		}
	}
	attached := func(b *testing.B, f func(*testing.B)) {
		u, err := env.trace.Acquire()
		if err != nil {
			b.Fatal(err)
		}
		defer u.Release()
		f(b)
	}
	inRun := func(b *testing.B, f func(*testing.B)) {
		self, err := os.ReadFile("/proc/self/cgroup")
		if err != nil {
			b.Fatal(err)
		}
		home := ""
		for _, l := range splitLines(string(self)) {
			if len(l) > 3 && l[:3] == "0::" {
				home = l[3:]
			}
		}
		mnt, _ := cgroup2.Mount()
		pid := []byte(strconv.Itoa(os.Getpid()))
		if err := os.WriteFile(filepath.Join(env.run, "cgroup.procs"), pid, 0); err != nil {
			b.Fatal(err)
		}
		defer os.WriteFile(filepath.Join(mnt, home, "cgroup.procs"), pid, 0)
		f(b)
	}
	b.Run("host-detached", open)
	b.Run("host-attached", func(b *testing.B) { attached(b, open) })
	b.Run("run-attached", func(b *testing.B) { attached(b, func(b *testing.B) { inRun(b, open) }) })
	b.Run("run-attached-refused", func(b *testing.B) {
		src := filepath.Join(b.TempDir(), "f")
		if err := os.WriteFile(src, nil, 0o600); err != nil {
			b.Fatal(err)
		}
		attached(b, func(b *testing.B) {
			inRun(b, func(b *testing.B) {
				for b.Loop() {
					if err := unix.Rename(src, "/dev/shm/sbx-bench"); err != unix.EXDEV {
						b.Fatalf("rename across filesystems: %v, want EXDEV", err)
					}
				}
			})
		})
	})
}

// BenchmarkTraceAcquire is a run's cost for the tracer: Acquire and
// Release, when the run is the only one (attaching and detaching) and when
// another run holds it attached.
func BenchmarkTraceAcquire(b *testing.B) {
	env := newTraceEnv(b)
	cycle := func(b *testing.B) {
		for b.Loop() {
			u, err := env.trace.Acquire()
			if err != nil {
				b.Fatal(err)
			}
			if err := u.Release(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("shared", cycle)
	if err := env.use.Release(); err != nil {
		b.Fatal(err)
	}
	b.Run("alone-back-to-back", cycle)
	// Runs are tens of milliseconds apart at least: the kernel then has no
	// recent detach to wait for (a tracepoint that goes from one callback
	// to none and back waits for an RCU grace period). Only Acquire and
	// Release are timed.
	for _, step := range []string{"acquire", "release"} {
		b.Run("alone-"+step, func(b *testing.B) {
			b.StopTimer()
			for i := 0; i < b.N; i++ {
				time.Sleep(30 * time.Millisecond)
				if step == "acquire" {
					b.StartTimer()
				}
				u, err := env.trace.Acquire()
				if err != nil {
					b.Fatal(err)
				}
				if step == "acquire" {
					b.StopTimer()
				} else {
					b.StartTimer()
				}
				err = u.Release()
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		out = append(out, s[:i])
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return out
}

// BenchmarkOpenTraceWarm is Open reusing the pinned program (what
// each run pays besides Acquire and Release).
func BenchmarkOpenTraceWarm(b *testing.B) {
	env := newTraceEnv(b)
	for b.Loop() {
		tr, err := Open(env.parent, env.net.EventMaps(), &Options{PinRoot: env.pinRoot})
		if err != nil {
			b.Fatal(err)
		}
		if tr.Loaded() {
			b.Fatal("loaded again: the pins were not reused")
		}
		tr.Close()
	}
}

// BenchmarkOpenTraceCold is Open loading and verifying the program
// (the first run after boot or an upgrade).
func BenchmarkOpenTraceCold(b *testing.B) {
	env := newTraceEnv(b)
	for b.Loop() {
		if err := env.trace.Unpin(); err != nil {
			b.Fatal(err)
		}
		tr, err := Open(env.parent, env.net.EventMaps(), &Options{PinRoot: env.pinRoot})
		if err != nil {
			b.Fatal(err)
		}
		if !tr.Loaded() {
			b.Fatal("pins reused")
		}
		tr.Close()
	}
}
