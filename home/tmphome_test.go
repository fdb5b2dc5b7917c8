package home

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSweepTmpHomes: the throwaway home of a run whose sbx is gone (its
// record unlocked) is removed; a live run's, and one without a record (an
// older version's) younger than a day, stay.
func TestSweepTmpHomes(t *testing.T) {
	state := t.TempDir()
	old := time.Now().Add(-2 * time.Minute)
	mk := func(id string, age time.Time) string {
		d, err := os.MkdirTemp("", TmpPrefix+id+"-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		if err := os.WriteFile(filepath.Join(d, "f"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(d, age, age); err != nil {
			t.Fatal(err)
		}
		return d
	}
	const deadID, liveID, unregID = "dead00000000000a", "11ee00000000000b", "feed0000000000cd"
	dead := mk(deadID, old)
	l, err := RegisterTmp(state, deadID)
	if err != nil {
		t.Fatal(err)
	}
	l.Close() // its sbx died
	live := mk(liveID, old)
	hold, err := RegisterTmp(state, liveID)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	unreg := mk(unregID, old)
	SweepTmp(state)
	if _, err := os.Stat(dead); err == nil {
		t.Error("the dead run's throwaway home is still there")
	}
	if _, err := os.Stat(TmpLock(state, deadID)); err == nil {
		t.Error("the dead run's record is still there")
	}
	for _, d := range []string{live, unreg} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed", d)
		}
	}
}
