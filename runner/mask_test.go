package runner

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/bpf/lsm"
	"github.com/sbx-sandbox/sbx/sandbox"
)

// TestMaskVisibleAndProtection: which masks mount something, and where
// --protect paths become read-only entries with pinned ancestors.
func TestMaskVisibleAndProtection(t *testing.T) {
	dir := tree(t, "ws/.env", "ws/sub/deep/key.pem", "ws/ro/x", "out/f", "home/.ssh/id")
	ws := filepath.Join(dir, "ws")
	o := &Options{Write: true, Masks: []string{ws + "/.env", dir + "/home/.ssh", ws + "/sub", "/etc/hostname"},
		Protect: []string{ws + "/sub/deep/key.pem", ws + "/ro/x", dir + "/out"}}
	o.ws, o.ro, o.rw = ws, []string{ws + "/ro"}, []string{dir + "/out"}
	if err := o.resolveMaskPaths(ws); err != nil {
		t.Fatal(err)
	}
	hidden, err := o.hiddenPaths()
	if err != nil {
		t.Fatal(err)
	}
	want := []sandbox.Hidden{{Path: ws + "/.env"}, {Path: ws + "/sub", Dir: true}}
	if _, err := os.Stat("/etc/hostname"); err == nil {
		want = append(want, sandbox.Hidden{Path: "/etc/hostname"})
	}
	if !slices.Equal(hidden, want) {
		t.Errorf("hiddenPaths = %+v, want %+v (the real home's .ssh is not shown: nothing to mount)", hidden, want)
	}
	var prot Protection
	err = o.extraProtection(&prot)
	if err == nil || !slices.Contains(o.rw, dir+"/out") {
		t.Fatalf("extraProtection of a writable root: %v, want an error", err)
	}
	o.protects = slices.DeleteFunc(o.protects, func(p string) bool { return p == dir+"/out" })
	prot = Protection{}
	if err := o.extraProtection(&prot); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(prot.ReadOnly, []string{ws + "/sub/deep/key.pem"}) || !slices.Equal(prot.Pinned, []string{ws + "/sub/deep", ws + "/sub"}) {
		t.Errorf("protection = ro %q pinned %q; want the key read-only, its directories pinned, the --ro one left alone", prot.ReadOnly, prot.Pinned)
	}
	if len(prot.ids) != 3 {
		t.Errorf("ids = %v, want one per entry (checked in the sandbox by verify)", prot.ids)
	}
	// Without --write nothing in the workspace needs it.
	o.Write = false
	prot = Protection{}
	if err := o.extraProtection(&prot); err != nil || len(prot.ReadOnly) != 0 {
		t.Errorf("read-only workspace: %v %q, want nothing", err, prot.ReadOnly)
	}
}

// TestMaskLSMPolicy: the LSM tier's policy refuses each masked path by
// identity (compiled without privileges; the tier itself cannot load on
// every test host, see the bpf package's VM tests).
func TestMaskLSMPolicy(t *testing.T) {
	ws := t.TempDir()
	secret := filepath.Join(ws, ".env")
	if err := os.WriteFile(secret, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := &sandbox.Spec{Workspace: ws, Write: true, Home: t.TempDir(), Hidden: []sandbox.Hidden{{Path: secret}}}
	p := lsmPolicy(spec, os.Getpid())
	rules, err := p.Compile()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(rules, func(r lsm.FileRule) bool { return r.Path == secret })
	if i < 0 || !rules[i].Deny || rules[i].Write {
		t.Fatalf("rules = %+v, want a deny rule for %s", rules, secret)
	}
	if j := slices.IndexFunc(rules, func(r lsm.FileRule) bool { return r.Path == ws }); j < 0 || !rules[j].Write || rules[j].Deny {
		t.Fatalf("rules = %+v, want the workspace read-write", rules)
	}
}

func TestMaskFile(t *testing.T) {
	state := t.TempDir()
	// A lookalike of the wrong mode is replaced, not trusted.
	if err := os.WriteFile(filepath.Join(state, maskFileName), []byte("content"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := maskFile(state)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != 0 || fi.Mode().Perm() != 0 {
		t.Fatalf("mask file %s: %v %v", p, fi, err)
	}
	if p2, err := maskFile(state); err != nil || p2 != p {
		t.Fatalf("second maskFile = %s, %v", p2, err)
	}
}

func TestDropMasked(t *testing.T) {
	prot := Protection{
		ReadOnly: []string{"/ws/sub/.git", "/ws/.git", "/ws/.env"},
		Pinned:   []string{"/ws/sub", "/ws/subway"},
		ids:      map[string]fileID{"/ws/sub/.git": {}, "/ws/.git": {}, "/ws/.env": {}, "/ws/sub": {}, "/ws/subway": {}},
	}
	dropMasked(&prot, []sandbox.Hidden{{Path: "/ws/sub", Dir: true}, {Path: "/ws/.env"}})
	if !slices.Equal(prot.ReadOnly, []string{"/ws/.git"}) || !slices.Equal(prot.Pinned, []string{"/ws/subway"}) || len(prot.ids) != 2 {
		t.Errorf("after the masks: %+v", prot)
	}
}

func TestMaskBound(t *testing.T) {
	o := &Options{Masks: make([]string, maxMasks+1)}
	if err := o.resolveMaskPaths("/"); err == nil || !strings.Contains(err.Error(), "more than 512") {
		t.Fatalf("%d masks: %v, want refused", maxMasks+1, err)
	}
}

// TestMaskDirLinks: a file inside a masked directory whose other name lies
// outside it gets that name masked; names that stay inside the masked
// directory (or inside another mask) need none; a masked directory larger
// than the search's limits refuses the run.
func TestMaskDirLinks(t *testing.T) {
	ws := tree(t, "keys/k", "keys/sub/inner", "keys/sub/alone", "pub/x", "vault/v")
	for _, l := range [][2]string{
		{"keys/k", "pub/k-link"},          // outside: masked
		{"keys/k", "keys/sub/k-again"},    // inside the same mask
		{"keys/sub/inner", "keys/inner2"}, // inside only: nothing to add
		{"keys/sub/inner", "vault/inner"}, // inside another masked directory
		{"vault/v", "pub/deep/v-link"},    // the second masked directory's
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, l[1])), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(filepath.Join(ws, l[0]), filepath.Join(ws, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	o := &Options{Masks: []string{ws + "/keys", ws + "/vault"}}
	o.ws = ws
	if err := o.resolveMaskPaths(ws); err != nil {
		t.Fatal(err)
	}
	hidden, err := o.hiddenPaths()
	if err != nil {
		t.Fatal(err)
	}
	want := []sandbox.Hidden{{Path: ws + "/keys", Dir: true}, {Path: ws + "/vault", Dir: true}, {Path: ws + "/pub/deep/v-link"}, {Path: ws + "/pub/k-link"}}
	if !slices.Equal(hidden, want) {
		t.Errorf("hiddenPaths = %+v\nwant %+v", hidden, want)
	}
	if _, err := o.hiddenPathsWith(walkLimits{dirs: 1, time: time.Minute}); err == nil || !strings.Contains(err.Error(), "masked directory") {
		t.Errorf("a masked directory over the limits: %v, want a refusal", err)
	}
	// The control: without links leaving the masks nothing is added.
	for _, l := range []string{"pub/k-link", "pub/deep/v-link"} {
		if err := os.Remove(filepath.Join(ws, l)); err != nil {
			t.Fatal(err)
		}
	}
	if hidden, err := o.hiddenPaths(); err != nil || len(hidden) != 2 {
		t.Errorf("without links: %+v %v, want the two masks", hidden, err)
	}
}

// TestMaskLinks: the other names (hard links) of a masked file in the
// workspace and the --rw trees get masks of their own, found by inode;
// names in a masked directory, a file with one name, a symlink and a
// directory mask need none; a search that exceeds its limits while names
// are missing refuses the run.
func TestMaskLinks(t *testing.T) {
	dir := tree(t, "ws/.env", "ws/alone", "ws/sub/deep/other", "ws/keys/k", "rw/x")
	ws, rw := filepath.Join(dir, "ws"), filepath.Join(dir, "rw")
	for _, l := range [][2]string{{"ws/.env", "ws/sub/deep/env-link"}, {"ws/.env", "rw/env-link"}, {"ws/.env", "ws/keys/env-link"}, {"ws/.env", "out-link"}} {
		if err := os.Link(filepath.Join(dir, l[0]), filepath.Join(dir, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(".env", filepath.Join(ws, "env-symlink")); err != nil {
		t.Fatal(err)
	}
	o := &Options{Masks: []string{ws + "/.env", ws + "/alone", ws + "/keys"}}
	o.ws, o.rw = ws, []string{rw}
	if err := o.resolveMaskPaths(ws); err != nil {
		t.Fatal(err)
	}
	hidden, err := o.hiddenPaths()
	if err != nil {
		t.Fatal(err)
	}
	want := []sandbox.Hidden{{Path: ws + "/.env"}, {Path: ws + "/alone"}, {Path: ws + "/keys", Dir: true}, {Path: rw + "/env-link"}, {Path: ws + "/sub/deep/env-link"}}
	if !slices.Equal(hidden, want) {
		t.Errorf("hiddenPaths = %+v\nwant %+v", hidden, want)
	}
	// The control: without the links nothing is added.
	for _, l := range []string{"ws/sub/deep/env-link", "rw/env-link", "ws/keys/env-link", "out-link"} {
		if err := os.Remove(filepath.Join(dir, l)); err != nil {
			t.Fatal(err)
		}
	}
	if hidden, err := o.hiddenPaths(); err != nil || len(hidden) != 3 {
		t.Errorf("without links: %+v %v, want the three masks", hidden, err)
	}
	if err := os.Link(ws+"/.env", ws+"/sub/deep/env-link"); err != nil {
		t.Fatal(err)
	}
	if _, err := o.hiddenPathsWith(walkLimits{dirs: 1, time: time.Minute}); err == nil || !strings.Contains(err.Error(), "other names (hard links)") {
		t.Errorf("a search over its limits: %v, want a refusal", err)
	}
}
