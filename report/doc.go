// Package report tells the user about the operations a run's tiers denied:
// one "sbx: denied" line per distinct operation on stderr (with a hint when
// one flag would allow it), JSON lines for --violations, and the list kept
// for sbx exec's result. It reads the denial events of the BPF rings
// ([Reporter.Pump]), takes the egress proxy's and the DNS server's refusals
// ([Reporter.AddHinted]), and bounds what a flood of denials may cost sbx,
// which runs outside the sandbox's limits.
package report
