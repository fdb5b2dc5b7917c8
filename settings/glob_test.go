package settings

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestGlobSymlinkLoop: a pattern over a tree with symlink loops (each
// directory links to itself twice) is expanded without entering a
// symlink: 20 components take well under 2 s and 100 MiB (following the
// links made it 4^20 paths), and the matches are the real entries only.
func TestGlobSymlinkLoop(t *testing.T) {
	cwd := t.TempDir()
	for _, l := range []string{"a", "b"} {
		if err := os.Symlink(".", filepath.Join(cwd, l)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(cwd, "d", "e"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cwd, "d", "e", "x.pem"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	env := Env{Home: cwd, Cwd: cwd}
	deep := strings.Repeat("*/", 19) + "*.pem"
	for _, tc := range []struct {
		pattern string
		want    []string
	}{
		{deep, nil},
		{"*/*/*.pem", []string{filepath.Join(cwd, "d", "e", "x.pem")}},
		{"*.pem", []string{filepath.Join(cwd, "d", "e", "x.pem")}},
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		p, err := Parse([]byte(`{"filesystem": {"denyRead": ["`+tc.pattern+`"]}}`), env)
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatalf("%s: %v", tc.pattern, err)
		}
		if took > 2*time.Second || after.TotalAlloc-before.TotalAlloc > 100<<20 {
			t.Errorf("%s: took %v and %d MiB", tc.pattern, took, (after.TotalAlloc-before.TotalAlloc)>>20)
		}
		if !slices.Equal(p.Mask, tc.want) {
			t.Errorf("%s: matched %q, want %q", tc.pattern, p.Mask, tc.want)
		}
	}
}

// TestGlobBudget: an expansion that reads more directories or entries
// than its budget fails, saying so; the control, with the budget above
// the tree's size, succeeds.
func TestGlobBudget(t *testing.T) {
	cwd := t.TempDir()
	for i := range 30 {
		if err := os.MkdirAll(filepath.Join(cwd, "d", strings.Repeat("x", i+1)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := Env{Home: cwd, Cwd: cwd}
	oldDirs, oldEntries := globDirs, globEntries
	t.Cleanup(func() { globDirs, globEntries = oldDirs, oldEntries })
	for _, pattern := range []string{"d/*/*.pem", "*.pem"} {
		globDirs, globEntries = 100, 100
		if _, err := Parse([]byte(`{"filesystem": {"denyRead": ["`+pattern+`"]}}`), env); err != nil {
			t.Fatalf("control %s: %v", pattern, err)
		}
		for _, lim := range []struct{ dirs, entries int }{{10, 100}, {100, 10}} {
			globDirs, globEntries = lim.dirs, lim.entries
			_, err := Parse([]byte(`{"filesystem": {"denyRead": ["`+pattern+`"]}}`), env)
			if !errors.Is(err, errBudget) || !strings.Contains(err.Error(), fmt.Sprintf("read more than %d directories or %d entries", lim.dirs, lim.entries)) {
				t.Errorf("%s over budget %+v: %v", pattern, lim, err)
			}
		}
	}
}
