package main

// The product's main job end to end: the real pi agent in "sbx run
// --allow-host PROVIDER -- pi --mode rpc" answers a prompt by calling its
// model provider through sbx's egress proxy. The provider is a fake
// OpenAI-compatible endpoint on the host's loopback, named in a test hosts
// file; pi finds it through models.json in the sbx home.

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// providerReply is what the fake provider streams back.
const providerReply = "hello from the provider"

// fakeProvider serves POST /v1/chat/completions as a streamed chat
// completion of providerReply and records the requests' bodies.
type fakeProvider struct {
	*httptest.Server
	port string
	mu   sync.Mutex
	reqs []string
}

func newFakeProvider(t *testing.T) *fakeProvider {
	t.Helper()
	p := &fakeProvider{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		p.reqs = append(p.reqs, r.Method+" "+r.URL.Path+" auth="+r.Header.Get("Authorization")+" "+string(body))
		p.mu.Unlock()
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta map[string]any, finish any) {
			b, _ := json.Marshal(map[string]any{
				"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "fake-model",
				"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
			})
			fmt.Fprintf(w, "data: %s\n\n", b)
			w.(http.Flusher).Flush()
		}
		chunk(map[string]any{"role": "assistant", "content": ""}, nil)
		for _, word := range strings.SplitAfter(providerReply, " ") {
			chunk(map[string]any{"content": word}, nil)
		}
		chunk(map[string]any{}, "stop")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(p.Close)
	_, p.port, _ = net.SplitHostPort(p.Listener.Addr().String())
	return p
}

func (p *fakeProvider) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.reqs...)
}

// piPrompt runs pi in the sandbox with sbxArgs, sends one prompt and reads
// events until the agent ends (or piReplyTimeout), then closes stdin.
func piPrompt(t *testing.T, e *egressBox, prefix string, sbxArgs []string, prompt string, extraEnv ...string) (result, []map[string]any) {
	t.Helper()
	_, path := piBin(prefix)
	args := append([]string{"run", "--ro", prefix, "--env", "PATH=" + path}, sbxArgs...)
	args = append(args, "--", "pi", "--mode", "rpc", "--no-session", "--provider", "fake", "--model", "fake-model")
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	p := e.startCmd(opts{stdin: pr, env: append([]string{"SBX_TEST_HOSTS=" + e.hosts}, extraEnv...)}, e.bin, args...)
	p.sbxRun = true
	cmd, _ := json.Marshal(map[string]any{"id": "p1", "type": "prompt", "message": prompt})
	if _, err := pw.Write(append(cmd, '\n')); err != nil {
		t.Fatalf("write the prompt: %v", err)
	}
	var events []map[string]any
	timer := time.NewTimer(piReplyTimeout)
	defer timer.Stop()
read:
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				break read
			}
			var ev map[string]any
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Errorf("stdout line is not JSON (%v): %q", err, line)
				continue
			}
			events = append(events, ev)
			if ev["type"] == "agent_end" {
				break read
			}
		case <-timer.C:
			t.Errorf("no agent_end within %v; stdout %q, stderr %q", piReplyTimeout, p.stdout(), p.stderrText())
			break read
		}
	}
	pw.Close()
	return p.wait(), events
}

// assistantText is the text of the last assistant message in events.
func assistantText(events []map[string]any) string {
	text := ""
	for _, ev := range events {
		if ev["type"] != "message_end" {
			continue
		}
		m, _ := ev["message"].(map[string]any)
		if m["role"] != "assistant" {
			continue
		}
		var b strings.Builder
		content, _ := m["content"].([]any)
		for _, c := range content {
			if c, _ := c.(map[string]any); c["type"] == "text" {
				s, _ := c["text"].(string)
				b.WriteString(s)
			}
		}
		text = b.String()
	}
	return text
}

// TestPiReachesProviderThroughProxy: with --allow-host for its provider
// and nothing else, pi gets its answer through sbx's proxy; without it
// (the control that the walls, not luck, decide) the provider never hears
// from the sandbox.
func TestPiReachesProviderThroughProxy(t *testing.T) {
	prefix := installPi(t)
	prov := newFakeProvider(t)
	e := newEgressBox(t, "127.0.0.1 provider.test")
	agentDir := filepath.Join(e.sbxHome(e.data), ".pi", "agent")
	if err := os.MkdirAll(agentDir, 0o755); err != nil {
		t.Fatal(err)
	}
	models := fmt.Sprintf(`{"providers": {"fake": {"baseUrl": "http://provider.test:%s/v1", "api": "openai-completions", "apiKey": "sk-test",
  "models": [{"id": "fake-model", "compat": {"supportsUsageInStreaming": false}}]}}}`, prov.port)
	writeFile(t, filepath.Join(agentDir, "models.json"), models, 0o644)
	chownTree(t, e.sbxHome(e.data)) // the as-user pass: the user's sbx home
	allow := []string{"--allow-host", "provider.test:" + prov.port, "--allow-host", "127.0.0.1:" + prov.port}

	r, events := piPrompt(t, e, prefix, allow, "say hello")
	if got := assistantText(events); got != providerReply {
		t.Errorf("pi's answer through the proxy = %q, want %q\n%v", got, providerReply, r)
	}
	reqs := prov.requests()
	if len(reqs) == 0 || !strings.Contains(reqs[0], "POST /v1/chat/completions auth=Bearer sk-test") || !strings.Contains(reqs[0], "say hello") {
		t.Errorf("the provider got %q, want the prompt in a chat completion request", reqs)
	}
	if strings.Contains(r.stderr, "sbx: denied connect provider.test") {
		t.Errorf("the allowed provider was refused\n%v", r)
	}

	t.Run("control-no-allow-host", func(t *testing.T) {
		before := len(prov.requests())
		r, events := piPrompt(t, e, prefix, nil, "say hello")
		if got := assistantText(events); got == providerReply {
			t.Errorf("pi reached the provider without --allow-host\n%v", r)
		}
		if n := len(prov.requests()); n != before {
			t.Errorf("the provider got %d requests from a sandbox without --allow-host", n-before)
		}
	})
}
