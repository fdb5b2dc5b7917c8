package pin

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestPinDirUse: a held pin directory is not removed; a released one is;
// holding a missing one is ErrNotExist (the caller's cue to load).
func TestPinDirUse(t *testing.T) {
	root := t.TempDir() // the locks are flocks: any directory will do
	if err := os.MkdirAll(filepath.Join(root, "d"), 0o700); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "d")
	u, err := Hold(dir)
	if err != nil {
		t.Fatal(err)
	}
	u2, err := Hold(dir) // shared: two runs of one build
	if err != nil {
		t.Fatal(err)
	}
	u.Release()
	if gone, err := RemoveUnused(dir); err != nil || gone {
		t.Fatalf("RemoveUnused of a held dir: gone %v, %v", gone, err)
	}
	u2.Release()
	u2.Release() // twice is fine
	if gone, err := RemoveUnused(dir); err != nil || !gone {
		t.Fatalf("RemoveUnused of a released dir: gone %v, %v", gone, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("dir still there: %v", err)
	}
	if _, err := Hold(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Hold of a missing dir: %v, want ErrNotExist", err)
	}
}
