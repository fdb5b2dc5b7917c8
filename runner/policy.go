package runner

import (
	"github.com/sbx-sandbox/sbx/hostcheck"
	"github.com/sbx-sandbox/sbx/policy"
)

// Policy names which file tier a run must have (--policy).
type Policy = policy.FileDemand

// The policies of --policy.
const (
	// PolicyAuto uses every file tier the kernel offers (BPF LSM and
	// Landlock both, where both exist) and refuses to run with none.
	PolicyAuto = policy.DemandAuto
	// PolicyLandlock demands Landlock.
	PolicyLandlock = policy.DemandLandlock
	// PolicyBPF demands the BPF LSM tier.
	PolicyBPF = policy.DemandBPF
)

// ParsePolicy checks a --policy value.
func ParsePolicy(s string) (Policy, error) { return policy.ParseFileDemand(s) }

// tiers are the file tiers a run gets.
type tiers struct {
	landlock bool
	bpfLSM   bool
	// lsmMissing is why a root run has no BPF LSM tier (nil when it
	// has one, or when it is rootless or --policy landlock chose so).
	lsmMissing error
}

// probeHost is the host probe a run decides from (quick: see
// hostcheck.Options.Full); a variable so that tests can stand in a host.
var probeHost = func(stateDir string) policy.Host {
	return hostcheck.Probe(hostcheck.Options{StateDir: stateDir})
}

// selectTiers decides the file tiers for p with [policy.Decide], the
// decision sbx doctor prints, failing closed: a demanded tier that is
// missing, or no tier at all, is an error naming the protection. Rootless,
// the BPF LSM tier never applies and Landlock is the only one.
func selectTiers(p Policy, stateDir string) (tiers, error) {
	h := probeHost(stateDir)
	d := policy.Decide(h, policy.Demand{Files: p})
	t := tiers{landlock: d.Landlock, bpfLSM: d.BPFLSM}
	if !d.Rootless && !d.BPFLSM && p != PolicyLandlock {
		t.lsmMissing = h.BPFLSM.Err
	}
	return t, d.Refused
}
