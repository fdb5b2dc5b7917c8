package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestNoSetIDFiles: the program cannot leave a setuid or setgid file on the
// host (sbx started by root would otherwise let it plant a setuid-root
// shell; under sudo, a shell of the user's). In a writable workspace,
// chmod 4755, 2755, u+s and g+s, install -m 4755, and cp -p and tar -xp of
// a setuid file all fail (EPERM from seccomp, reported with tier seccomp
// where sbx reports denials), and no file inside has either bit, while
// chmod 0755 works inside and chmod 4755 of the same file works on the
// host. Each syscall in both ABIs: TestSeccompDenyList (trysyscall's
// chmod-*, fchmod*, open*, creat*, mknod* probes).
func TestNoSetIDFiles(t *testing.T) {
	b := newBox(t)
	// A setuid file of the program's user, made on the host, to copy and
	// to unpack inside (cp -p keeps the bit only of a file whose owner it
	// can keep; chown clears the bit, so it is set after).
	src := filepath.Join(b.ws, "src")
	writeFile(t, src, "#!/bin/sh\n", 0o755)
	chownToUser(t, src)
	if err := os.Chmod(src, 0o755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	if r := b.host(opts{}, "tar", "-cf", "src.tar", "--transform", "s/src/untarred/", "src"); r.code != 0 {
		t.Fatalf("tar on the host: %v", r)
	}
	chownToUser(t, filepath.Join(b.ws, "src.tar"))
	viol := filepath.Join(b.tempDir(), "v.jsonl")
	script := `
cp /bin/true plain && chmod 0755 plain && echo plain=ok
cp /bin/true t
chmod 4755 t || echo setuid=refused
chmod 2755 t || echo setgid=refused
chmod u+s t || echo u+s=refused
chmod g+s t || echo g+s=refused
install -m 4755 /bin/true installed || echo install=refused
cp -p src copied || echo cp-p=refused
tar -xpf src.tar || echo tar-xp=refused
mkdir d && chmod 2775 d || echo dir-setgid=refused
`
	r := b.run("--write", "--violations", viol, "--", "sh", "-c", script)
	want := []string{"plain=ok", "setuid=refused", "setgid=refused", "u+s=refused", "g+s=refused",
		"install=refused", "cp-p=refused", "tar-xp=refused", "dir-setgid=refused"}
	if got := lines(r.stdout); !slices.Equal(got, want) {
		t.Errorf("inside: %q, want %q\n%v", got, want, r)
	}
	if n := strings.Count(r.stderr, "Operation not permitted"); n < len(want)-1 {
		t.Errorf("%d EPERM messages, want at least %d:\n%s", n, len(want)-1, r.stderr)
	}
	for _, name := range []string{"plain", "t", "installed", "copied", "untarred", "d"} {
		st, err := os.Lstat(filepath.Join(b.ws, name))
		if err != nil {
			// install, cp and tar may remove what they could not finish.
			t.Logf("%s: %v", name, err)
			continue
		}
		if m := st.Mode(); m&(os.ModeSetuid|os.ModeSetgid) != 0 {
			t.Errorf("%s left with mode %v", name, m)
		}
	}

	// Control: the same file takes the mode on the host.
	tf := filepath.Join(b.ws, "t")
	if err := os.Chmod(tf, 0o755|os.ModeSetuid); err != nil {
		t.Fatalf("chmod 4755 on the host: %v", err)
	}
	if st, err := os.Stat(tf); err != nil || st.Mode()&os.ModeSetuid == 0 {
		t.Errorf("host chmod 4755: %v, %v; want the setuid bit", st.Mode(), err)
	}

	// Reported: one seccomp record per refused chmod of t, with the mode.
	data, _ := os.ReadFile(viol)
	var got []string
	for _, l := range lines(string(data)) {
		var v struct{ Op, Target, Errno, Tier string }
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("--violations line %q: %v", l, err)
		}
		if v.Tier == "seccomp" && v.Op == "chmod" && strings.HasPrefix(v.Target, tf+" ") {
			got = append(got, v.Target+" "+v.Errno)
		}
	}
	wantV := reported([]string{tf + " mode 04755 EPERM", tf + " mode 02755 EPERM", tf + " mode 04755 EPERM", tf + " mode 02755 EPERM"})
	if !slices.Equal(got, wantV) {
		t.Errorf("seccomp chmod records of t: %q, want %q\n%s", got, wantV, data)
	}
}
