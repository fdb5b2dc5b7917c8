package tracer

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/sbx-sandbox/sbx/bpf"
	"github.com/sbx-sandbox/sbx/bpf/internal/bpftest"
	"github.com/sbx-sandbox/sbx/bpf/netwall"
	"github.com/sbx-sandbox/sbx/internal/sbxtest"
)

// netEnv is a network wall (whose event maps the tracer writes into) on a
// temporary parent cgroup with one run cgroup in it, pinned in a test-only
// pin root. Everything is removed at cleanup.
type netEnv struct {
	net     *netwall.Wall
	pinRoot string
	parent  string
	run     string
	runID   uint64
}

func newNetEnv(t testing.TB) *netEnv {
	t.Helper()
	parent := bpftest.Parent(t)
	pinRoot := bpftest.PinRoot(t)
	run := bpftest.CgroupDir(t, filepath.Join(parent, "run"))
	n, err := netwall.Open(parent, &netwall.Options{PinRoot: pinRoot})
	if errors.Is(err, bpf.ErrNotSupported) {
		sbxtest.Skip(t, sbxtest.CgroupBPF, fmt.Sprintf("kernel lacks cgroup BPF: %v", err))
	}
	if err != nil {
		t.Fatalf("netwall.Open: %v", err)
	}
	t.Cleanup(func() {
		if err := n.Unpin(); err != nil {
			t.Errorf("unpin: %v", err)
		}
		if err := n.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	id, err := bpf.CgroupID(run)
	if err != nil {
		t.Fatal(err)
	}
	return &netEnv{net: n, pinRoot: pinRoot, parent: parent, run: run, runID: id}
}
