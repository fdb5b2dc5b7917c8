package runner

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/sbx-sandbox/sbx/egress"
	"github.com/sbx-sandbox/sbx/sandbox"
)

// fakePart records its steps in a shared log and fails where told.
type fakePart struct {
	name string
	log  *[]string
	fail string // the step that fails
}

func (f fakePart) step(s string) error {
	*f.log = append(*f.log, f.name+"."+s)
	if f.fail == s {
		return errors.New(f.name + " " + s + " failed")
	}
	return nil
}

func (f fakePart) prepare(*run) error { return f.step("prepare") }
func (f fakePart) attach(*run) error  { return f.step("attach") }
func (f fakePart) started(*run) error { return f.step("started") }
func (f fakePart) close(*run)         { _ = f.step("close") }

// TestTierOrder: tiers are prepared, attached and started in order and
// closed in reverse; a tier whose prepare failed, and those after it, are
// never closed (nothing of theirs exists), all before it always are.
func TestTierOrder(t *testing.T) {
	cases := []struct {
		name string
		fail map[string]string // tier -> failing step
		want []string
	}{
		{"all", nil, []string{
			"a.prepare", "b.prepare", "c.prepare",
			"a.attach", "b.attach", "c.attach",
			"a.started", "b.started", "c.started",
			"c.close", "b.close", "a.close"}},
		{"prepare fails", map[string]string{"b": "prepare"}, []string{
			"a.prepare", "b.prepare", "a.close"}},
		{"attach fails", map[string]string{"b": "attach"}, []string{
			"a.prepare", "b.prepare", "c.prepare", "a.attach", "b.attach",
			"c.close", "b.close", "a.close"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var log []string
			r := &run{}
			for _, n := range []string{"a", "b", "c"} {
				r.parts = append(r.parts, fakePart{name: n, log: &log, fail: c.fail[n]})
			}
			func() {
				defer r.closeAll()
				if r.prepareAll() != nil || r.attachAll() != nil || r.startedAll() != nil {
					return
				}
			}()
			if !slices.Equal(log, c.want) {
				t.Errorf("steps\n got %v\nwant %v", log, c.want)
			}
		})
	}
}

// TestPlanTeardownOrder: a root run with every tier closes the DNS stub
// and the egress proxy before the sandbox, the BPF tiers after it, the
// report after the wall, then the copy-backs, then the home.
func TestPlanTeardownOrder(t *testing.T) {
	o := &Options{Terminal: true, Net: NetLoopback}
	allow, err := egress.ParseAllowlist([]string{"example.com"})
	if err != nil {
		t.Fatal(err)
	}
	o.allow = allow
	o.tiers = tiers{landlock: true, bpfLSM: true}
	r := &run{o: o, spec: &sandbox.Spec{}}
	r.plan(func() {}, nil)
	var got []string
	for i := len(r.parts) - 1; i >= 0; i-- {
		got = append(got, tierName(r.parts[i]))
	}
	want := []string{"network", "sandbox", "terminal", "lsm", "tracer", "wall", "report", "created", "copy-back", "rw-copy-back", "home"}
	if !slices.Equal(got, want) {
		t.Errorf("teardown order\n got %v\nwant %v", got, want)
	}
}

// tierName names a tier of the plan for the test.
func tierName(t part) string {
	switch t.(type) {
	case *homePart:
		return "home"
	case *copyBackPart:
		return "copy-back"
	case rwCopyBackPart:
		return "rw-copy-back"
	case reportPart:
		return "report"
	case createdPart:
		return "created"
	case *wallTier:
		return "wall"
	case *tracerPart:
		return "tracer"
	case *lsmFileTier:
		return "lsm"
	case terminalPart:
		return "terminal"
	case sandboxPart:
		return "sandbox"
	case *networkPart:
		return "network"
	}
	return fmt.Sprintf("%T", t)
}
