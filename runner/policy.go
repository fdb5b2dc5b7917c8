package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sbx-sandbox/sbx/sandbox"
)

// Policy names which file tier a run must have.
type Policy string

// The policies of --policy.
const (
	// PolicyAuto uses every file tier the kernel offers (BPF LSM and
	// Landlock both, where both exist) and refuses to run with none.
	PolicyAuto Policy = "auto"
	// PolicyLandlock demands Landlock.
	PolicyLandlock Policy = "landlock"
	// PolicyBPF demands the BPF LSM tier.
	PolicyBPF Policy = "bpf"
)

// ParsePolicy checks a --policy value.
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(s); p {
	case PolicyAuto, PolicyLandlock, PolicyBPF:
		return p, nil
	case "":
		return PolicyAuto, nil
	}
	return "", fmt.Errorf("unknown policy %q: want auto, landlock or bpf", s)
}

// tiers are the file tiers a run gets.
type tiers struct {
	landlock bool
	bpfLSM   bool
}

// lsmProbe reports why the BPF LSM tier is unavailable (nil: available).
// It is a variable so that the BPF package can provide it.
var lsmProbe = func() error {
	return errors.New("BPF LSM tier: not available in this build")
}

// selectTiers decides the file tiers for p, failing closed: a demanded tier
// that is missing, or no tier at all, is an error naming the protection.
// Rootless, the BPF LSM tier never applies and Landlock is the only one.
func selectTiers(p Policy, stateDir string, rootless bool) (tiers, error) {
	_, llErr := sandbox.LandlockABI()
	var lsmErr error
	if rootless {
		lsmErr = ErrBPFLSMNeedsRoot
	} else {
		lsmErr = cachedLSMProbe(stateDir)
	}
	t := tiers{landlock: llErr == nil, bpfLSM: lsmErr == nil}
	// A demanded tier is the run's only file tier: --policy landlock runs
	// without the BPF LSM (the probe alone must not add it), and --policy
	// bpf without Landlock, so that each tier can be chosen, and proven,
	// on its own. auto stacks every tier the host offers.
	switch p {
	case PolicyLandlock:
		if llErr != nil {
			return t, fmt.Errorf("--policy landlock: %w", llErr)
		}
		t.bpfLSM = false
	case PolicyBPF:
		if lsmErr != nil {
			return t, fmt.Errorf("--policy bpf: %w", lsmErr)
		}
		t.landlock = false
	default:
		if llErr != nil && lsmErr != nil {
			return t, fmt.Errorf("no file tier available, refusing to run unconfined: %v; %v", llErr, lsmErr)
		}
	}
	return t, nil
}

// lsmProbeCache remembers the BPF LSM probe's verdict for the current boot
// in the state dir: the probe loads a program (and the kernel's BTF), ~25
// ms, and its answer cannot change without a reboot. A cached "available"
// is still proven on every run by OpenLSM's self-test.
func cachedLSMProbe(stateDir string) error {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return lsmProbe()
	}
	key := strings.TrimSpace(string(boot))
	path := filepath.Join(stateDir, "lsm-probe")
	if data, err := os.ReadFile(path); err == nil {
		if k, verdict, ok := strings.Cut(string(data), "\n"); ok && k == key {
			if verdict == "ok" {
				return nil
			}
			return errors.New(verdict)
		}
	}
	perr := lsmProbe()
	verdict := "ok"
	if perr != nil {
		verdict = perr.Error()
	}
	if err := os.MkdirAll(stateDir, 0o700); err == nil {
		tmp := path + ".tmp" + strconv.Itoa(os.Getpid())
		if os.WriteFile(tmp, []byte(key+"\n"+verdict), 0o600) == nil {
			_ = os.Rename(tmp, path)
		}
	}
	return perr
}
