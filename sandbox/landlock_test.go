package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/sbxtest"
)

// landlockChildEnv makes the test binary act as a restricted child: it
// applies the FilePolicy in the variable and tries the operations in
// argv, printing one "op path result" line each. Landlock cannot be undone,
// so it never runs in the test process itself.
const landlockChildEnv = "SBX_TEST_LANDLOCK_CHILD"

func init() {
	raw := os.Getenv(landlockChildEnv)
	if raw == "" {
		return
	}
	var p FilePolicy
	if raw != "none" {
		if err := json.Unmarshal([]byte(raw), &p); err != nil {
			fmt.Println("bad policy:", err)
			os.Exit(2)
		}
		if err := applyLandlock(p); err != nil {
			fmt.Println("apply:", err)
			os.Exit(3)
		}
	}
	args := os.Args[len(os.Args)-1]
	for _, op := range strings.Split(args, ";") {
		kind, path, _ := strings.Cut(op, " ")
		var err error
		switch kind {
		case "read":
			_, err = os.ReadFile(path)
		case "write":
			err = os.WriteFile(path, []byte("x"), 0o600)
		case "link":
			from, to, _ := strings.Cut(path, ">")
			err = os.Link(from, to)
		case "rename":
			from, to, _ := strings.Cut(path, ">")
			err = os.Rename(from, to)
		}
		fmt.Printf("%s %s %s\n", kind, path, errName(err))
	}
	os.Exit(0)
}

func errName(err error) string {
	var errno unix.Errno
	if err == nil {
		return "OK"
	}
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	return err.Error()
}

func runLandlockChild(t *testing.T, policy string, ops string) map[string]string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", ops)
	cmd.Env = append(os.Environ(), landlockChildEnv+"="+policy)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	res := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		i := strings.LastIndexByte(line, ' ')
		if i > 0 {
			res[line[:i]] = line[i+1:]
		}
	}
	return res
}

func TestLandlockEnforced(t *testing.T) {
	if _, err := LandlockABI(); err != nil {
		sbxtest.Skip(t, sbxtest.Landlock, fmt.Sprintf("kernel lacks Landlock: %v", err))
	}
	base := t.TempDir()
	ro, rw, out := filepath.Join(base, "ro"), filepath.Join(base, "rw"), filepath.Join(base, "outside")
	for _, d := range []string{ro, rw, out} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(out, "secret")
	roFile := filepath.Join(ro, "file")
	for _, f := range []string{secret, roFile} {
		if err := os.WriteFile(f, []byte("data"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A symlink inside the writable dir pointing outside: Landlock follows
	// it to the file's real place, which is outside the set.
	if err := os.Symlink(secret, filepath.Join(rw, "alias")); err != nil {
		t.Fatal(err)
	}
	pol, _ := json.Marshal(FilePolicy{
		ReadExec:  []string{"/usr", "/lib", "/lib64", "/etc", ro},
		ReadWrite: []string{rw, "/proc"},
		Devices:   []string{"/dev"},
		Canary:    secret,
	})
	ops := []struct{ op, want string }{
		{"read " + secret, "EACCES"},
		{"read " + filepath.Join(rw, "alias"), "EACCES"},
		{"read /proc/self/root" + secret, "EACCES"},
		{"read " + roFile, "OK"},
		{"write " + roFile, "EACCES"},
		{"write " + filepath.Join(rw, "new"), "OK"},
		{"write " + filepath.Join(out, "created"), "EACCES"},
		{"link " + secret + ">" + filepath.Join(rw, "hard"), "EXDEV"},
		{"rename " + filepath.Join(rw, "new") + ">" + filepath.Join(out, "moved"), "EACCES"},
	}
	var list []string
	for _, o := range ops {
		list = append(list, o.op)
	}
	got := runLandlockChild(t, string(pol), strings.Join(list, ";"))
	for _, o := range ops {
		if got[o.op] != o.want {
			t.Errorf("restricted: %s = %s, want %s", o.op, got[o.op], o.want)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "created")); err == nil {
		t.Errorf("a denied create left %s behind", filepath.Join(out, "created"))
	}
	// Control: without the policy, the same operations succeed.
	os.Remove(filepath.Join(rw, "new"))
	ctrl := runLandlockChild(t, "none", strings.Join(list[:4], ";"))
	for _, op := range list[:4] {
		if ctrl[op] != "OK" {
			t.Errorf("unrestricted control: %s = %s, want OK", op, ctrl[op])
		}
	}
}

func TestLandlockCanaryDetectsMissingPolicy(t *testing.T) {
	if _, err := LandlockABI(); err != nil {
		sbxtest.Skip(t, sbxtest.Landlock, fmt.Sprintf("kernel lacks Landlock: %v", err))
	}
	// A policy that grants the canary's own directory cannot be proven:
	// the canary opens, and applyLandlock must refuse.
	dir := t.TempDir()
	canary := filepath.Join(dir, "canary")
	if err := os.WriteFile(canary, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	pol, _ := json.Marshal(FilePolicy{ReadExec: []string{"/usr", "/lib", "/lib64", dir}, Canary: canary})
	cmd := exec.Command(os.Args[0], "-test.run=^$", "read /etc/hostname")
	cmd.Env = append(os.Environ(), landlockChildEnv+"="+string(pol))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || !strings.Contains(string(out), "could still be opened") {
		t.Fatalf("sabotaged policy: err=%v out=%q, want exit 3 naming the canary", err, out)
	}
}
