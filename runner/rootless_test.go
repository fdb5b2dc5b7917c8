package runner

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/sandbox"
)

func TestRootlessLimits(t *testing.T) {
	deleg := sandbox.Delegation{Dir: "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service", Mount: "/sys/fs/cgroup", Controllers: []string{"cpu", "memory", "pids"}}
	partial := deleg
	partial.Controllers = []string{"memory", "pids"}
	none := errors.New("cgroup v1 (hybrid) hierarchy")
	all := sandbox.Limits{MemoryBytes: 512 << 20, CPUs: 1, Pids: 256}
	for _, tc := range []struct {
		name       string
		limits     sandbox.Limits
		explicit   []string
		deleg      sandbox.Delegation
		delegErr   error
		wantCgroup string
		wantErr    string
		wantNote   bool
	}{
		{"delegated", all, []string{"--memory"}, deleg, nil, "/user.slice/user-1000.slice/user@1000.service/sbx/id1", "", false},
		{"none, defaults", all, nil, sandbox.Delegation{}, none, "", "", true},
		{"none, explicit", all, []string{"--memory", "--pids"}, sandbox.Delegation{}, none, "", "--memory, --pids: cannot enforce", false},
		{"no cpu controller, defaults", all, nil, partial, nil, "", "", true},
		{"no cpu controller, explicit cpus", all, []string{"--cpus"}, partial, nil, "", "offers", false},
		{"no cpu controller, no cpu limit", sandbox.Limits{MemoryBytes: 1 << 30, Pids: 10}, []string{"--memory"}, partial, nil, "/user.slice/user-1000.slice/user@1000.service/sbx/id1", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			o := &Options{Limits: tc.limits, ExplicitLimits: tc.explicit, Log: &log}
			cg, err := rootlessLimits(o, "id1", tc.deleg, tc.delegErr)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "fix:") {
					t.Fatalf("got %q, %v; want error with %q and a fix", cg, err, tc.wantErr)
				}
				return
			}
			if err != nil || cg != tc.wantCgroup {
				t.Fatalf("got %q, %v; want %q", cg, err, tc.wantCgroup)
			}
			if log.Len() != 0 {
				t.Errorf("rootlessLimits wrote %q: the note waits until nothing can refuse the run", log.String())
			}
			if (o.limitsNote != nil) != tc.wantNote {
				t.Errorf("limits note %v; want a note: %v", o.limitsNote, tc.wantNote)
			}
		})
	}
}

func TestSelectTiersRootless(t *testing.T) {
	if _, err := sandbox.LandlockABI(); err != nil {
		t.Skipf("kernel lacks Landlock: %v", err)
	}
	dir := t.TempDir()
	tr, err := selectTiers(PolicyAuto, dir, true)
	if err != nil || !tr.landlock || tr.bpfLSM {
		t.Errorf("auto: %+v, %v; want Landlock only", tr, err)
	}
	if _, err := selectTiers(PolicyBPF, dir, true); err == nil || !strings.Contains(err.Error(), "BPF LSM needs root") {
		t.Errorf("--policy bpf rootless: %v", err)
	}
	// Rootless never probes (nor caches) the BPF LSM.
	if _, err := os.Stat(filepath.Join(dir, "lsm-probe")); err == nil {
		t.Error("rootless run wrote the LSM probe cache")
	}
}

// TestSelectTiersDemanded: a demanded tier is the run's only file tier,
// whatever else the host offers (--policy landlock used to keep the BPF LSM
// tier whenever the probe passed).
func TestSelectTiersDemanded(t *testing.T) {
	if _, err := sandbox.LandlockABI(); err != nil {
		t.Skipf("kernel lacks Landlock: %v", err)
	}
	saved := lsmProbe
	defer func() { lsmProbe = saved }()
	lsmProbe = func() error { return nil } // as on a host that allows BPF LSM
	for _, tc := range []struct {
		p             Policy
		landlock, lsm bool
	}{
		{PolicyAuto, true, true},
		{PolicyLandlock, true, false},
		{PolicyBPF, false, true},
	} {
		tr, err := selectTiers(tc.p, t.TempDir(), false)
		if err != nil || tr.landlock != tc.landlock || tr.bpfLSM != tc.lsm {
			t.Errorf("--policy %s: %+v, %v; want landlock=%v bpfLSM=%v", tc.p, tr, err, tc.landlock, tc.lsm)
		}
	}
}

func TestPrivateDir(t *testing.T) {
	base := t.TempDir()
	d := filepath.Join(base, "sbx")
	if err := privateDir(d); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(d); fi.Mode().Perm() != 0o700 {
		t.Errorf("mode %v", fi.Mode())
	}
	os.Chmod(d, 0o777)
	if err := privateDir(d); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(d); fi.Mode().Perm() != 0o700 {
		t.Errorf("mode not tightened: %v", fi.Mode())
	}
	link := filepath.Join(base, "link")
	os.Symlink(d, link)
	if err := privateDir(link); err == nil {
		t.Error("a symlinked state dir was accepted")
	}
	if os.Geteuid() == 0 {
		other := filepath.Join(base, "other")
		os.Mkdir(other, 0o700)
		os.Chown(other, 12345, 12345)
		if err := privateDir(other); err == nil || !strings.Contains(err.Error(), "owned by uid 12345") {
			t.Errorf("someone else's dir: %v", err)
		}
	}
}

func TestUserStateDir(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	if got := UserStateDir(env(map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000/"})); got != "/run/user/1000/sbx" {
		t.Errorf("got %s", got)
	}
	for _, m := range []map[string]string{{}, {"XDG_RUNTIME_DIR": "relative"}} {
		if got := UserStateDir(env(m)); !strings.HasPrefix(got, "/tmp/sbx-") {
			t.Errorf("%v: got %s", m, got)
		}
	}
}

// The rlimit note is one line, said once per state dir until its reason
// changes.
func TestLimitsNoteOnce(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	why := errors.New("no cgroup2 here")
	writeLimitsNote(&b, why, dir)
	first := b.String()
	if strings.Count(first, "\n") != 1 || !strings.HasPrefix(first, "sbx: note: limits are rlimits") || !strings.Contains(first, "RLIMIT_DATA") {
		t.Fatalf("first note: %q", first)
	}
	writeLimitsNote(&b, why, dir)
	if b.String() != first {
		t.Errorf("said twice: %q", b.String())
	}
	writeLimitsNote(&b, errors.New("another reason"), dir)
	if b.String() != first+first {
		t.Errorf("a new reason is not said again: %q", b.String())
	}
}
