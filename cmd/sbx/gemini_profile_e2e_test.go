package main

// The built-in gemini profile with the real Gemini CLI from npm: "sbx run
// -- gemini -p PROMPT" with GEMINI_API_KEY and GOOGLE_GEMINI_BASE_URL set on
// the host (and --allow-host for the fake provider, which lives on the
// host's loopback rather than at generativelanguage.googleapis.com)
// reaches its model turn: the profile passes the variables in and brings
// the user's ~/.gemini/settings.json read-only.
//
// Two things the test gives Gemini CLI 0.61 on its own command line or in
// the user's settings, observed, not sbx's to decide:
//   - settings.json names the auth type ("security.auth.selectedType":
//     "gemini-api-key"): with GOOGLE_GEMINI_BASE_URL set and no type
//     chosen, the headless mode infers the type "gateway" and refuses it
//     ("Invalid auth method selected.");
//   - --skip-trust: headless runs refuse an untrusted directory
//     (geminicli.com/docs/cli/trusted-folders).
//
// Without the profile (the control) the key stays out and the provider
// never hears it.

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var geminiAgent = &npmAgent{script: "../../testdata/e2e/install-gemini.sh"}

// fakeGemini serves the Gemini API's generateContent and
// streamGenerateContent (?alt=sse) with providerReply and records every
// request with its x-goog-api-key; like the real API it answers 400 to a
// request without key.
func fakeGemini(t *testing.T, key string) (string, *recorder) {
	t.Helper()
	rec := &recorder{}
	port := serveFake(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec.add(r.Method + " " + r.URL.Path + " key=" + r.Header.Get("X-Goog-Api-Key") + " " + string(body))
		stream := strings.HasSuffix(r.URL.Path, ":streamGenerateContent")
		if r.Method != http.MethodPost || !stream && !strings.HasSuffix(r.URL.Path, ":generateContent") {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("X-Goog-Api-Key") != key {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.", "status": "INVALID_ARGUMENT"}}`)
			return
		}
		answer := map[string]any{
			"candidates": []any{map[string]any{
				"content":      map[string]any{"role": "model", "parts": []any{map[string]any{"text": providerReply}}},
				"finishReason": "STOP", "index": 0,
			}},
			"usageMetadata": map[string]any{"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
		}
		b, _ := json.Marshal(answer)
		if !stream {
			w.Header().Set("Content-Type", "application/json")
			w.Write(b)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: "+string(b)+"\r\n\r\n")
	})
	return port, rec
}

func TestGeminiProfileReachesProvider(t *testing.T) {
	prefix := geminiAgent.install(t)
	port, rec := fakeGemini(t, "gk-from-host")
	e := newEgressBox(t)
	home := t.TempDir()
	dir := filepath.Join(home, ".gemini")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	settings := `{"security": {"auth": {"selectedType": "gemini-api-key"}}}`
	writeFile(t, filepath.Join(dir, "settings.json"), settings, 0o644)
	if err := os.Chmod(home, 0o755); err != nil {
		t.Fatal(err)
	}
	gemini := filepath.Join(prefix, "node_modules", ".bin", "gemini")
	env := opts{env: append(confEnv(t, ""), "HOME="+home, "GEMINI_API_KEY=gk-from-host",
		"GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:"+port)}
	args := []string{"run", "--ro", prefix, "--allow-host", "127.0.0.1:" + port, "--", gemini,
		"--skip-trust", "-m", "gemini-fake", "-p", "say hello"}

	r := e.sbx(env, args...)
	if r.code != 0 || strings.TrimSpace(r.stdout) != providerReply || !strings.Contains(r.stderr, "sbx: profile gemini applied") {
		t.Errorf("gemini with its profile: want the provider's reply\n%v", r)
	}
	if reqs := rec.all(); !posted(reqs, "/v1beta/models/gemini-fake:streamGenerateContent", "key=gk-from-host", "say hello") {
		t.Errorf("the provider got %.2000q, want the prompt with the host's key", reqs)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "settings.json")); err != nil || string(data) != settings {
		t.Errorf("settings.json on the host changed: %v", err)
	}

	t.Run("control-no-profile", func(t *testing.T) {
		before := len(rec.all())
		r := e.sbx(env, append([]string{"run", "--no-profile"}, args[1:]...)...)
		if r.code == 0 || r.code == exitSbxError || strings.Contains(r.stdout, providerReply) {
			t.Errorf("gemini ran without the profile: want it to fail on its own (not sbx's 125, not an answer)\n%v", r)
		}
		if reqs := rec.all()[before:]; posted(reqs, "/v1beta/", "gk-from-host") {
			t.Errorf("the host's key reached the provider without the profile: %.300q", reqs)
		}
	})
}
