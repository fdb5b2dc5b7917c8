package protect

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// grow changes the tree at ws as a run would: "-NAME" removes NAME,
// "FROM=>TO" renames FROM to TO, the other specs are tree's.
func grow(t *testing.T, ws string, specs ...string) {
	t.Helper()
	for _, s := range specs {
		if from, to, ok := strings.Cut(s, "=>"); ok {
			if err := os.Rename(filepath.Join(ws, from), filepath.Join(ws, to)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if name, ok := strings.CutPrefix(s, "-"); ok {
			if err := os.RemoveAll(filepath.Join(ws, name)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		name, target, link := strings.Cut(s, "->")
		name, text, _ := strings.Cut(name, "=")
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case link:
			err = os.Symlink(target, p)
		case strings.HasSuffix(name, "/"):
			err = os.MkdirAll(p, 0o755)
		default:
			err = os.WriteFile(p, []byte(text), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestCreated(t *testing.T) {
	for _, tc := range []struct {
		name   string
		start  []string // the tree at the start of the run
		run    []string // what the run changes (see grow)
		rw     []string // --rw paths of the command line, relative
		policy bool     // rw are a policy's, not the command line's
		want   []string
	}{
		{"new pkg/.pi", []string{"pkg/a"}, []string{"pkg/.pi/extensions/x.ts=evil"}, nil, false, []string{"pkg/.pi"}},
		{"new nested .git", nil, []string{"sub/.git/hooks/pre-commit=evil"}, nil, false, []string{"sub/.git"}},
		{"new workflows in .github", []string{".github/CODEOWNERS"}, []string{".github/workflows/ci.yml"}, nil, false, []string{".github/workflows"}},
		{"new symlink .envrc", nil, []string{".envrc->/etc/passwd"}, nil, false, []string{".envrc"}},
		{"new home name at the top", nil, []string{".bashrc=evil", ".config/sbx/config.toml"}, nil, false, []string{".bashrc", ".config/sbx"}},
		{"existing entries unchanged", []string{".git/config", "pkg/.pi/settings.json", ".envrc"}, []string{"pkg/src/x/"}, nil, false, []string{}},
		{"existing file replaced", []string{".envrc=old"}, []string{"-.envrc", "x=pad", ".envrc=new"}, nil, false, []string{".envrc"}},
		{"a directory above a repository renamed", []string{"lib/repo/.git/config", "lib/repo/a"}, []string{"lib=>lib2"}, nil, false, []string{}},
		{"ordinary directories", nil, []string{"pkg/src/x/", "pi/", "git/hooks/"}, nil, false, []string{}},
		{"new entry inside an --rw tree", []string{"lib/a"}, []string{"lib/.pi/x"}, []string{"lib"}, false, []string{"lib/.pi"}},
		{"opened by the command line", []string{"pkg/.pi/settings.json"}, []string{"pkg/.pi/extensions/x.ts"}, []string{"pkg/.pi"}, false, []string{}},
		{"below a symlink", []string{"out/", "link->out"}, []string{"out/.pi/x"}, nil, false, []string{"out/.pi"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := tree(t, tc.start...)
			var rw []string
			for _, p := range tc.rw {
				rw = append(rw, filepath.Join(ws, p))
			}
			tr := trees{ws: ws, write: true, rw: rw, open: rw}
			start, err := protectTrees(tr, DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			grow(t, ws, tc.run...)
			got, err := created(start, tr, DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			if r := rel(ws, got); !reflect.DeepEqual(r, tc.want) {
				t.Errorf("created = %q, want %q", r, tc.want)
			}
		})
	}
}

// TestCreatedBounds: the walk at the end has the start's limits and says
// when it stops.
func TestCreatedBounds(t *testing.T) {
	ws := tree(t, "a/b/c/d/")
	tr := trees{ws: ws, write: true}
	lim := Limits{Dirs: 10, Time: time.Minute, Mounts: 10}
	start, err := protectTrees(tr, lim)
	if err != nil {
		t.Fatal(err)
	}
	grow(t, ws, "a/1/", "a/2/", "a/3/", "a/4/", "a/5/", "a/6/", "a/7/", "a/.pi/x")
	if _, err := created(start, tr, lim); err == nil || !strings.Contains(err.Error(), "more than 10 directories") {
		t.Errorf("created = %v, want the limit's error", err)
	}
	if got, err := created(start, tr, DefaultLimits); err != nil || !reflect.DeepEqual(rel(ws, got), []string{"a/.pi"}) {
		t.Errorf("created = %q, %v (control: within the limits)", rel(ws, got), err)
	}
}
