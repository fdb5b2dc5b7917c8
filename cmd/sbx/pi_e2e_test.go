package main

// End-to-end tests with the real pi coding agent from npm: "sbx run -- pi
// --mode rpc -e EXT --session FILE" with host paths under /tmp (invisible
// inside the sandbox, so they must be staged), offline, answering RPC
// commands on a pure JSONL stdout, and the session coming back to the host.
// testdata/e2e/install-pi.sh installs Node 22 and pi into a gitignored
// cache; the tests skip only when npm cannot reach the registry.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	// piInstallScript installs pi and its Node (relative to this package).
	piInstallScript = "../../testdata/e2e/install-pi.sh"
	// piInstallUnreachable is the script's status when the npm registry
	// cannot be reached.
	piInstallUnreachable = 3
	// piReplyTimeout bounds the wait for pi's RPC responses (pi starts in
	// a second or two on Node 22).
	piReplyTimeout = 45 * time.Second
	// piCwdMissing is what pi says when a session's stored cwd is absent.
	piCwdMissing = "Stored session working directory does not exist"
)

var (
	piOnce    sync.Once
	piPrefix  string // npm prefix holding node_modules/.bin/{pi,node}
	piSkip    string // why the tests skip, if they do
	piInstErr error
)

// installPi runs install-pi.sh once per test binary and returns the npm
// prefix. It skips t when the registry cannot be reached (and nothing is
// cached) and fails it on any other install error.
func installPi(t *testing.T) string {
	t.Helper()
	piOnce.Do(func() {
		script, err := filepath.Abs(piInstallScript)
		if err != nil {
			piInstErr = err
			return
		}
		cmd := exec.Command("sh", script)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err = cmd.Run()
		if code := exitCode(err); code == piInstallUnreachable {
			piSkip = "pi is not cached and npm cannot reach the registry: " + strings.TrimSpace(errb.String())
			return
		} else if err != nil {
			piInstErr = fmt.Errorf("%s: %v\nstderr:\n%s", script, err, errb.String())
			return
		}
		ls := lines(out.String())
		if len(ls) == 0 {
			piInstErr = fmt.Errorf("%s printed no prefix\nstderr:\n%s", script, errb.String())
			return
		}
		piPrefix = ls[len(ls)-1]
		if note := strings.TrimSpace(errb.String()); strings.Contains(note, "fallback") {
			fmt.Fprintln(os.Stderr, note)
		}
	})
	if piSkip != "" {
		t.Skip(piSkip)
	}
	if piInstErr != nil {
		t.Fatalf("install pi: %v", piInstErr)
	}
	return piPrefix
}

// piHostTemp returns a new directory under the host's /tmp (which the
// sandbox cannot see), removed after the test.
func piHostTemp(t *testing.T, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	chownToUser(t, dir)
	return dir
}

// piSeedLines are a session pi resumes and appends to offline: the header
// (cwd as given), a user and an assistant message. pi persists new entries
// only once a session holds an assistant message.
func piSeedLines(cwd string) []string {
	header, _ := json.Marshal(map[string]any{
		"type": "session", "version": 3, "id": "5b8e0c1e-6f0a-4d43-9a59-0d7f3c2a1b01",
		"timestamp": "2025-01-01T00:00:00.000Z", "cwd": cwd,
	})
	return []string{
		string(header),
		`{"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hello","timestamp":1735689601000}}`,
		`{"type":"message","id":"b2c3d4e5","parentId":"a1b2c3d4","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1735689602000}}`,
	}
}

// writePiSession writes a seeded session file with header cwd.
func writePiSession(t *testing.T, path, cwd string) string {
	t.Helper()
	content := strings.Join(piSeedLines(cwd), "\n") + "\n"
	writeFile(t, path, content, 0o644)
	return content
}

// piRun is one "sbx run -- pi --mode rpc ..." with its RPC exchange.
type piRun struct {
	result
	// replies are the RPC responses by command id.
	replies map[string]map[string]any
}

// piBin returns the directory holding pi and (unless the fallback was
// installed) Node 22, and a PATH starting with it.
func piBin(prefix string) (dir, path string) {
	dir = filepath.Join(prefix, "node_modules", ".bin")
	return dir, dir + ":/usr/bin:/bin"
}

// piProc is a running pi (in the sandbox or on the host): its stdout
// lines as they arrive, a description for failure messages, and wait.
type piProc struct {
	lines <-chan string
	diag  func() string
	wait  func() result
}

// runPi runs pi in the sandbox of b with sbxArgs before "--" and piArgs
// after "pi --mode rpc", and exchanges cmds with it (see exchange). The
// box's helpers check that the sandbox left nothing behind.
func runPi(t *testing.T, b *box, prefix string, sbxArgs, piArgs []string, cmds ...map[string]any) piRun {
	t.Helper()
	_, path := piBin(prefix)
	args := append([]string{"run", "--ro", prefix, "--env", "PATH=" + path}, sbxArgs...)
	args = append(append(args, "--", "pi", "--mode", "rpc"), piArgs...)
	return exchange(t, cmds, func(stdin *os.File) piProc {
		p := b.start(opts{stdin: stdin}, args...)
		return piProc{
			lines: p.lines,
			diag:  func() string { return fmt.Sprintf("stdout %q, stderr %q", p.stdout(), p.stderrText()) },
			wait:  p.wait,
		}
	})
}

// runPiOnHost runs "pi --mode rpc piArgs..." directly on the host in the
// box's workspace, with HOME home, and exchanges cmds with it.
func runPiOnHost(t *testing.T, b *box, prefix, home string, piArgs []string, cmds ...map[string]any) piRun {
	t.Helper()
	dir, path := piBin(prefix)
	return exchange(t, cmds, func(stdin *os.File) piProc {
		ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
		cmd := b.command(ctx, opts{env: []string{"HOME=" + home, "PATH=" + path}, stdin: stdin}, filepath.Join(dir, "pi"), append([]string{"--mode", "rpc"}, piArgs...)...)
		cmd.WaitDelay = 5 * time.Second
		var mu sync.Mutex
		var out, errb bytes.Buffer
		cmd.Stderr = lockedWriter{&mu, &errb}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		start := time.Now()
		if err := cmd.Start(); err != nil {
			cancel()
			t.Fatalf("start pi on the host: %v", err)
		}
		lines := make(chan string, 1024)
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer close(lines)
			r := bufio.NewReader(stdout)
			for {
				line, err := r.ReadString('\n')
				mu.Lock()
				out.WriteString(line)
				mu.Unlock()
				if line != "" {
					lines <- strings.TrimRight(line, "\r\n")
				}
				if err != nil {
					return
				}
			}
		}()
		text := func() (string, string) { mu.Lock(); defer mu.Unlock(); return out.String(), errb.String() }
		return piProc{
			lines: lines,
			diag:  func() string { o, e := text(); return fmt.Sprintf("stdout %q, stderr %q", o, e) },
			wait: func() result {
				defer cancel()
				go func() {
					for range lines { // drain, so the reader never blocks
					}
				}()
				<-done
				err := cmd.Wait()
				o, e := text()
				r := result{stdout: o, stderr: e, code: exitCode(err), elapsed: time.Since(start)}
				if ctx.Err() != nil || r.code < 0 {
					t.Fatalf("pi on the host: %v (killed after %v?)\n%v", err, runTimeout, r)
				}
				return r
			},
		}
	})
}

// exchange starts pi with start, writes cmds (each with an "id") to its
// stdin, keeps stdin open until a response to each has arrived (or stdout
// ended: pi stops reading once stdin closes), then closes it and waits for
// the process. Every stdout line must be a JSON object.
func exchange(t *testing.T, cmds []map[string]any, start func(stdin *os.File) piProc) piRun {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	p := start(pr)
	want := map[string]bool{}
	for _, c := range cmds {
		line, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		want[c["id"].(string)] = true
		if _, err := pw.Write(append(line, '\n')); err != nil {
			t.Fatalf("write %s to pi: %v", line, err)
		}
	}
	run := piRun{replies: map[string]map[string]any{}}
	timer := time.NewTimer(piReplyTimeout)
	defer timer.Stop()
wait:
	for len(run.replies) < len(want) {
		select {
		case line, ok := <-p.lines:
			if !ok {
				break wait // stdout ended: pi is gone
			}
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Errorf("stdout line is not a JSON object (%v): %q", err, line)
				continue
			}
			if id, _ := rec["id"].(string); rec["type"] == "response" && want[id] {
				run.replies[id] = rec
			}
		case <-timer.C:
			t.Errorf("pi answered %d of %d commands within %v; %s",
				len(run.replies), len(want), piReplyTimeout, p.diag())
			break wait
		}
	}
	pw.Close() // asks pi for an orderly shutdown
	run.result = p.wait()
	// The whole of stdout, not only what was read above, must be JSONL.
	if run.stdout == "" {
		return run
	}
	if !strings.HasSuffix(run.stdout, "\n") {
		t.Errorf("stdout does not end with a newline: %q", run.stdout)
	}
	for _, line := range strings.Split(strings.TrimSuffix(run.stdout, "\n"), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("stdout is not pure JSONL: line %q: %v", line, err)
		}
	}
	return run
}

// piData returns the data of a successful response, failing t otherwise.
func piData(t *testing.T, r piRun, id string) map[string]any {
	t.Helper()
	rec, ok := r.replies[id]
	if !ok {
		t.Fatalf("no response to %q\n%v", id, r.result)
	}
	if rec["success"] != true {
		t.Fatalf("response to %q failed: %v", id, rec)
	}
	data, ok := rec["data"].(map[string]any)
	if !ok {
		t.Fatalf("response to %q has no data: %v", id, rec)
	}
	return data
}

// readJSONL parses a JSONL file.
func readJSONL(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var recs []map[string]any
	for i, line := range lines(string(data)) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%s line %d is not JSON: %v: %q", path, i+1, err, line)
		}
		recs = append(recs, rec)
	}
	return recs
}

// stagedRunDir matches the in-sandbox path of a staged file and captures
// the run id.
var stagedRunDir = regexp.MustCompile(`^(/.*)?/\.sbx-staging/([0-9a-f]{16})/`)

func TestPiRPCStagedExtensionAndSession(t *testing.T) {
	b := newBox(t)
	prefix := installPi(t)
	home := b.tempDir()
	extDir := piHostTemp(t, "sbx-pi-ext-")
	sessDir := piHostTemp(t, "sbx-pi-sess-")
	nonce := uniqueName(t, "probe")

	// The extension proves it loaded twice: a command get_commands lists,
	// and a custom entry it appends to the session at startup.
	ext := filepath.Join(extDir, "probe.ts")
	writeFile(t, ext, fmt.Sprintf(`export default function (pi) {
  pi.registerCommand(%[1]q, { description: "sbx e2e probe", handler: async () => {} });
  pi.on("session_start", async () => { pi.appendEntry("sbx-e2e", { nonce: %[1]q }); });
}
`, nonce), 0o644)

	// The session is named through a symlink: copy-back must go to the
	// resolved file and leave the link alone.
	store := filepath.Join(sessDir, "store")
	if err := os.Mkdir(store, 0o755); err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(store, "s.jsonl")
	seed := writePiSession(t, real, b.ws)
	link := filepath.Join(sessDir, "current.jsonl")
	if err := os.Symlink(filepath.Join("store", "s.jsonl"), link); err != nil {
		t.Fatal(err)
	}
	chownToUser(t, ext, store, real, link)

	r := runPi(t, b, prefix, []string{"--home", home}, []string{"-e", ext, "--session", link},
		map[string]any{"id": "cmds", "type": "get_commands"},
		map[string]any{"id": "pwd", "type": "bash", "command": "pwd"})
	if r.code != 0 {
		t.Fatalf("want exit 0\n%v", r.result)
	}
	if strings.Contains(r.stderr, "sbx: not staging") || strings.Contains(r.stderr, "sbx: copying staged files back") {
		t.Errorf("sbx warned about staging:\n%s", r.stderr)
	}

	// The bash command ran in the workspace, at its host path.
	bash := piData(t, r, "pwd")
	if bash["output"] != b.ws+"\n" || bash["exitCode"] != float64(0) {
		t.Errorf("bash pwd: want output %q and exit 0, got %v", b.ws+"\n", bash)
	}

	// The extension was loaded from its staged copy, not the host path
	// (host /tmp is invisible inside).
	var runID string
	cmds, _ := piData(t, r, "cmds")["commands"].([]any)
	for _, c := range cmds {
		c, _ := c.(map[string]any)
		if c["name"] != nonce {
			continue
		}
		info, _ := c["sourceInfo"].(map[string]any)
		path, _ := info["path"].(string)
		m := stagedRunDir.FindStringSubmatch(path)
		if c["source"] != "extension" || m == nil || filepath.Base(path) != "probe.ts" {
			t.Errorf("command %s: want an extension loaded from .sbx-staging/<run id>/probe.ts, got %v", nonce, c)
			continue
		}
		runID = m[2]
	}
	if runID == "" {
		t.Fatalf("the extension's command %s is not among pi's commands: %v", nonce, cmds)
	}
	if len(r.ids) != 1 || r.ids[0] != runID {
		t.Errorf("staging run id %s, sandboxes seen %q: want the same single run", runID, r.ids)
	}

	// Copy-back: the seeded entries unchanged, then pi's new ones, in the
	// resolved file; the symlink still a symlink to it.
	if got, err := os.Readlink(link); err != nil || got != filepath.Join("store", "s.jsonl") {
		t.Errorf("session symlink after the run: %q, %v (copy-back must not replace it)", got, err)
	}
	data, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), seed) {
		t.Fatalf("host session does not start with the seeded entries:\n%s", data)
	}
	recs := readJSONL(t, real)
	var custom, bashEntry bool
	for _, e := range recs[len(piSeedLines("")):] {
		msg, _ := e["message"].(map[string]any)
		d, _ := e["data"].(map[string]any)
		switch {
		case e["type"] == "custom" && e["customType"] == "sbx-e2e" && d["nonce"] == nonce:
			custom = true
		case e["type"] == "message" && msg["role"] == "bashExecution" && msg["command"] == "pwd" && msg["output"] == b.ws+"\n":
			bashEntry = true
		}
	}
	if !custom || !bashEntry {
		t.Errorf("host session lacks pi's new entries (extension's custom entry %v, bashExecution of pwd %v):\n%s", custom, bashEntry, data)
	}
	names, err := os.ReadDir(store)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 {
		t.Errorf("session dir holds %d entries after copy-back, want only s.jsonl: %v", len(names), names)
	}

	// No staging dir left, neither in the sbx home nor in the state dir.
	staging := filepath.Join(home, ".sbx-staging")
	if left, err := os.ReadDir(staging); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Error(err)
	} else if len(left) > 0 {
		t.Errorf("%s not empty after the run: %v", staging, left)
	}
	if left, _ := filepath.Glob(filepath.Join(stateRoot, "staging", "*"+runID+"*")); len(left) > 0 {
		t.Errorf("staging state of run %s left: %q", runID, left)
	}
}

// TestPiSessionFromHostResumes checks that a session started on the host
// (its stored cwd the workspace's host path) resumes inside the sandbox,
// which mounts the workspace at that path; the container variant cannot.
// The controls: the same session whose cwd exists only on the host, or not
// at all, makes pi exit 1 in the sandbox, while on the host it resumes.
func TestPiSessionFromHostResumes(t *testing.T) {
	b := newBox(t)
	prefix := installPi(t)
	hostOnly := b.tempDir() // under the host's /tmp: hidden inside
	for _, c := range []struct {
		name   string
		cwd    string
		resume bool
	}{
		{"workspace", b.ws, true},
		{"host-only dir", hostOnly, false},
		{"missing dir", filepath.Join(b.ws, "no-such-dir"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := b.in(t)
			home := b.tempDir()
			sess := filepath.Join(piHostTemp(t, "sbx-pi-sess-"), "s.jsonl")
			seed := writePiSession(t, sess, c.cwd)
			chownToUser(t, sess)
			r := runPi(t, b, prefix, []string{"--home", home}, []string{"--session", sess},
				map[string]any{"id": "state", "type": "get_state"})
			if !c.resume {
				if r.code != 1 || !strings.Contains(r.stderr, piCwdMissing+": "+c.cwd) || len(r.replies) != 0 {
					t.Errorf("session with cwd %s: want exit 1 and %q on stderr\n%v", c.cwd, piCwdMissing, r.result)
				}
				if data, err := os.ReadFile(sess); err != nil || string(data) != seed {
					t.Errorf("session changed by a run that could not resume: %q, %v", data, err)
				}
				return
			}
			if r.code != 0 || strings.Contains(r.stderr, piCwdMissing) {
				t.Fatalf("session born on the host with cwd %s: want it resumed (exit 0)\n%v", c.cwd, r.result)
			}
			state := piData(t, r, "state")
			if state["sessionFile"] == sess || !strings.HasSuffix(fmt.Sprint(state["sessionFile"]), "/session/s.jsonl") {
				t.Errorf("pi's session file %v: want the staged copy of %s", state["sessionFile"], sess)
			}
			if state["sessionId"] != "5b8e0c1e-6f0a-4d43-9a59-0d7f3c2a1b01" || state["messageCount"] != float64(2) {
				t.Errorf("pi's session id %v with %v messages: want the seeded session's, with its 2 messages", state["sessionId"], state["messageCount"])
			}
		})
	}

	// On the host, the host-only cwd exists and the same session resumes:
	// the failure above is the sandbox's view, not a bad session.
	t.Run("host-only dir on the host", func(t *testing.T) {
		b := b.in(t)
		sess := filepath.Join(b.tempDir(), "s.jsonl")
		writePiSession(t, sess, hostOnly)
		chownToUser(t, sess)
		r := runPiOnHost(t, b, prefix, b.tempDir(), []string{"--session", sess},
			map[string]any{"id": "state", "type": "get_state"})
		if r.code != 0 || strings.Contains(r.stderr, piCwdMissing) {
			t.Fatalf("on the host: want the session resumed (exit 0)\n%v", r.result)
		}
		if state := piData(t, r, "state"); state["sessionFile"] != sess {
			t.Errorf("on the host, pi's session file %v: want %s", state["sessionFile"], sess)
		}
	})
}
