package runner

import (
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/sbx-sandbox/sbx/bpf"
	"github.com/sbx-sandbox/sbx/sandbox"
)

func init() { lsmProbe = bpf.LSMSupported }

// lsmTier is one run's use of the BPF LSM file tier. Its denials arrive in
// the network wall's per-run ring (the event maps are shared).
type lsmTier struct {
	lsm   *bpf.LSM
	cgID  uint64
	added bool
}

func openLSMTier(w *netWall) (*lsmTier, error) {
	maps := w.net.EventMaps()
	l, err := bpf.OpenLSM(&bpf.LSMOptions{Events: &maps, PinRoot: bpf.DefaultPinRoot})
	if err != nil {
		return nil, fmt.Errorf("file tier (BPF LSM): %w", err)
	}
	return &lsmTier{lsm: l}, nil
}

// lsmPolicy is the LSM tier's file policy for a created sandbox: the same
// set as the Landlock tier's, with the sandbox's own pseudo filesystems
// (its /proc, /dev, /tmp) named through its PID 1's root.
func lsmPolicy(spec *sandbox.Spec, pid1 int) bpf.FilePolicy {
	root := "/proc/" + strconv.Itoa(pid1) + "/root"
	var p bpf.FilePolicy
	for _, e := range sandbox.HostLayout() {
		if e.Dir {
			p.Allow(e.Path, false)
		}
	}
	for _, path := range spec.ReadOnly {
		p.Allow(path, false)
	}
	for _, path := range spec.ReadWrite {
		p.Allow(path, true)
	}
	p.Allow(spec.Workspace, spec.Write)
	p.Allow(spec.Home, true)
	// Masks (--mask): refused by identity, whatever name reaches them.
	for _, h := range spec.Hidden {
		p.Deny(h.Path)
	}
	// The root itself, listed but not opened below: "ls /" works as on
	// the Landlock tier, and a file on the root filesystem outside the
	// set (the shim at /.sbx/sbx) stays refused.
	p.AllowList(root)
	p.AllowFilesystem(filepath.Join(root, "proc"), false)
	p.AllowFilesystem(filepath.Join(root, "tmp"), true)
	p.AllowFilesystem(filepath.Join(root, "dev"), true)
	p.AllowFilesystem(filepath.Join(root, "dev/pts"), true)
	p.AllowFilesystem(filepath.Join(root, "dev/shm"), true)
	return p
}

// add registers the sandbox (cgroup2 dir dir, PID 1 pid1) with its file
// policy and its network exceptions; from then on its tasks are confined.
func (t *lsmTier) add(spec *sandbox.Spec, dir string, pid1 int, net bpf.Policy) error {
	id, err := bpf.CgroupID(dir)
	if err != nil {
		return fmt.Errorf("file tier (BPF LSM): %w", err)
	}
	if err := t.lsm.AddSandbox(id, lsmPolicy(spec, pid1)); err != nil {
		return fmt.Errorf("file tier (BPF LSM): %w", err)
	}
	t.cgID, t.added = id, true
	if net != (bpf.Policy{}) {
		if err := t.lsm.AllowNet(id, net); err != nil {
			return fmt.Errorf("file tier (BPF LSM): %w", err)
		}
	}
	return nil
}

func (t *lsmTier) close() {
	if t.added {
		_ = t.lsm.RemoveSandbox(t.cgID)
	}
	t.lsm.Close()
}
