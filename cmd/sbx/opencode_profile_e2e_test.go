package main

// The built-in opencode profile with the real opencode from npm: "sbx run
// -- opencode run -m anthropic/MODEL PROMPT" with ANTHROPIC_API_KEY and
// ANTHROPIC_BASE_URL set on the host (and --allow-host for the fake
// provider, which lives on the host's loopback rather than at
// api.anthropic.com) reaches its model turn: the profile passes the
// variables in. Without the profile (the control) the provider never hears
// from it.

import (
	"path/filepath"
	"strings"
	"testing"
)

var opencodeAgent = &npmAgent{script: "../../testdata/e2e/install-opencode.sh"}

func TestOpencodeProfileReachesProvider(t *testing.T) {
	prefix := opencodeAgent.install(t)
	port, requests := fakeAnthropic(t)
	e := newEgressBox(t)
	opencode := filepath.Join(prefix, "node_modules", ".bin", "opencode")
	env := opts{env: append(confEnv(t, ""), "ANTHROPIC_BASE_URL=http://127.0.0.1:"+port+"/v1", "ANTHROPIC_API_KEY=sk-from-host")}
	args := []string{"run", "--ro", prefix, "--allow-host", "127.0.0.1:" + port, "--", opencode,
		"run", "-m", "anthropic/claude-sonnet-4-5", "say hello"}

	r := e.sbx(env, args...)
	if r.code != 0 || !strings.Contains(r.stdout, providerReply) || !strings.Contains(r.stderr, "sbx: profile opencode applied") {
		t.Errorf("opencode with its profile: want the provider's reply\n%v", r)
	}
	if reqs := requests(); !posted(reqs, "/v1/messages", "key=sk-from-host", "say hello") {
		t.Errorf("the provider got %.2000q, want the prompt with the host's key", reqs)
	}

	t.Run("control-no-profile", func(t *testing.T) {
		before := len(requests())
		r := e.sbx(env, append([]string{"run", "--no-profile"}, args[1:]...)...)
		if r.code == exitSbxError || strings.Contains(r.stdout, providerReply) {
			t.Errorf("opencode ran without the profile: want no answer (and not sbx's 125)\n%v", r)
		}
		if n := len(requests()); n != before {
			t.Errorf("the provider got %d requests without the profile", n-before)
		}
	})
}
