package main

// End-to-end tests of the pi extension shipped with sbx
// (integrations/pi/): the real pi from npm, on the host, in RPC mode with
// the extension loaded, asks a fake provider on loopback what to do; the
// provider answers with a bash tool call; the extension runs the command
// in "sbx run", and the tool result goes back to the provider in the next
// request. Offline: the provider is httptest, pi comes from install-pi.sh.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/runner"
)

// piExtensionDir is the extension package (relative to this package).
const piExtensionDir = "../../integrations/pi"

// toolProvider is a fake OpenAI-compatible provider: a request without a
// tool result is answered with a call of pi's bash tool (command, and
// timeout unless 0); one with a tool result, with the text "done". It
// records the request bodies.
type toolProvider struct {
	*httptest.Server
	command string
	timeout int
	mu      sync.Mutex
	bodies  []string
}

func newToolProvider(t *testing.T, command string, timeout int) *toolProvider {
	t.Helper()
	p := &toolProvider{command: command, timeout: timeout}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		p.bodies = append(p.bodies, string(body))
		p.mu.Unlock()
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		var req struct {
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(body, &req)
		answered := false
		for _, m := range req.Messages {
			answered = answered || m.Role == "tool"
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
		if answered {
			chunk(map[string]any{"content": "done"}, nil)
			chunk(map[string]any{}, "stop")
		} else {
			args := map[string]any{"command": p.command}
			if p.timeout > 0 {
				args["timeout"] = p.timeout
			}
			a, _ := json.Marshal(args)
			chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": 0, "id": "call_1", "type": "function",
				"function": map[string]any{"name": "bash", "arguments": string(a)},
			}}}, nil)
			chunk(map[string]any{}, "tool_calls")
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *toolProvider) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.bodies...)
}

// toolResult is the text of the tool message in a request body, if any.
func toolResult(body string) (string, bool) {
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal([]byte(body), &req) != nil {
		return "", false
	}
	for _, m := range req.Messages {
		if m.Role != "tool" {
			continue
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			return s, true
		}
		var parts []struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(m.Content, &parts)
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String(), true
	}
	return "", false
}

// extPi is pi running on the host with the sbx extension.
type extPi struct {
	*proc
	stdin *os.File
	t     *testing.T
}

// startExtPi starts "pi --mode rpc -e integrations/pi" on the host in the
// box's workspace, with HOME home (holding models.json for prov) and env.
func startExtPi(t *testing.T, b *box, prefix, home string, prov *toolProvider, env ...string) *extPi {
	t.Helper()
	ext, err := filepath.Abs(piExtensionDir)
	if err != nil {
		t.Fatal(err)
	}
	agentDir := filepath.Join(home, ".pi", "agent")
	if err := os.MkdirAll(agentDir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(agentDir, "models.json"), fmt.Sprintf(`{"providers": {"fake": {"baseUrl": "%s/v1", "api": "openai-completions", "apiKey": "sk-test",
  "models": [{"id": "fake-model", "compat": {"supportsUsageInStreaming": false}}]}}}`, prov.URL), 0o644)
	chownToUser(t, filepath.Join(home, ".pi"), agentDir, filepath.Join(agentDir, "models.json"))
	dir, path := piBin(prefix)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pr.Close(); pw.Close() })
	env = append([]string{"HOME=" + home, "PATH=" + path, "SBX_PI_BIN=" + sbxBin, "SBX_PI_UNSANDBOXED"}, env...)
	p := b.startCmd(opts{stdin: pr, env: env}, filepath.Join(dir, "pi"),
		"--mode", "rpc", "--no-session", "--provider", "fake", "--model", "fake-model", "-e", ext)
	return &extPi{proc: p, stdin: pw, t: t}
}

// send writes one RPC command.
func (p *extPi) send(cmd map[string]any) {
	p.t.Helper()
	line, _ := json.Marshal(cmd)
	if _, err := p.stdin.Write(append(line, '\n')); err != nil {
		p.t.Fatalf("write %s to pi: %v", line, err)
	}
}

// until reads events until one satisfies stop (returned last) or
// piReplyTimeout passes (failing the test).
func (p *extPi) until(stop func(ev map[string]any) bool) []map[string]any {
	p.t.Helper()
	var events []map[string]any
	timer := time.NewTimer(piReplyTimeout)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				p.t.Fatalf("pi's stdout ended before the awaited event; stderr %q", p.stderrText())
			}
			var ev map[string]any
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				p.t.Errorf("stdout line is not JSON (%v): %q", err, line)
				continue
			}
			events = append(events, ev)
			if stop(ev) {
				return events
			}
		case <-timer.C:
			p.t.Fatalf("no awaited event within %v; stdout %q, stderr %q", piReplyTimeout, p.stdout(), p.stderrText())
		}
	}
}

// finish closes pi's stdin, waits for it, and returns the ids of the
// sandboxes it (through the extension) created; proc.wait has checked
// that none of them left anything behind.
func (p *extPi) finish() (result, []string) {
	p.t.Helper()
	p.stdin.Close()
	r := p.wait()
	return r, r.ids
}

func isType(typ string) func(map[string]any) bool {
	return func(ev map[string]any) bool { return ev["type"] == typ }
}

// toolEnd returns the tool_execution_end event of events.
func toolEnd(t *testing.T, events []map[string]any) map[string]any {
	t.Helper()
	for _, ev := range events {
		if ev["type"] == "tool_execution_end" {
			return ev
		}
	}
	t.Fatalf("no tool_execution_end among %d events", len(events))
	return nil
}

// procsMatching lists the host's processes whose argv is exactly argv.
func procsMatching(argv ...string) []string {
	want := strings.Join(argv, "\x00") + "\x00"
	var found []string
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err == nil && string(cmdline) == want {
			found = append(found, d.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return found
}

// extSecret writes a secret in a host directory outside the workspace
// (under the host's /tmp, which the sandbox does not show) and returns
// its path and content.
func extSecret(t *testing.T) (string, string) {
	t.Helper()
	dir := piHostTemp(t, "sbx-pi-secret-")
	secret := uniqueName(t, "secret")
	path := filepath.Join(dir, "secret.txt")
	writeFile(t, path, secret+"\n", 0o644)
	chownToUser(t, path)
	return path, secret
}

// TestPiExtensionRunsToolInSbx: the model's bash call runs in a sandbox
// (it cannot read a host file outside the workspace that the same command
// reads bare), writes in the workspace, its exit status reaches pi, and
// the result reaches the provider in the next request.
func TestPiExtensionRunsToolInSbx(t *testing.T) {
	b := newBox(t)
	prefix := installPi(t)
	secretPath, secret := extSecret(t)
	// It also tries to plant a pi extension in the project, which pi
	// would load unsandboxed next time.
	command := fmt.Sprintf("cat %s; echo cat=$?; echo in-ws > made.txt; echo SBX=$SBX; "+
		"mkdir -p .pi/extensions && echo 'export default () => {}' > .pi/extensions/planted.ts; echo plant=$?; exit 7", secretPath)
	planted := filepath.Join(b.ws, ".pi", "extensions", "planted.ts")

	// The control: the same command, bare, reads the secret and plants.
	if r := b.host(opts{}, "bash", "-c", command); r.code != 7 || !strings.Contains(r.stdout, secret) || !strings.Contains(r.stdout, "cat=0") || !exists(planted) {
		t.Fatalf("bare control: want the secret read, the extension planted and exit 7\n%v", r)
	}
	for _, f := range []string{"made.txt", ".pi"} {
		if err := os.RemoveAll(filepath.Join(b.ws, f)); err != nil {
			t.Fatal(err)
		}
	}

	prov := newToolProvider(t, command, 0)
	pi := startExtPi(t, b, prefix, b.tempDir(), prov)
	pi.send(map[string]any{"id": "p1", "type": "prompt", "message": "read the secret"})
	events := pi.until(isType("agent_end"))
	// The user's own "!" command (RPC bash, pi's user_bash) is sandboxed too.
	pi.send(map[string]any{"id": "b1", "type": "bash", "command": "cat " + secretPath + "; echo SBX=$SBX"})
	bashReply := pi.until(func(ev map[string]any) bool { return ev["type"] == "response" && ev["id"] == "b1" })
	r, ids := pi.finish()

	if data, _ := bashReply[len(bashReply)-1]["data"].(map[string]any); data == nil ||
		strings.Contains(fmt.Sprint(data["output"]), secret) || !strings.Contains(fmt.Sprint(data["output"]), "SBX=1") {
		t.Errorf("the user's bash command: want it run in sbx without the secret, got %v", bashReply[len(bashReply)-1])
	}
	end := toolEnd(t, events)
	res, _ := json.Marshal(end["result"])
	if end["isError"] != true || !strings.Contains(string(res), "exited with code 7") {
		t.Errorf("tool result: want an error with exit code 7, got %s", res)
	}
	reqs := prov.requests()
	if len(reqs) != 2 {
		t.Fatalf("the provider got %d requests, want 2 (the prompt, then the tool result)\n%v", len(reqs), r)
	}
	out, ok := toolResult(reqs[1])
	if !ok {
		t.Fatalf("second request carries no tool result: %s", reqs[1])
	}
	if strings.Contains(out, secret) || !strings.Contains(out, "cat=1") || !strings.Contains(out, "No such file or directory") {
		t.Errorf("in the sandbox the secret must be invisible (cat=1, ENOENT); the provider got %q", out)
	}
	if !strings.Contains(out, "SBX=1") || !strings.Contains(out, "code 7") {
		t.Errorf("tool result lacks the sandbox's SBX=1 or the exit code: %q", out)
	}
	// The extension made .pi before the run, so sbx kept it read-only.
	if exists(planted) || !strings.Contains(out, "plant=1") || !strings.Contains(out, "Read-only file system") {
		t.Errorf("the sandboxed command could plant %s (tool result %q)", planted, out)
	}
	if data, err := os.ReadFile(filepath.Join(b.ws, "made.txt")); err != nil || string(data) != "in-ws\n" {
		t.Errorf("file written in the workspace from the sandbox: %q, %v", data, err)
	}
	// The tool's and the user's command's sandboxes, and the canary run of
	// the extension's "sbx doctor" at startup.
	if len(ids) != 3 {
		t.Errorf("pi made %d sandboxes, want 3: two commands' and sbx doctor's canary (%q)", len(ids), ids)
	}
}

// TestPiExtensionStopKillsSandbox: pi's timeout and abort kill the whole
// sandbox, with a child in the background, also when the command ignores
// SIGTERM (then sbx kills it after its 10 s stop grace); nothing of it is
// left (processes, sandbox state, cgroups).
func TestPiExtensionStopKillsSandbox(t *testing.T) {
	prefix := installPi(t)
	for _, c := range []struct {
		name    string
		timeout int
		trap    string
		within  time.Duration
	}{
		{"timeout", 2, "trap '' TERM;", 5 * time.Second},
		{"abort", 0, "", 5 * time.Second},
		{"abort, TERM ignored", 0, "trap '' TERM;", runner.StopGrace + 5*time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBox(t)
			// A unique sleep length marks the command's processes.
			mark := fmt.Sprintf("%d.%d", 3000+os.Getpid()%1000, time.Now().UnixNano()%1000000)
			command := fmt.Sprintf("%s sleep %s & echo started; sleep %s; wait", c.trap, mark, mark)
			prov := newToolProvider(t, command, c.timeout)
			pi := startExtPi(t, b, prefix, b.tempDir(), prov)
			pi.send(map[string]any{"id": "p1", "type": "prompt", "message": "sleep"})
			pi.until(func(ev map[string]any) bool {
				s, _ := json.Marshal(ev)
				return ev["type"] == "tool_execution_update" && strings.Contains(string(s), "started")
			})
			// "started" comes before the sleeps exec: give them a moment.
			var got []string
			for deadline := time.Now().Add(5 * time.Second); len(got) != 2 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				got = procsMatching("sleep", mark)
			}
			if len(got) != 2 {
				t.Fatalf("want the command's 2 sleeps running, found %q", got)
			}
			start := time.Now()
			if c.timeout == 0 {
				pi.send(map[string]any{"id": "a1", "type": "abort"})
			}
			events := pi.until(isType("agent_end"))
			took := time.Since(start)
			end := toolEnd(t, events)
			res, _ := json.Marshal(end["result"])
			want := "aborted"
			if c.timeout > 0 {
				want = "timed out after 2 seconds"
			}
			if end["isError"] != true || !strings.Contains(strings.ToLower(string(res)), want) {
				t.Errorf("tool result: want an error saying %q, got %s", want, res)
			}
			// The sandbox is gone by the time pi reports the result.
			if got := procsMatching("sleep", mark); len(got) > 0 {
				t.Errorf("processes left after the %s: %q", c.name, got)
			}
			if took > c.within {
				t.Errorf("the %s took %v to end the command", c.name, took)
			}
			r, ids := pi.finish()
			if len(ids) != 2 { // the command's, and sbx doctor's canary run
				t.Errorf("want 2 sandboxes, saw %q\n%v", ids, r)
			}
		})
	}
}

// TestPiExtensionFailsClosed: without a working sbx (missing, or its
// doctor exits non-zero) the extension refuses the command (the provider
// hears why, nothing runs); turned off explicitly, the same command runs
// bare.
func TestPiExtensionFailsClosed(t *testing.T) {
	prefix := installPi(t)
	// An sbx whose doctor finds the host unfit (exit 1), as on a host
	// without the kernel features: the real sbx for everything else.
	unfit := filepath.Join(piHostTemp(t, "sbx-pi-unfit-"), "sbx")
	writeFile(t, unfit, fmt.Sprintf("#!/bin/sh\n[ \"$1\" = doctor ] && { echo 'verdict:       unfit-for-test'; exit 1; }\nexec %s \"$@\"\n", sbxBin), 0o755)
	chownToUser(t, unfit)
	for _, c := range []struct {
		name string
		env  []string
		ran  bool
		why  string
	}{
		{"sbx missing", []string{"SBX_PI_BIN=/nonexistent/sbx"}, false, "not found or not executable"},
		{"sbx missing, turned off", []string{"SBX_PI_BIN=/nonexistent/sbx", "SBX_PI_UNSANDBOXED=1"}, true, ""},
		{"doctor says unfit", []string{"SBX_PI_BIN=" + unfit}, false, "unfit-for-test"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBox(t)
			secretPath, secret := extSecret(t)
			prov := newToolProvider(t, "cat "+secretPath+"; touch ran.txt", 0)
			pi := startExtPi(t, b, prefix, b.tempDir(), prov, c.env...)
			pi.send(map[string]any{"id": "p1", "type": "prompt", "message": "read"})
			pi.until(isType("agent_end"))
			pi.finish()
			reqs := prov.requests()
			if len(reqs) != 2 {
				t.Fatalf("the provider got %d requests, want 2", len(reqs))
			}
			out, _ := toolResult(reqs[1])
			_, err := os.Stat(filepath.Join(b.ws, "ran.txt"))
			if ran := err == nil; ran != c.ran || strings.Contains(out, secret) != c.ran {
				t.Errorf("command ran bare: %v, secret read: %v; want %v (tool result %q)", ran, strings.Contains(out, secret), c.ran, out)
			}
			if !c.ran && (!strings.Contains(out, "refusing to run unsandboxed") || !strings.Contains(out, c.why)) {
				t.Errorf("the refusal does not say why: %q", out)
			}
		})
	}
}

// TestPiExtensionSandboxCommand: /sandbox shows the sbx run argv of the
// session's workspace and sbx doctor's verdict, probing sbx anew: a pi
// started before sbx was installed sees it without a restart.
func TestPiExtensionSandboxCommand(t *testing.T) {
	b := newBox(t)
	prefix := installPi(t)
	prov := newToolProvider(t, "true", 0)
	bin := filepath.Join(piHostTemp(t, "sbx-pi-bin-"), "sbx") // not there yet
	pi := startExtPi(t, b, prefix, b.tempDir(), prov, "SBX_PI_BIN="+bin)
	sandbox := func() string {
		pi.send(map[string]any{"id": "s1", "type": "prompt", "message": "/sandbox"})
		var msg string
		pi.until(func(ev map[string]any) bool {
			if ev["type"] == "extension_ui_request" && ev["method"] == "notify" {
				msg, _ = ev["message"].(string)
				return strings.Contains(msg, "sbx doctor:")
			}
			return false
		})
		return msg
	}
	if msg := sandbox(); !strings.Contains(msg, "CANNOT enforce") || !strings.Contains(msg, "not found or not executable") {
		t.Errorf("/sandbox without sbx: want it to say sbx cannot enforce, got:\n%s", msg)
	}
	if err := os.Symlink(sbxBin, bin); err != nil {
		t.Fatal(err)
	}
	msg := sandbox()
	pi.finish()
	for _, want := range []string{
		"run: " + bin + " run --workspace " + b.ws + " --write",
		"-- bash -c <command>",
		"verdict:",
		"(can enforce)",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("/sandbox output lacks %q:\n%s", want, msg)
		}
	}
	if !strings.Contains(msg, "--settings yes") || !strings.Contains(msg, "(from sbx features --json)") {
		t.Errorf("/sandbox does not show the flags read from sbx features --json:\n%s", msg)
	}
	if len(prov.requests()) != 0 {
		t.Errorf("/sandbox reached the provider")
	}
}

// TestPiExtensionNoFeatures: an sbx without "sbx features" (an older one)
// is used with no optional flag, and /sandbox says why; a settings file it
// then cannot apply refuses the command instead of running without it.
func TestPiExtensionNoFeatures(t *testing.T) {
	b := newBox(t)
	prefix := installPi(t)
	old := filepath.Join(piHostTemp(t, "sbx-pi-old-"), "sbx")
	writeFile(t, old, fmt.Sprintf("#!/bin/sh\n[ \"$1\" = features ] && { echo 'sbx: unknown command \"features\" (see sbx --help)' >&2; exit 125; }\nexec %s \"$@\"\n", sbxBin), 0o755)
	chownToUser(t, old)
	projectSettings(t, b, `{"filesystem": {"denyRead": ["secret.txt"]}}`)
	prov := newToolProvider(t, "echo ran=$?", 0)
	pi := startExtPi(t, b, prefix, b.tempDir(), prov, "SBX_PI_BIN="+old)
	pi.send(map[string]any{"id": "s1", "type": "prompt", "message": "/sandbox"})
	var msg string
	pi.until(func(ev map[string]any) bool {
		if ev["type"] == "extension_ui_request" && ev["method"] == "notify" {
			msg, _ = ev["message"].(string)
			return strings.Contains(msg, "sbx doctor:")
		}
		return false
	})
	for _, want := range []string{"--settings no", "--quiet no", "sbx features --json failed (exit 125", "no optional flag used", "(can enforce)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("/sandbox with an sbx without features lacks %q:\n%s", want, msg)
		}
	}
	pi.send(map[string]any{"id": "p1", "type": "prompt", "message": "run"})
	pi.until(isType("agent_end"))
	pi.finish()
	reqs := prov.requests()
	if len(reqs) != 2 {
		t.Fatalf("the provider got %d requests, want 2", len(reqs))
	}
	if out, _ := toolResult(reqs[1]); !strings.Contains(out, "no --settings flag") || strings.Contains(out, "ran=") {
		t.Errorf("an sbx without --settings ran a command under a settings file: %q", out)
	}
}

// TestPiExtensionSettings: a project settings file (srt's shape, at
// <cwd>/.pi/sandbox.json) reaches sbx as --settings when sbx has the flag:
// its denyRead hides a workspace file that the same command reads bare.
// An sbx without the flag cannot apply it, and the extension refuses the
// command rather than run it without the policy.
func TestPiExtensionSettings(t *testing.T) {
	b := newBox(t)
	prefix := installPi(t)
	feat := b.sbx(opts{}, "features", "--json")
	hasSettings := feat.code == 0 && strings.Contains(feat.stdout, `"name": "settings"`)
	secretPath := filepath.Join(b.ws, "secret.txt")
	secret := uniqueName(t, "secret")
	writeFile(t, secretPath, secret+"\n", 0o644)
	if err := os.Mkdir(filepath.Join(b.ws, ".pi"), 0o755); err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(b.ws, ".pi", "sandbox.json")
	writeFile(t, settings, fmt.Sprintf(`{"filesystem": {"denyRead": [%q]}}`, secretPath), 0o644)
	chownToUser(t, secretPath, filepath.Join(b.ws, ".pi"), settings)
	command := "cat secret.txt; echo cat=$?"
	if r := b.host(opts{}, "bash", "-c", command); !strings.Contains(r.stdout, secret) {
		t.Fatalf("bare control: want the file read\n%v", r)
	}

	prov := newToolProvider(t, command, 0)
	pi := startExtPi(t, b, prefix, b.tempDir(), prov)
	pi.send(map[string]any{"id": "p1", "type": "prompt", "message": "read"})
	pi.until(isType("agent_end"))
	pi.finish()
	reqs := prov.requests()
	if len(reqs) != 2 {
		t.Fatalf("the provider got %d requests, want 2", len(reqs))
	}
	out, _ := toolResult(reqs[1])
	if strings.Contains(out, secret) {
		t.Fatalf("the denyRead file was read in the sandbox (sbx --settings: %v): %q", hasSettings, out)
	}
	if hasSettings {
		if !strings.Contains(out, "cat=1") {
			t.Errorf("with --settings: want cat to fail on the denyRead file, got %q", out)
		}
	} else if !strings.Contains(out, "no --settings flag") || strings.Contains(out, "cat=") {
		t.Errorf("without --settings: want the command refused, naming the flag, got %q", out)
	}
}

// TestPiExtensionProjectFileAlone: with no global settings file, the
// project's <cwd>/.pi/sandbox.json (which sandboxed commands can write)
// still only tightens: its allowWrite of a directory outside the
// workspace refuses the command (sbx 125) and nothing is written there.
// The control: the same allowWrite from the global file (the pi agent
// dir's extensions/sandbox.json) lets the command write there.
func TestPiExtensionProjectFileAlone(t *testing.T) {
	b := newBox(t)
	prefix := installPi(t)
	outside := b.tempDir()
	content := fmt.Sprintf(`{"filesystem": {"allowWrite": [".", %q]}}`, outside)
	command := fmt.Sprintf("echo x > %s/f; echo w=$?", outside)
	run := func(home string) string {
		t.Helper()
		prov := newToolProvider(t, command, 0)
		pi := startExtPi(t, b, prefix, home, prov)
		pi.send(map[string]any{"id": "p1", "type": "prompt", "message": "write"})
		pi.until(isType("agent_end"))
		pi.finish()
		reqs := prov.requests()
		if len(reqs) != 2 {
			t.Fatalf("the provider got %d requests, want 2", len(reqs))
		}
		out, _ := toolResult(reqs[1])
		return out
	}
	projectSettings(t, b, content)
	out := run(b.tempDir())
	if !strings.Contains(out, "may only tighten") || strings.Contains(out, "w=0") {
		t.Errorf("the project's file alone: want the command refused (it may only tighten), got %q", out)
	}
	if _, err := os.Stat(filepath.Join(outside, "f")); err == nil {
		t.Fatalf("the project's file alone opened %s", outside)
	}
	if err := os.Remove(filepath.Join(b.ws, ".pi", "sandbox.json")); err != nil {
		t.Fatal(err)
	}
	home := b.tempDir()
	ext := filepath.Join(home, ".pi", "agent", "extensions")
	if err := os.MkdirAll(ext, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ext, "sandbox.json"), content, 0o644)
	chownToUser(t, filepath.Join(home, ".pi"), filepath.Join(home, ".pi", "agent"), ext, filepath.Join(ext, "sandbox.json"))
	if out := run(home); !strings.Contains(out, "w=0") {
		t.Errorf("control, the same file as the global one: want the command to write %s, got %q", outside, out)
	}
}
