package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The syscall probe and its expectations, maintained with the seccomp
// filter (sandbox/seccomp.go).
var (
	trysyscallSrc    = filepath.Join("..", "..", "testdata", "trysyscall", "trysyscall.c")
	trysyscallExpect = filepath.Join("..", "..", "testdata", "trysyscall", "expect.txt")
)

// probeExpect is one line of expect.txt: the result of probe name under the
// default filter, on the ABIs listed.
type probeExpect struct {
	name, result string
	abis         []string
}

func readProbeExpect(t *testing.T) []probeExpect {
	t.Helper()
	f, err := os.Open(trysyscallExpect)
	if err != nil {
		t.Fatalf("trysyscall expectations: %v", err)
	}
	defer f.Close()
	var out []probeExpect
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.Fields(l)
		if len(f) < 3 {
			t.Fatalf("%s: malformed line %q", trysyscallExpect, l)
		}
		out = append(out, probeExpect{name: f[0], result: f[1], abis: f[2:]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// parseProbes reads trysyscall's "NAME RESULT" lines.
func parseProbes(out string) map[string]string {
	m := map[string]string{}
	for _, l := range lines(out) {
		if f := strings.Fields(l); len(f) == 2 {
			m[f[0]] = f[1]
		}
	}
	return m
}

// TestSeccompDenyList runs every probe of trysyscall inside the sandbox and
// on the host: each deny-list entry gives its errno (EPERM; ENOSYS for
// clone3) inside and something else outside; controls work in both. Both
// the native (amd64) and the i386 compat ABI are probed.
func TestSeccompDenyList(t *testing.T) {
	b := newBox(t)
	if _, err := os.Stat(trysyscallSrc); err != nil {
		t.Skipf("trysyscall not present (%s): %v", trysyscallSrc, err)
	}
	expect := readProbeExpect(t)
	for _, abi := range []struct{ name, flag string }{{"amd64", ""}, {"i386", "-m32"}} {
		t.Run(abi.name, func(t *testing.T) {
			t.Parallel()
			b := b.in(t)
			bin := filepath.Join(b.ws, "trysyscall-"+abi.name)
			args := []string{"-static", "-O2", "-Wall", "-Wextra", "-o", bin, trysyscallSrc}
			if abi.flag != "" {
				args = append([]string{abi.flag}, args...)
			}
			if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
				if abi.flag != "" {
					t.Skipf("cannot build the %s probe (gcc-multilib missing?): %v\n%s", abi.name, err, out)
				}
				t.Fatalf("gcc %q: %v\n%s", args, err, out)
			}
			var names []string
			for _, e := range expect {
				if slices.Contains(e.abis, abi.name) {
					names = append(names, e.name)
				}
			}
			r := b.run(append([]string{"--net", "none", "--", bin}, names...)...)
			// Rootless, the control is the user as uid 0 of user, mount
			// and network namespaces of its own: what the program would
			// be allowed without the filter.
			c := b.hostPrivileged(opts{}, "mn", bin, names...)
			var uncontrolled []string
			if r.code != 0 || c.code != 0 {
				t.Fatalf("trysyscall: sandbox\n%v\nhost\n%v", r, c)
			}
			in, out := parseProbes(r.stdout), parseProbes(c.stdout)
			denied := 0
			for _, e := range expect {
				if !slices.Contains(e.abis, abi.name) {
					continue
				}
				got, host := in[e.name], out[e.name]
				switch {
				case got != e.result:
					t.Errorf("%s (%s) in the sandbox = %q, want %s (host: %s)", e.name, abi.name, got, e.result, host)
				case e.result == "OK" && host != "OK":
					t.Errorf("control %s (%s) on the host = %q, want OK", e.name, abi.name, host)
				case rootless() && e.result == "EPERM" && host == "EPERM":
					// The kernel refuses it to an ordinary user even in
					// its own namespaces: no control can show the filter.
					uncontrolled = append(uncontrolled, e.name)
				case e.result != "OK" && (host == e.result || host == "" || host == "EPERM" || strings.HasPrefix(host, "SETUP")):
					t.Errorf("%s (%s) on the host = %q: the probe does not show the filter at work (want a result other than %s)", e.name, abi.name, host, e.result)
				}
				if e.result != "OK" {
					denied++
				}
			}
			t.Logf("%s: %d denials checked against the host", abi.name, denied-len(uncontrolled))
			if len(uncontrolled) > 0 {
				t.Logf("%s: refused to %s outside too, by the kernel (denied inside all the same): %s", abi.name, asUser.name, strings.Join(uncontrolled, " "))
			}
		})
	}
}
