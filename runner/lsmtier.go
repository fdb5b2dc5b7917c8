package runner

import (
	"fmt"
	"strconv"

	"github.com/sbx-sandbox/sbx/bpf/lsm"
	"github.com/sbx-sandbox/sbx/bpf/netwall"
	"github.com/sbx-sandbox/sbx/bpf/pin"
	"github.com/sbx-sandbox/sbx/policy"
	"github.com/sbx-sandbox/sbx/sandbox"
)

// lsmTier is one run's use of the BPF LSM file tier. Its denials arrive in
// the network wall's per-run ring (the event maps are shared).
type lsmTier struct {
	lsm   *lsm.LSM
	cgID  uint64
	added bool
}

func openLSMTier(w *netWall) (*lsmTier, error) {
	maps := w.net.EventMaps()
	l, err := lsm.Open(&lsm.Options{Events: &maps, PinRoot: pin.DefaultRoot})
	if err != nil {
		return nil, fmt.Errorf("file tier (BPF LSM): %w", err)
	}
	return &lsmTier{lsm: l}, nil
}

// lsmPolicy is the LSM tier's file policy for a created sandbox: the
// same policy as the Landlock tier's (see [policy.Policy.LSM]), with the
// sandbox's own pseudo filesystems named through its PID 1's root.
func lsmPolicy(spec *sandbox.Spec, pid1 int) lsm.FilePolicy {
	root := "/proc/" + strconv.Itoa(pid1) + "/root"
	var p lsm.FilePolicy
	for _, r := range spec.Policy(sandbox.HostLayout()).LSM(root) {
		switch r.Kind {
		case policy.LSMTree:
			p.Allow(r.Path, r.Write)
		case policy.LSMList:
			p.AllowList(r.Path)
		case policy.LSMFilesystem:
			p.AllowFilesystem(r.Path, r.Write)
		case policy.LSMDeny:
			p.Deny(r.Path)
		}
	}
	return p
}

// add registers the sandbox (cgroup id id, PID 1 pid1) with its file
// policy and its network exceptions; from then on its tasks are confined.
func (t *lsmTier) add(spec *sandbox.Spec, id uint64, pid1 int, net netwall.Policy) error {
	if err := t.lsm.AddSandbox(id, lsmPolicy(spec, pid1)); err != nil {
		return fmt.Errorf("file tier (BPF LSM): %w", err)
	}
	t.cgID, t.added = id, true
	if !net.IsZero() {
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
