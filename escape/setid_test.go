package escape

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSetIDFiles: the program cannot leave a setuid or setgid file in the
// (writable, host-visible) workspace for the host to run later: a copy of
// /bin/sh chmod'ed 4755 or 2755, or a file created with either mode, fails
// with EPERM (seccomp), in the amd64 and the i386 ABI, and no such file
// keeps the bit. Started by root, sbx's program runs as uid 0, so the copy
// would be a root shell for every local user. The control does the same on
// the host, where each step gets its mode.
func TestSetIDFiles(t *testing.T) {
	b := newBox(t)
	s := func(prefix string) ([]string, map[string]string, []string) {
		var list [][]string
		want := map[string]string{}
		var files []string
		for _, c := range []struct{ verb, mode string }{
			{"setid-chmod", "4755"}, {"setid-chmod", "2755"}, {"setid-chmod", "6755"},
			{"setid-create", "4755"}, {"setid-create", "2711"},
		} {
			f := prefix + "-" + c.verb + "-" + c.mode
			list = append(list, step(c.verb, f, c.mode))
			want[c.verb+"("+f+","+c.mode+")"] = "EPERM"
			files = append(files, f)
		}
		return steps(list...), want, files
	}
	noSetID := func(t *testing.T, ws string, files []string) {
		t.Helper()
		for _, f := range files {
			st, err := os.Stat(filepath.Join(ws, f))
			if err != nil {
				continue // setid-create refused: no file
			}
			if st.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
				t.Errorf("%s kept mode %v", f, st.Mode())
			}
		}
	}
	for _, abi := range []string{"amd64", "i386"} {
		t.Run(abi, func(t *testing.T) {
			bb := b.in(t)
			if abi == "i386" {
				if attack32Err != nil {
					t.Fatal(attack32Err)
				}
				bb.attack = filepath.Join(bb.ws, "attack32")
				copyFile(t, attack32Bin, bb.attack, 0o755)
			}
			list, want, files := s("in-" + abi)
			r := bb.attackIn([]string{"--write"}, list...)
			wantSteps(t, "in the sandbox ("+abi+")", r, want)
			if r.code != 0 {
				t.Errorf("in the sandbox (%s): exit %d, want 0 (every step refused)\n%v", abi, r.code, r)
			}
			noSetID(t, bb.ws, files)

			list, _, files = s("host-" + abi)
			c := bb.attackHost(opts{}, list...)
			if c.code != 66 {
				t.Errorf("control on the host (%s): exit %d, want 66 (got through)\n%v", abi, c.code, c)
			}
			for label, res := range c.steps() {
				if !strings.HasPrefix(res, "OK ") { // "OK mode 4755"
					t.Errorf("control on the host (%s): %s = %s, want OK", abi, label, res)
				}
			}
			for _, f := range files {
				if st, err := os.Stat(filepath.Join(bb.ws, f)); err != nil || st.Mode()&(os.ModeSetuid|os.ModeSetgid) == 0 {
					t.Errorf("control on the host (%s): %s: %v, %v; want a set-id bit", abi, f, st, err)
				}
			}
		})
	}
}
