package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestReclaimOwnerless: Reclaim takes the run of a dead owner, leaves a
// live owner's run alone, and does not count as reclaimed a run dir whose
// owner record is gone (its own sbx is removing it: the record goes with
// the dir, after the container), removing it only once it is stale.
func TestReclaimOwnerless(t *testing.T) {
	dirs := Dirs{Root: t.TempDir()}
	mk := func(id, owner string) string {
		t.Helper()
		d := dirs.runDir(id)
		if err := os.MkdirAll(filepath.Join(d, "rootfs"), 0o700); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			if err := os.WriteFile(filepath.Join(d, ownerFile), []byte(owner), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	start, err := procStart(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	live := mk("1111111111111111", "")
	if err := writeOwner(live); err != nil {
		t.Fatal(err)
	}
	dead := mk("2222222222222222", "2147483646 1\n") // no such pid
	going := mk("3333333333333333", "")
	stale := mk("4444444444444444", "")
	old := time.Now().Add(-2 * time.Minute)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	ids, err := Reclaim(dirs)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"2222222222222222"}; !slices.Equal(ids, want) {
		t.Errorf("reclaimed %q, want only the dead owner's %q (live owner started at %d)", ids, want, start)
	}
	for _, c := range []struct {
		dir  string
		kept bool
	}{{live, true}, {dead, false}, {going, true}, {stale, false}} {
		if _, err := os.Stat(c.dir); (err == nil) != c.kept {
			t.Errorf("%s: kept %v, want %v", c.dir, err == nil, c.kept)
		}
	}
}
