package main

// The built-in codex profile with the real Codex CLI from npm: "sbx run --
// codex exec PROMPT" with only CODEX_API_KEY set on the host (and
// --allow-host for the fake provider, which lives on the host's loopback
// rather than at api.openai.com) reaches its model turn: the profile
// passes the key in and turns Codex's own sandbox off. Codex 0.171 takes
// its endpoint from the config key openai_base_url (given here with -c, the
// CLI's config override); it ignores an OPENAI_BASE_URL variable (observed:
// with only the variable it dials api.openai.com through sbx's proxy, which
// answers the CONNECT with 502 where that name does not resolve: the
// "HTTP CONNECT failed with status 502" of issue #18). Without the profile
// (the control) the key stays out and the provider refuses Codex.

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

// npmAgent is one agent installed by an install-*.sh script under
// testdata/e2e, once per test binary.
type npmAgent struct {
	script string // the installer, relative to this package
	once   sync.Once
	prefix string
	skip   string
	err    error
}

var codexAgent = &npmAgent{script: "../../testdata/e2e/install-codex.sh"}

// install runs the installer once and returns its npm prefix; it skips t
// when the registry cannot be reached and nothing is cached.
func (a *npmAgent) install(t *testing.T) string {
	t.Helper()
	a.once.Do(func() {
		script, err := filepath.Abs(a.script)
		if err != nil {
			a.err = err
			return
		}
		cmd := exec.Command("sh", script)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err = cmd.Run()
		switch {
		case exitCode(err) == 3:
			a.skip = filepath.Base(script) + ": not cached and npm cannot reach the registry"
		case err != nil:
			a.err = fmt.Errorf("%s: %v\n%s", script, err, errb.String())
		default:
			if ls := lines(out.String()); len(ls) > 0 {
				a.prefix = ls[len(ls)-1]
			}
		}
	})
	if a.skip != "" {
		t.Skip(a.skip)
	}
	if a.err != nil || a.prefix == "" {
		t.Fatalf("install with %s: %v", a.script, a.err)
	}
	return a.prefix
}

// recorder keeps one line per request a fake provider received.
type recorder struct {
	mu   sync.Mutex
	reqs []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, s)
}

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.reqs...)
}

// serveFake starts h on the host's loopback and returns its port.
func serveFake(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return port
}

// sse writes one server-sent event of JSON data and flushes it.
func sse(w http.ResponseWriter, typ string, data map[string]any) {
	data["type"] = typ
	b, _ := json.Marshal(data)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
	w.(http.Flusher).Flush()
}

// fakeResponses serves OpenAI's Responses API (POST /v1/responses, streamed)
// with providerReply as the assistant's message and records every request
// with its Authorization header; like the real API it answers 401 to a
// request without "Bearer key". Codex first tries the same path as a
// WebSocket; that upgrade is refused, and Codex falls back to HTTPS.
func fakeResponses(t *testing.T, key string) (string, *recorder) {
	t.Helper()
	rec := &recorder{}
	port := serveFake(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec.add(r.Method + " " + r.URL.Path + " auth=" + r.Header.Get("Authorization") + " " + string(body))
		if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+key {
			http.Error(w, `{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, "response.created", map[string]any{"response": map[string]any{"id": "resp_1"}})
		sse(w, "response.output_item.done", map[string]any{"item": map[string]any{
			"type": "message", "role": "assistant", "id": "msg_1",
			"content": []any{map[string]any{"type": "output_text", "text": providerReply}},
		}})
		sse(w, "response.completed", map[string]any{"response": map[string]any{"id": "resp_1", "usage": map[string]any{
			"input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
		}}})
	})
	return port, rec
}

// posted reports whether reqs hold a POST to path carrying want.
func posted(reqs []string, path string, want ...string) bool {
	for _, r := range reqs {
		if !strings.HasPrefix(r, "POST "+path+" ") {
			continue
		}
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(r, w)
		}
		if ok {
			return true
		}
	}
	return false
}

func TestCodexProfileReachesProvider(t *testing.T) {
	prefix := codexAgent.install(t)
	port, rec := fakeResponses(t, "sk-from-host")
	e := newEgressBox(t)
	codex := filepath.Join(prefix, "node_modules", ".bin", "codex")
	env := opts{env: append(confEnv(t, ""), "CODEX_API_KEY=sk-from-host")}
	args := []string{"run", "--ro", prefix, "--allow-host", "127.0.0.1:" + port, "--", codex,
		"exec", "--skip-git-repo-check", "-c", fmt.Sprintf("openai_base_url=%q", "http://127.0.0.1:"+port+"/v1"), "say hello"}

	r := e.sbx(env, args...)
	if r.code != 0 || strings.TrimSpace(r.stdout) != providerReply || !strings.Contains(r.stderr, "sbx: profile codex applied") {
		t.Errorf("codex with its profile: want the provider's reply\n%v", r)
	}
	if reqs := rec.all(); !posted(reqs, "/v1/responses", "auth=Bearer sk-from-host", "say hello") {
		t.Errorf("the provider got %q, want the prompt with the host's key", reqs)
	}

	t.Run("control-no-profile", func(t *testing.T) {
		before := len(rec.all())
		r := e.sbx(env, append([]string{"run", "--no-profile"}, args[1:]...)...)
		if r.code == 0 || r.code == exitSbxError || strings.Contains(r.stdout, providerReply) {
			t.Errorf("codex ran without the profile: want it to fail on its own (not sbx's 125, not an answer)\n%v", r)
		}
		if reqs := rec.all()[before:]; posted(reqs, "/v1/responses", "sk-from-host") {
			t.Errorf("the host's key reached the provider without the profile: %.300q", reqs)
		}
	})
}
