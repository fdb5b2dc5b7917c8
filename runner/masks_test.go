package runner

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/bpf/lsm"
	"github.com/sbx-sandbox/sbx/protect"
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
	hidden, err := o.mounts().Hidden(o.masks, o.protects)
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
	var prot protect.Protection
	err = o.mounts().Extra(&prot, o.protects)
	if err == nil || !slices.Contains(o.rw, dir+"/out") {
		t.Fatalf("extraProtection of a writable root: %v, want an error", err)
	}
	o.protects = slices.DeleteFunc(o.protects, func(p string) bool { return p == dir+"/out" })
	prot = protect.Protection{}
	if err := o.mounts().Extra(&prot, o.protects); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(prot.ReadOnly, []string{ws + "/sub/deep/key.pem"}) || !slices.Equal(prot.Pinned, []string{ws + "/sub/deep", ws + "/sub"}) {
		t.Errorf("protection = ro %q pinned %q; want the key read-only, its directories pinned, the --ro one left alone", prot.ReadOnly, prot.Pinned)
	}
	for _, p := range append(slices.Clone(prot.ReadOnly), prot.Pinned...) {
		if _, ok := prot.ID(p); !ok {
			t.Errorf("no id of %s, want one per entry (checked in the sandbox by Verify)", p)
		}
	}
	// Without --write nothing in the workspace needs it.
	o.Write = false
	prot = protect.Protection{}
	if err := o.mounts().Extra(&prot, o.protects); err != nil || len(prot.ReadOnly) != 0 {
		t.Errorf("read-only workspace: %v %q, want nothing", err, prot.ReadOnly)
	}
}

func TestMaskBound(t *testing.T) {
	o := &Options{Masks: make([]string, protect.MaxMasks+1)}
	if err := o.resolveMaskPaths("/"); err == nil || !strings.Contains(err.Error(), "more than 512") {
		t.Fatalf("%d masks: %v, want refused", protect.MaxMasks+1, err)
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
	hidden, err := o.mounts().Hidden(o.masks, o.protects)
	if err != nil {
		t.Fatal(err)
	}
	want := []sandbox.Hidden{{Path: ws + "/keys", Dir: true}, {Path: ws + "/vault", Dir: true}, {Path: ws + "/pub/deep/v-link"}, {Path: ws + "/pub/k-link"}}
	if !slices.Equal(hidden, want) {
		t.Errorf("hiddenPaths = %+v\nwant %+v", hidden, want)
	}
	if _, err := o.mounts().HiddenWith(o.masks, o.protects, protect.Limits{Dirs: 1, Time: time.Minute}); err == nil || !strings.Contains(err.Error(), "masked directory") {
		t.Errorf("a masked directory over the limits: %v, want a refusal", err)
	}
	// The control: without links leaving the masks nothing is added.
	for _, l := range []string{"pub/k-link", "pub/deep/v-link"} {
		if err := os.Remove(filepath.Join(ws, l)); err != nil {
			t.Fatal(err)
		}
	}
	if hidden, err := o.mounts().Hidden(o.masks, o.protects); err != nil || len(hidden) != 2 {
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
	hidden, err := o.mounts().Hidden(o.masks, o.protects)
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
	if hidden, err := o.mounts().Hidden(o.masks, o.protects); err != nil || len(hidden) != 3 {
		t.Errorf("without links: %+v %v, want the three masks", hidden, err)
	}
	if err := os.Link(ws+"/.env", ws+"/sub/deep/env-link"); err != nil {
		t.Fatal(err)
	}
	if _, err := o.mounts().HiddenWith(o.masks, o.protects, protect.Limits{Dirs: 1, Time: time.Minute}); err == nil || !strings.Contains(err.Error(), "other names (hard links)") {
		t.Errorf("a search over its limits: %v, want a refusal", err)
	}
}

// tree builds a workspace from specs: "d/" a directory, "f" an empty
// file, "f=TEXT" a file with TEXT, "l->TARGET" a symlink.
func tree(t *testing.T, specs ...string) string {
	t.Helper()
	ws := t.TempDir()
	for _, s := range specs {
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
	return ws
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
