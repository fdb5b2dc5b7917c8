package main

// The built-in claude profile with the real Claude Code from npm: "sbx run
// -- claude -p PROMPT" with only the key and base-URL variables set on the
// host (and --allow-host for the fake provider, which lives on the host's
// loopback rather than at api.anthropic.com) reaches its model turn: the
// profile passes the variables in. Without the profile (the control) the
// provider never hears from it.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const claudeInstallScript = "../../testdata/e2e/install-claude.sh"

var (
	claudeOnce   sync.Once
	claudePrefix string
	claudeSkip   string
	claudeErr    error
)

// installClaude runs install-claude.sh once per test binary; it skips t
// when the registry cannot be reached and nothing is cached.
func installClaude(t *testing.T) string {
	t.Helper()
	claudeOnce.Do(func() {
		script, err := filepath.Abs(claudeInstallScript)
		if err != nil {
			claudeErr = err
			return
		}
		cmd := exec.Command("sh", script)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err = cmd.Run()
		switch {
		case exitCode(err) == 3:
			claudeSkip = "Claude Code is not cached and npm cannot reach the registry"
		case err != nil:
			claudeErr = fmt.Errorf("%s: %v\n%s", script, err, errb.String())
		default:
			ls := lines(out.String())
			if len(ls) > 0 {
				claudePrefix = ls[len(ls)-1]
			}
		}
	})
	if claudeSkip != "" {
		t.Skip(claudeSkip)
	}
	if claudeErr != nil || claudePrefix == "" {
		t.Fatalf("install Claude Code: %v", claudeErr)
	}
	return claudePrefix
}

// fakeAnthropic serves POST /v1/messages as a streamed message of
// providerReply and records each request's key and body.
func fakeAnthropic(t *testing.T) (port string, requests func() []string) {
	t.Helper()
	var mu sync.Mutex
	var reqs []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		reqs = append(reqs, r.Method+" "+r.URL.Path+" key="+r.Header.Get("X-Api-Key")+" "+string(body))
		mu.Unlock()
		if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		ev := func(typ string, data map[string]any) {
			data["type"] = typ
			b, _ := json.Marshal(data)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
			w.(http.Flusher).Flush()
		}
		ev("message_start", map[string]any{"message": map[string]any{"id": "m1", "type": "message", "role": "assistant", "model": "claude-fake",
			"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 1, "output_tokens": 1}}})
		ev("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		ev("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "text_delta", "text": providerReply}})
		ev("content_block_stop", map[string]any{"index": 0})
		ev("message_delta", map[string]any{"delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 5}})
		ev("message_stop", map[string]any{})
	}))
	t.Cleanup(srv.Close)
	_, port, _ = net.SplitHostPort(srv.Listener.Addr().String())
	return port, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), reqs...)
	}
}

func TestClaudeProfileReachesProvider(t *testing.T) {
	prefix := installClaude(t)
	port, requests := fakeAnthropic(t)
	e := newEgressBox(t)
	claude := filepath.Join(prefix, "node_modules", ".bin", "claude")
	env := opts{env: append(confEnv(t, ""), "ANTHROPIC_BASE_URL=http://127.0.0.1:"+port, "ANTHROPIC_API_KEY=sk-from-host")}
	args := []string{"run", "--ro", prefix, "--allow-host", "127.0.0.1:" + port, "--", claude, "-p", "say hello"}

	r := e.sbx(env, args...)
	if r.code != 0 || strings.TrimSpace(r.stdout) != providerReply || !strings.Contains(r.stderr, "sbx: profile claude applied") {
		t.Errorf("claude with its profile: want the provider's reply\n%v", r)
	}
	reqs := requests()
	if len(reqs) == 0 || !strings.Contains(reqs[len(reqs)-1], "POST /v1/messages key=sk-from-host") || !strings.Contains(reqs[len(reqs)-1], "say hello") {
		t.Errorf("the provider got %q, want the prompt with the host's key", reqs)
	}

	t.Run("control-no-profile", func(t *testing.T) {
		before := len(requests())
		r := e.sbx(env, append([]string{"run", "--no-profile"}, args[1:]...)...)
		if r.code == 0 || r.code == exitSbxError || strings.Contains(r.stdout, providerReply) {
			t.Errorf("claude ran without the profile's variables: want it to fail on its own (not sbx's 125, not an answer)\n%v", r)
		}
		if n := len(requests()); n != before {
			t.Errorf("the provider got %d requests without the profile", n-before)
		}
	})
}
