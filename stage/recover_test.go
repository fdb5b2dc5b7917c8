package stage

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperRequest is what the re-executed test binary stages.
type helperRequest struct {
	Argv                                                        []string
	Cwd, HostHome, SandboxHome, Inside, StateDir, RunDir, RunID string
	Roots                                                       []string
}

// TestMain turns the test binary into a helper sbx when STAGE_HELPER is
// set: it stages, reports the rewritten argv on stdout and waits to be
// killed.
func TestMain(m *testing.M) {
	raw := os.Getenv("STAGE_HELPER")
	if raw == "" {
		os.Exit(m.Run())
	}
	var req helperRequest
	if err := json.Unmarshal([]byte(raw), &req); err != nil {
		panic(err)
	}
	p, err := Prepare(req.Argv, Options{
		Cwd: req.Cwd, HostHome: req.HostHome, SandboxHome: req.SandboxHome,
		SandboxHomeInside: req.Inside, StateDir: req.StateDir, RunDir: req.RunDir, RunID: req.RunID, Roots: req.Roots,
	})
	if err != nil {
		panic(err)
	}
	json.NewEncoder(os.Stdout).Encode(p.Argv())
	time.Sleep(time.Minute)
	os.Exit(3)
}

// startSbx runs a helper sbx staging argv with e's options; it returns the
// process and the rewritten argv once the manifest is on disk.
func startSbx(t *testing.T, e *env, argv ...string) (*exec.Cmd, []string) {
	t.Helper()
	o := e.opts()
	req, err := json.Marshal(helperRequest{
		Argv: argv, Cwd: o.Cwd, HostHome: o.HostHome, SandboxHome: o.SandboxHome,
		Inside: o.SandboxHomeInside, StateDir: o.StateDir, RunDir: o.RunDir, RunID: o.RunID, Roots: o.Roots,
	})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "STAGE_HELPER="+string(req))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	var got []string
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		t.Fatalf("helper said %q: %v", line, err)
	}
	return cmd, got
}

func TestRecoverAfterSIGKILL(t *testing.T) {
	e := newEnv(t)
	s := e.aged("allowed/s.jsonl", "s\n")
	ext := e.write("work/x.mjs", "x")
	cmd, argv := startSbx(t, e, "pi", "-e", ext, "--session", s)
	if argv[4] != inside("session/s.jsonl") {
		t.Fatalf("argv %q", argv)
	}
	e.sandboxWrite(argv[4], "s\nfrom the sandbox\n")

	// While its sbx lives, the run is not touched, from this process or
	// any other.
	if err := Recover(e.state, &e.warnings); err != nil {
		t.Fatal(err)
	}
	if !e.staged() || read(t, s) != "s\n" || e.warnings.Len() != 0 {
		t.Fatalf("Recover touched a live run: %q, host %q, warnings %q", listTree(e.runDir()), read(t, s), e.warnings.String())
	}

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if !exists(manifestPath(e.state, testRun)) || !e.staged() {
		t.Fatal("the kill left no manifest or staging dir to recover")
	}
	if err := Recover(e.state, &e.warnings); err != nil {
		t.Fatal(err)
	}
	if got := read(t, s); got != "s\nfrom the sandbox\n" {
		t.Errorf("host session after recovery %q", got)
	}
	if e.staged() {
		t.Errorf("staging dir left: %q", listTree(e.runDir()))
	}
	if ents, _ := os.ReadDir(e.state); len(ents) != 0 {
		t.Errorf("state dir left with %v", ents)
	}
	if w := e.warnings.String(); !strings.Contains(w, "sbx: completing the copy-back of run "+testRun) {
		t.Errorf("warnings %q", w)
	}
	// Nothing left: a second Recover is a no-op.
	e.warnings.Reset()
	if err := Recover(e.state, &e.warnings); err != nil || e.warnings.Len() != 0 {
		t.Errorf("second Recover: %v %q", err, e.warnings.String())
	}
}

func TestRecoverSkipsLivePlanInProcess(t *testing.T) {
	e := newEnv(t)
	s := e.aged("allowed/s.jsonl", "s\n")
	p := e.prepare("pi", "--session", s)
	e.sandboxWrite(p.Argv()[2], "changed\n")
	if err := Recover(e.state, &e.warnings); err != nil {
		t.Fatal(err)
	}
	if !e.staged() || !exists(manifestPath(e.state, testRun)) || read(t, s) != "s\n" {
		t.Fatal("Recover touched the live plan of its own process")
	}
	e.finish(p)
	if read(t, s) != "changed\n" {
		t.Error("Finish after Recover did not copy back")
	}
}

func TestRecoverOrphans(t *testing.T) {
	e := newEnv(t)
	if err := Recover(filepath.Join(e.base, "no-state"), nil); err != nil {
		t.Errorf("missing state dir: %v", err)
	}
	// A lock without a manifest (killed inside Prepare) and a stale lock
	// temp file are cleaned up.
	os.MkdirAll(e.state, 0o700)
	os.WriteFile(lockPath(e.state, "deadbeefdeadbeef"), nil, 0o600)
	stale := filepath.Join(e.state, ".cafe.lock.tmp-1234")
	os.WriteFile(stale, nil, 0o600)
	old := time.Now().Add(-2 * time.Minute)
	os.Chtimes(stale, old, old)
	// A young temp file is a live Prepare between create and flock.
	young := filepath.Join(e.state, ".beef.lock.tmp-5678")
	os.WriteFile(young, nil, 0o600)
	// A manifest whose lock file is gone is still recovered.
	s := e.aged("allowed/s.jsonl", "s\n")
	p := e.prepare("pi", "--session", s)
	e.sandboxWrite(p.Argv()[2], "S\n")
	p.lock.Close() // the owner dies...
	os.Remove(lockPath(e.state, testRun))
	if err := Recover(e.state, &e.warnings); err != nil {
		t.Fatal(err)
	}
	if read(t, s) != "S\n" || e.staged() {
		t.Errorf("orphan manifest not recovered")
	}
	if !exists(young) {
		t.Errorf("a young lock temp file was removed")
	}
	os.Remove(young)
	if ents, _ := os.ReadDir(e.state); len(ents) != 0 {
		t.Errorf("state dir left with %v", ents)
	}
}

func TestRecoverBadManifest(t *testing.T) {
	e := newEnv(t)
	os.MkdirAll(e.state, 0o700)
	os.WriteFile(manifestPath(e.state, "feedfeedfeedfeed"), []byte("{not json"), 0o600)
	err := Recover(e.state, &e.warnings)
	if err == nil || !strings.Contains(err.Error(), "feedfeedfeedfeed") {
		t.Errorf("Recover with a corrupt manifest: %v", err)
	}
	if !exists(manifestPath(e.state, "feedfeedfeedfeed")) {
		t.Error("corrupt manifest removed")
	}
}
