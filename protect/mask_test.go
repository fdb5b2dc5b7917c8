package protect

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sbx-sandbox/sbx/sandbox"
)

func TestMaskFile(t *testing.T) {
	state := t.TempDir()
	// A lookalike of the wrong mode is replaced, not trusted.
	if err := os.WriteFile(filepath.Join(state, MaskFileName), []byte("content"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := MaskFile(state)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != 0 || fi.Mode().Perm() != 0 {
		t.Fatalf("mask file %s: %v %v", p, fi, err)
	}
	if p2, err := MaskFile(state); err != nil || p2 != p {
		t.Fatalf("second maskFile = %s, %v", p2, err)
	}
}

func TestDropMasked(t *testing.T) {
	prot := Protection{
		ReadOnly: []string{"/ws/sub/.git", "/ws/.git", "/ws/.env"},
		Pinned:   []string{"/ws/sub", "/ws/subway"},
		ids:      map[string]fileID{"/ws/sub/.git": {}, "/ws/.git": {}, "/ws/.env": {}, "/ws/sub": {}, "/ws/subway": {}},
	}
	DropMasked(&prot, []sandbox.Hidden{{Path: "/ws/sub", Dir: true}, {Path: "/ws/.env"}})
	if !slices.Equal(prot.ReadOnly, []string{"/ws/.git"}) || !slices.Equal(prot.Pinned, []string{"/ws/subway"}) || len(prot.ids) != 2 {
		t.Errorf("after the masks: %+v", prot)
	}
}
