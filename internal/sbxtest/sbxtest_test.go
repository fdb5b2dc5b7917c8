package sbxtest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestRequired(t *testing.T) {
	for _, tc := range []struct {
		env, feature string
		want         bool
	}{
		{"", Root, false},
		{"root", Root, true},
		{"landlock, root", Root, true},
		{"rootless", Root, false},
		{"all", Node, true},
		{"landlock", Node, false},
	} {
		t.Setenv(EnvRequire, tc.env)
		if got := Required(tc.feature); got != tc.want {
			t.Errorf("SBX_REQUIRE=%q: Required(%q) = %v, want %v", tc.env, tc.feature, got, tc.want)
		}
	}
}

// TestSpelling: every name SBX_REQUIRE holds in this run is a known
// feature, so a typo in CI's list cannot silently require nothing.
func TestSpelling(t *testing.T) {
	for _, f := range strings.Split(os.Getenv(EnvRequire), ",") {
		if f = strings.TrimSpace(f); f != "" && !Known(f) {
			t.Errorf("%s names %q, no feature sbxtest knows", EnvRequire, f)
		}
	}
}

// TestSkipFails runs TestHelperSkip in a child test binary: a skip when
// the feature is not required, a failure when it is.
func TestSkipFails(t *testing.T) {
	for _, tc := range []struct {
		env      string
		wantFail bool
		want     string
	}{
		{"", false, "--- SKIP: TestHelperSkip"},
		{"node", false, "--- SKIP: TestHelperSkip"},
		{"python3", true, "--- FAIL: TestHelperSkip"},
		{"all", true, "SBX_REQUIRE=all requires python3"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperSkip$", "-test.v")
		cmd.Env = append(os.Environ(), "SBXTEST_HELPER=1", EnvRequire+"="+tc.env)
		out, err := cmd.CombinedOutput()
		if (err != nil) != tc.wantFail || !strings.Contains(string(out), tc.want) {
			t.Errorf("SBX_REQUIRE=%q: err %v, want failure %v and %q in:\n%s", tc.env, err, tc.wantFail, tc.want, out)
		}
	}
}

func TestHelperSkip(t *testing.T) {
	if os.Getenv("SBXTEST_HELPER") != "1" {
		t.Skip("helper of TestSkipFails")
	}
	Skip(t, Python3, "pretend python3 is missing")
}
