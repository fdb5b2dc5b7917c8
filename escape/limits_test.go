package escape

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestForkBomb: a fork bomb (every process makes two more and exits, as
// :(){ :|:& };: does) running for a second, while the program keeps PID 1
// busy forwarding SIGWINCH, is held at --pids: fork fails with EAGAIN, the
// sandbox never holds more processes than the limit, sbx reports the
// program's own status when it gives up, and the rest of the bomb dies
// with the sandbox. Twice, since what goes wrong here (PID 1, the shim,
// cannot start a thread either: bugs.md) does not happen every time.
func TestForkBomb(t *testing.T) {
	b := newBox(t)
	const pids = 24
	for i := 0; i < 2 && !t.Failed(); i++ {
		r := b.attackIn([]string{"--pids", strconv.Itoa(pids)}, "forkbomb", "1")
		res := r.steps()["forkbomb(1)"]
		var n int
		if _, err := fmt.Sscanf(res, "EAGAIN procs %d", &n); err != nil || n < 2 || n > pids {
			t.Errorf("fork bomb under --pids %d: want EAGAIN with 2..%d processes, got %q\n%v", pids, pids, res, r)
		}
		if r.code != 0 {
			t.Errorf("sbx exit %d, want the program's 0\n%v", r.code, r)
		}
	}
}

// TestMemoryBomb: allocating past --memory gets the program killed by the
// kernel's OOM killer inside the sandbox's cgroup: exit 137, and sbx says
// so. The control gives the same helper room and it allocates it all.
func TestMemoryBomb(t *testing.T) {
	b := newBox(t)
	r := b.attackIn([]string{"--memory", "32m"}, "membomb", "256")
	if r.code != 128+int(syscall.SIGKILL) || !strings.Contains(r.stderr, "sbx: out of memory: the program was killed at its 32m limit") {
		t.Errorf("256 MiB under --memory 32m: want exit 137 and sbx's out-of-memory line\n%v", r)
	}
	c := b.attackIn([]string{"--memory", "256m"}, "membomb", "64")
	if c.code != escaped || c.steps()["membomb(64)"] != "OK 64 MiB" {
		t.Errorf("control: 64 MiB under --memory 256m\n%v", c)
	}
}

// argSize is what execve(2) counts against the argument limit for argv and
// env: each string with its NUL and a pointer to it.
func argSize(argv, env []string) int {
	n := 0
	for _, s := range append(append([]string{}, argv...), env...) {
		n += len(s) + 1 + 8
	}
	return n
}

// TestHugeArgv: argument lists up to what the kernel takes reach the
// program intact; right at the limit (sbx itself could still be started,
// but sbx's additions for the shim tip it over), sbx must fail cleanly: a
// documented status (125 or 126) and one "sbx:" line, nothing left behind,
// no crash.
func TestHugeArgv(t *testing.T) {
	b := newBox(t)
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_STACK, &rl); err != nil {
		t.Fatal(err)
	}
	// The kernel allows argv+env up to a quarter of the stack limit
	// (at most 6 MiB / 4 * 3), one string up to 32 pages.
	limit := min(int(rl.Cur/4), 6<<20/4*3)
	const maxStr = 32*4096 - 1
	big := strings.Repeat("a", maxStr)
	env := []string{"PATH=/usr/bin:/bin"}
	base := []string{sbxBin, "run", "--home", "tmp", "--", b.attack, "argv"}

	t.Run("large", func(t *testing.T) {
		args := append(append([]string{}, base[1:]...), big, big, big, big, big, big, big, big)
		r, pid := b.in(t).exec(opts{env: env}, sbxBin, args...)
		assertNoLeftovers(t, pid)
		want := "INFO " + strconv.Itoa(10) + " args " + strconv.Itoa(len(b.attack)+1+len("argv")+1+8*(maxStr+1)) + " bytes"
		if r.code != 0 || r.steps()["argv"] != want {
			t.Errorf("8 arguments of 128 KiB: want the program to get them (%q)\n%v", want, r)
		}
	})
	t.Run("at the limit", func(t *testing.T) {
		args := append([]string{}, base...)
		for argSize(append(args, big), env)+len(sbxBin)+1 < limit-64 {
			args = append(args, big)
		}
		// Fill up to 64 bytes below the limit: sbx still starts, the
		// shim's environment (its config, several hundred bytes) does
		// not fit any more.
		rest := limit - 64 - len(sbxBin) - 1 - argSize(append(args, ""), env)
		args = append(args, strings.Repeat("b", max(rest, 0)))
		r, pid := b.in(t).exec(opts{env: env}, sbxBin, args[1:]...)
		assertNoLeftovers(t, pid)
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
			// Another test's killed sbx, reclaimed by this run.
			if !strings.HasPrefix(l, "sbx: cleaned up ") {
				lines = append(lines, l)
			}
		}
		if r.code == 0 {
			t.Logf("the program ran with %d bytes of arguments (sbx added less than 64 bytes)", argSize(args, env))
			return
		}
		if (r.code != exitSbx && r.code != 126) || len(lines) != 1 || !strings.HasPrefix(lines[0], "sbx: ") ||
			!strings.Contains(strings.ToLower(r.stderr), "argument list too long") || strings.Contains(r.stderr, "panic") {
			t.Errorf("argv at the limit: want exit 125 or 126 and one \"sbx: ... argument list too long\" line\n%v", r)
		}
	})
}
