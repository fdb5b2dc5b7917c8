package main

// The built-in pi profile with the real pi from npm: "sbx run -- pi" (plus
// only --allow-host for the fake provider, which lives on the host's
// loopback, not at a real provider's name) finds the user's
// ~/.pi/agent/models.json (its provider settings and key) read-only,
// brought by the profile, and reaches its model turn.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPiProfileReachesProvider(t *testing.T) {
	prefix := installPi(t)
	prov := newFakeProvider(t)
	e := newEgressBox(t, "127.0.0.1 provider.test")
	// The user's home on the host, with pi's provider config and key.
	home := t.TempDir()
	agentDir := filepath.Join(home, ".pi", "agent")
	if err := os.MkdirAll(agentDir, 0o755); err != nil {
		t.Fatal(err)
	}
	models := fmt.Sprintf(`{"providers": {"fake": {"baseUrl": "http://provider.test:%s/v1", "api": "openai-completions", "apiKey": "sk-from-home",
  "models": [{"id": "fake-model", "compat": {"supportsUsageInStreaming": false}}]}}}`, prov.port)
	writeFile(t, filepath.Join(agentDir, "models.json"), models, 0o644)
	for _, d := range []string{home, filepath.Join(home, ".pi"), agentDir, filepath.Join(agentDir, "models.json")} {
		if err := os.Chmod(d, 0o755); err != nil && !strings.HasSuffix(d, ".json") {
			t.Fatal(err)
		}
	}
	env := append(confEnv(t, ""), "HOME="+home)
	allow := []string{"--allow-host", "provider.test:" + prov.port, "--allow-host", "127.0.0.1:" + prov.port}

	r, events := piPrompt(t, e, prefix, allow, "say hello", env...)
	if got := assistantText(events); got != providerReply {
		t.Errorf("pi's answer with the pi profile = %q, want %q\n%v", got, providerReply, r)
	}
	if !strings.Contains(r.stderr, "sbx: profile pi applied") {
		t.Errorf("the profile was not announced\n%v", r)
	}
	reqs := prov.requests()
	if len(reqs) == 0 || !strings.Contains(reqs[0], "auth=Bearer sk-from-home") {
		t.Errorf("the provider got %q, want the key of the host's models.json", reqs)
	}
	if data, err := os.ReadFile(filepath.Join(agentDir, "models.json")); err != nil || string(data) != models {
		t.Errorf("models.json on the host changed: %v", err)
	}

	t.Run("control-no-profile", func(t *testing.T) {
		before := len(prov.requests())
		r, events := piPrompt(t, e, prefix, append([]string{"--no-profile"}, allow...), "say hello", env...)
		if got := assistantText(events); got == providerReply {
			t.Errorf("pi reached the provider without the profile's models.json and key\n%v", r)
		}
		if n := len(prov.requests()); n != before {
			t.Errorf("the provider got %d requests without the profile", n-before)
		}
	})
}
