package sandbox

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var updateProfile = flag.Bool("update-apparmor", false, "rewrite contrib/apparmor/sbx")

// fakeProc writes a /proc tree with the given sysctl value and label
// ("" leaves the file out).
func fakeProc(t *testing.T, sysctl, label string) string {
	t.Helper()
	root := t.TempDir()
	if sysctl != "" {
		p := filepath.Join(root, "sys/kernel/apparmor_restrict_unprivileged_userns")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(sysctl), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if label != "" {
		p := filepath.Join(root, "self/attr/current")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(label), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestUsernsRestriction(t *testing.T) {
	for _, tc := range []struct {
		name, sysctl, label string
		restricted, blocks  bool
	}{
		{"no sysctl (Debian, no AppArmor patch)", "", "", false, false},
		{"sysctl 0", "0\n", "unconfined\n", false, false},
		{"restricted, unconfined", "1\n", "unconfined\n", true, true},
		{"restricted, no label file", "1\n", "", true, true},
		{"restricted, under the sbx profile", "1\n", "sbx (unconfined)\n", true, false},
		{"restricted, label with NUL", "1", "unconfined\x00", true, true},
		{"garbage value", "yes\n", "unconfined\n", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ReadUsernsRestriction(fakeProc(t, tc.sysctl, tc.label))
			if r.Restricted != tc.restricted || r.Blocks() != tc.blocks {
				t.Errorf("got restricted=%v blocks=%v (label %q), want %v %v", r.Restricted, r.Blocks(), r.Label, tc.restricted, tc.blocks)
			}
		})
	}
}

// The shipped profile is AppArmorProfile for the default install path.
func TestContribProfile(t *testing.T) {
	path := filepath.Join("..", "contrib", "apparmor", "sbx")
	want := AppArmorProfile("/usr/local/bin/sbx")
	if *updateProfile {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s is not AppArmorProfile(\"/usr/local/bin/sbx\"); run go test ./sandbox -run TestContribProfile -update-apparmor\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}
