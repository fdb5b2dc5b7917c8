package settings

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestMergeByIdentity: whether a tighten-only file's allowWrite entry is
// covered by the base's writable paths is decided on what the paths are,
// never on their names: a symlink at any component of the later path is
// refused, a path named through the base's own symlink is covered, a
// sibling whose name starts like a writable path is not. Each case's
// outcome is in testdata/merge-identity.golden (the temp dir as ROOT).
func TestMergeByIdentity(t *testing.T) {
	env := realEnv(t)
	ws, home := env.Cwd, env.Home // ROOT/ws, ROOT/home
	mk := func(rel string) {
		if err := os.MkdirAll(filepath.Join(filepath.Dir(ws), rel), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mk("ws/build.real")
	mk("ws/sub/deep")
	mk("ws/.git/hooks")
	mk("ws2")
	mk("other")
	if err := os.WriteFile(filepath.Join(home, ".bashrc"), []byte("# rc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"ws/build-rc":   filepath.Join(home, ".bashrc"),
		"ws/build-home": home,
		"ws/build-rel":  "build.real",
		"ws/via":        "sub",
		"ws-link":       "ws",
	} {
		if err := os.Symlink(target, filepath.Join(filepath.Dir(ws), link)); err != nil {
			t.Fatal(err)
		}
	}
	parse := func(j string) Policy {
		t.Helper()
		p, err := Parse([]byte(j), env)
		if err != nil {
			t.Fatal(err)
		}
		p.Files = []string{"later.json"}
		return p
	}
	base := parse(`{"filesystem": {"allowWrite": ["."]}}`)
	base.Files = []string{"base.json"}
	// A base that names the workspace through a symlink: the base is
	// trusted, its symlinks are the user's.
	linked := parse(`{"filesystem": {"allowWrite": ["../ws-link"]}}`)
	linked.Files = []string{"base.json"}
	cases := []struct {
		name  string
		base  Policy
		later string
	}{
		{"the workspace itself", base, `["."]`},
		{"a real subdirectory", base, `["./sub/deep"]`},
		{"the protected .git (the runner keeps it closed)", base, `[".", "./.git"]`},
		{"symlink to ~/.bashrc", base, `["./build-rc"]`},
		{"symlink to the home", base, `["./build-home"]`},
		{"symlink inside the workspace", base, `["./build-rel"]`},
		{"symlink at a middle component", base, `["./via/deep"]`},
		{"a sibling named like the workspace", base, `["../ws2"]`},
		{"outside by ..", base, `["./sub/../../other"]`},
		{"missing", base, `["./nope"]`},
		{"the home", base, `["~"]`},
		{"base through a symlink, later by the real name", linked, `["./sub"]`},
	}
	var out strings.Builder
	for _, tc := range cases {
		_, err := Merge(tc.base, parse(`{"filesystem": {"allowWrite": `+tc.later+`}}`))
		res := "covered"
		if err != nil {
			res = err.Error()
		}
		res = strings.ReplaceAll(res, filepath.Dir(ws), "ROOT")
		fmt.Fprintf(&out, "%s: allowWrite %s\n\t%s\n", tc.name, tc.later, res)
	}
	golden := filepath.Join("testdata", "merge-identity.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != string(want) {
		t.Errorf("got:\n%s\nwant (%s):\n%s", out.String(), golden, want)
	}
}
