package policy

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/sbx-sandbox/sbx"

// deps returns the packages pkg (a directory of this module, relative to
// its root) imports, directly or through other packages of the module.
func deps(t *testing.T, pkg string) map[string]bool {
	t.Helper()
	ctx := build.Default
	ctx.BuildTags = append(ctx.BuildTags, "seccomp")
	seen := map[string]bool{}
	var walk func(dir string)
	walk = func(dir string) {
		p, err := ctx.ImportDir(filepath.Join("..", dir), 0)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, imp := range p.Imports {
			if seen[imp] {
				continue
			}
			seen[imp] = true
			if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
				walk(rel)
			}
		}
	}
	walk(pkg)
	return seen
}

// TestLayering: policy stays pure (no system-call package at any depth),
// and sandbox does not reach the BPF loader.
func TestLayering(t *testing.T) {
	for imp := range deps(t, "policy") {
		for _, banned := range []string{"syscall", "golang.org/x/sys/", "github.com/opencontainers/runc/", "github.com/cilium/ebpf", "unsafe"} {
			if imp == banned || strings.HasPrefix(imp, banned) {
				t.Errorf("policy imports %s", imp)
			}
		}
	}
	if d := deps(t, "sandbox"); d[module+"/bpf"] {
		t.Error("sandbox imports bpf")
	}
}
