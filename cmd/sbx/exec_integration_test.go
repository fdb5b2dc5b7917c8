package main

// End-to-end tests of `sbx exec`: the real binary reads a JSON request and
// writes one JSON result, which must validate against gate/result.schema.json.
// Every run is checked for leftovers (helpers_test.go); a rejected request
// must start nothing at all.

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sbx-sandbox/sbx/gate"
)

// execRun is one `sbx exec`: how the process ended and the result it wrote.
type execRun struct {
	result
	res gate.Result
}

var (
	resultSchemaOnce sync.Once
	resultSchema     *jsonschema.Schema
	resultSchemaErr  error
)

// compiledResultSchema compiles gate.ResultSchema (the embedded
// gate/result.schema.json) once, with format assertions on.
func compiledResultSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	resultSchemaOnce.Do(func() {
		const url = "https://github.com/sbx-sandbox/sbx/gate/result.schema.json"
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(gate.ResultSchema))
		if err != nil {
			resultSchemaErr = err
			return
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		c.AssertFormat()
		if err := c.AddResource(url, doc); err != nil {
			resultSchemaErr = err
			return
		}
		resultSchema, resultSchemaErr = c.Compile(url)
	})
	if resultSchemaErr != nil {
		t.Fatalf("compile result schema: %v", resultSchemaErr)
	}
	return resultSchema
}

// req builds a request for the box's workspace from key/value pairs.
func (b *box) req(command []string, kv ...any) map[string]any {
	m := map[string]any{"command": command, "workspace": b.ws}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// shell is the pair of keys a request needs to run a shell.
var shell = []any{"allowShell", true, "confirmShell", true}

// writable is the pair of keys a request needs for a writable workspace.
var writable = []any{"write", true, "confirmWrite", true}

// exec runs "sbx exec FLAGS..." with req on stdin (a string or []byte as
// is, anything else marshaled; nil for no stdin), and checks what every
// result must satisfy: exit 0, stdout exactly one JSON object that the
// result schema accepts, nothing on stderr, and a sandbox created (and gone)
// exactly when the request got past the gate.
func (b *box) exec(req any, flags ...string) execRun {
	b.t.Helper()
	r, p := b.execProc(req, flags...)
	return b.checkExec(r, p)
}

// execProc starts sbx exec and waits for it, without checking the result.
func (b *box) execProc(req any, flags ...string) (result, *proc) {
	b.t.Helper()
	p := b.startExec(req, opts{}, flags...)
	return p.wait(), p
}

func (b *box) startExec(req any, o opts, flags ...string) *proc {
	b.t.Helper()
	var in []byte
	switch v := req.(type) {
	case nil:
	case string:
		in = []byte(v)
	case []byte:
		in = v
	default:
		var err error
		if in, err = json.Marshal(v); err != nil {
			b.t.Fatal(err)
		}
	}
	if req != nil {
		o.stdin = bytes.NewReader(in)
	}
	return b.start(o, append([]string{"exec"}, flags...)...)
}

// checkExec checks the run of an sbx exec that must have written a result.
func (b *box) checkExec(r result, p *proc) execRun {
	b.t.Helper()
	run := execRun{result: r}
	if r.code != 0 {
		b.t.Fatalf("sbx exec: want exit 0 with a result\n%v", r)
	}
	if r.stderr != "" {
		b.t.Errorf("sbx exec wrote on stderr: %q", r.stderr)
	}
	run.res = parseResult(b.t, r.stdout)
	ran := run.res.Status != gate.StatusRejected
	if rootless() {
		// A run that failed during setup may have said so already.
		code := r.code
		if run.res.Status == gate.StatusFailed {
			code = exitSbxError
		}
		checkLimitsNote(b.t, p.cmd.Args, ran, code, r.notes)
	}
	look := 300 * time.Millisecond
	if ran {
		look = 2 * time.Second
	}
	ids, err := runs.ids(p.cmd.Process.Pid, p.start, look)
	if err != nil {
		b.t.Errorf("run watcher: %v", err)
	}
	switch {
	case ran && len(ids) == 0 && run.res.Status != gate.StatusFailed:
		b.t.Errorf("status %s but no sandbox state dir was seen under %s/run", run.res.Status, stateRoot)
	case !ran && len(ids) > 0:
		b.t.Errorf("rejected request (%s) created sandbox(es) %v", run.res.Error, ids)
	}
	for _, id := range ids {
		assertNoLeftovers(b.t, id)
	}
	if !ran && run.res.DurationMs != 0 {
		b.t.Errorf("rejected request has durationMs %d, want 0", run.res.DurationMs)
	}
	return run
}

// parseResult checks that stdout is exactly one JSON object (and a newline)
// that the result schema accepts, and decodes it strictly.
func parseResult(t *testing.T, stdout string) gate.Result {
	t.Helper()
	if !strings.HasSuffix(stdout, "}\n") || strings.Count(stdout, "\n") != 1 {
		t.Fatalf("stdout is not one JSON object on one line: %q", stdout)
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(stdout))
	if err != nil {
		t.Fatalf("stdout is not JSON: %v\n%q", err, stdout)
	}
	if err := compiledResultSchema(t).Validate(inst); err != nil {
		t.Fatalf("result does not validate against gate/result.schema.json: %v\n%s", err, stdout)
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	var res gate.Result
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("decode result: %v\n%s", err, stdout)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("data after the result object: %q", stdout)
	}
	if len(res.Output) > gate.OutputBudget {
		t.Errorf("output is %d bytes, over the %d-byte budget", len(res.Output), gate.OutputBudget)
	}
	return res
}

// wantExited fails t unless run exited with code.
func (run execRun) wantExited(t *testing.T, code int) {
	t.Helper()
	if run.res.Status != gate.StatusExited || run.res.ExitCode == nil || *run.res.ExitCode != code {
		t.Errorf("want status exited, exit code %d; got %s", code, run.stdout)
	}
}

// wantRejected fails t unless run was rejected with an error containing
// every one of want.
func (run execRun) wantRejected(t *testing.T, want ...string) {
	t.Helper()
	if run.res.Status != gate.StatusRejected {
		t.Errorf("want status rejected; got %s", run.stdout)
		return
	}
	for _, w := range want {
		if !strings.Contains(run.res.Error, w) {
			t.Errorf("rejection %q does not contain %q", run.res.Error, w)
		}
	}
}

func mkdir(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func mustNotExist(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists on the host (err %v): the request ran", path, err)
	}
}

// TestExecOK: a plain command runs in the workspace and its output comes
// back in the result; --request FILE reads the same request from a file.
func TestExecOK(t *testing.T) {
	b := newBox(t)
	writeFile(t, filepath.Join(b.ws, "exec-marker.txt"), "hello\n", 0o644)
	req := b.req([]string{"ls", "-la"})
	check := func(t *testing.T, run execRun) {
		t.Helper()
		run.wantExited(t, 0)
		if !strings.Contains(run.res.Output, "exec-marker.txt") {
			t.Errorf("ls -la output does not list the workspace file: %q", run.res.Output)
		}
		if run.res.DurationMs <= 0 || run.res.Truncated || len(run.res.Violations) != 0 || run.res.Error != "" || run.res.CleanupError != "" {
			t.Errorf("want durationMs > 0, not truncated, no violations, no error; got %s", run.stdout)
		}
	}
	t.Run("stdin", func(t *testing.T) {
		check(t, b.in(t).exec(req))
	})
	t.Run("request file", func(t *testing.T) {
		b := b.in(t)
		data, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(b.tempDir(), "request.json")
		writeFile(t, file, string(data), 0o600)
		chownToUser(t, file)
		check(t, b.exec(nil, "--request", file))
	})
}

// TestExecExitCodes: the command's exit status, or 128+N for a signal, is
// the result's exitCode, and sbx itself still exits 0.
func TestExecExitCodes(t *testing.T) {
	b := newBox(t)
	for _, c := range []struct {
		name    string
		command []string
		extra   []any
		code    int
	}{
		{"true", []string{"true"}, nil, 0},
		{"false", []string{"false"}, nil, 1},
		{"exit 7", []string{"sh", "-c", "exit 7"}, shell, 7},
		{"SIGKILL", []string{"python3", "-c", "import os; os.kill(os.getpid(), 9)"}, nil, 128 + 9},
		{"SIGTERM", []string{"sh", "-c", "kill -TERM $$"}, shell, 128 + 15},
		{"not found", []string{"no-such-command-sbx"}, nil, 127},
	} {
		t.Run(c.name, func(t *testing.T) {
			b.in(t).exec(b.req(c.command, c.extra...)).wantExited(t, c.code)
		})
	}
}

// TestExecTimeout: past timeoutMs the sandbox is killed and the result says
// timed_out; a timeout over 120 s is refused.
func TestExecTimeout(t *testing.T) {
	b := newBox(t)
	t.Run("timed out", func(t *testing.T) {
		b := b.in(t)
		run := b.exec(b.req([]string{"sleep", "30"}, "timeoutMs", 500))
		if run.res.Status != gate.StatusTimedOut || run.res.ExitCode != nil || run.res.Error == "" {
			t.Errorf("want status timed_out, exitCode null and an error; got %s", run.stdout)
		}
		if run.res.DurationMs < 500 {
			t.Errorf("durationMs %d < timeoutMs 500", run.res.DurationMs)
		}
		if run.elapsed > 10*time.Second {
			t.Errorf("sbx exec took %v to time out a 500 ms run", run.elapsed)
		}
	})
	t.Run("120001", func(t *testing.T) {
		b := b.in(t)
		b.exec(b.req([]string{"true"}, "timeoutMs", 120001)).wantRejected(t, "timeoutMs", "120000")
	})
	t.Run("0", func(t *testing.T) {
		b := b.in(t)
		b.exec(b.req([]string{"true"}, "timeoutMs", 0)).wantRejected(t, "timeoutMs")
	})
	t.Run("120000", func(t *testing.T) {
		b := b.in(t)
		b.exec(b.req([]string{"true"}, "timeoutMs", 120000)).wantExited(t, 0)
	})
}

// descendant waits up to wait for a process named comm below pid and
// returns its pid, or 0.
func descendant(pid int, comm string, wait time.Duration) int {
	deadline := time.Now().Add(wait)
	for {
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			p, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			c, err := os.ReadFile("/proc/" + e.Name() + "/comm")
			if err != nil || strings.TrimSpace(string(c)) != comm {
				continue
			}
			if slices.Contains(ancestors(p), pid) {
				return p
			}
		}
		if time.Now().After(deadline) {
			return 0
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestExecCancel: SIGINT or SIGTERM to sbx exec kills the sandbox, and sbx
// still writes a result with status cancelled and exits 0.
func TestExecCancel(t *testing.T) {
	b := newBox(t)
	for _, c := range []struct {
		name string
		sig  syscall.Signal
		// early: signal as soon as the run dir exists, during setup,
		// rather than once the command runs.
		early bool
	}{
		{"SIGINT", syscall.SIGINT, false},
		{"SIGTERM", syscall.SIGTERM, false},
		{"SIGINT during setup", syscall.SIGINT, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := b.in(t)
			p := b.startExec(b.req([]string{"sleep", "30"}), opts{timeout: 40 * time.Second})
			pid := p.cmd.Process.Pid
			ids, err := runs.ids(pid, p.start, 20*time.Second)
			if err != nil || len(ids) == 0 {
				p.signal(syscall.SIGKILL)
				p.wait()
				t.Fatalf("no sandbox of sbx exec seen within 20s (%v)", err)
			}
			sleeper := 0
			if !c.early {
				if sleeper = descendant(pid, "sleep", 20*time.Second); sleeper == 0 {
					p.signal(syscall.SIGKILL)
					p.wait()
					t.Fatal("the sandboxed sleep never showed up")
				}
			}
			sent := time.Now()
			p.signal(c.sig)
			r := p.wait()
			if took := time.Since(sent); took > 5*time.Second {
				t.Errorf("sbx exec took %v to end after %v", took, c.sig)
			}
			run := b.checkExec(r, p)
			if run.res.Status != gate.StatusCancelled || run.res.ExitCode != nil {
				t.Errorf("want status cancelled, exitCode null; got %s", run.stdout)
			}
			if sleeper != 0 {
				if c, err := os.ReadFile("/proc/" + strconv.Itoa(sleeper) + "/comm"); err == nil && strings.TrimSpace(string(c)) == "sleep" {
					t.Errorf("the sandboxed sleep (pid %d) outlived the cancelled run", sleeper)
				}
			}
		})
	}
}

// TestExecWrite: the workspace is read-only unless the request sets write
// and confirmWrite; write alone is refused with the Docker tool's message.
func TestExecWrite(t *testing.T) {
	b := newBox(t)
	target := filepath.Join(b.ws, "x")
	touch := []string{"touch", "x"}
	t.Run("read-only", func(t *testing.T) {
		b := b.in(t)
		run := b.exec(b.req(touch))
		if run.res.Status != gate.StatusExited || run.res.ExitCode == nil || *run.res.ExitCode == 0 ||
			!strings.Contains(run.res.Output, "Read-only file system") {
			t.Errorf("touch in a read-only workspace: want a non-zero exit and EROFS; got %s", run.stdout)
		}
		mustNotExist(t, target)
	})
	t.Run("write without confirmWrite", func(t *testing.T) {
		b := b.in(t)
		run := b.exec(b.req(touch, "write", true))
		run.wantRejected(t)
		if run.res.Error != "Writable sandbox requires confirmWrite=true" {
			t.Errorf("error %q, want exactly %q", run.res.Error, "Writable sandbox requires confirmWrite=true")
		}
		mustNotExist(t, target)
	})
	t.Run("confirmWrite without write", func(t *testing.T) {
		b := b.in(t)
		run := b.exec(b.req(touch, "confirmWrite", true))
		if run.res.Status != gate.StatusExited || run.res.ExitCode == nil || *run.res.ExitCode == 0 {
			t.Errorf("confirmWrite alone must leave the workspace read-only; got %s", run.stdout)
		}
		mustNotExist(t, target)
	})
	t.Run("write and confirmWrite", func(t *testing.T) {
		b := b.in(t)
		b.exec(b.req(touch, writable...)).wantExited(t, 0)
		if fi, err := os.Stat(target); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("touch with write+confirmWrite: %s not created on the host (%v)", target, err)
		}
	})
}

// TestExecCwdEscape: a cwd that leaves the workspace, lexically, as an
// absolute path or through a symbolic link, is refused as "path escapes
// workspace" (permission denied), with the same message whether the outside
// path exists or not, and nothing runs. A sibling that shares the
// workspace's name as a prefix is outside.
func TestExecCwdEscape(t *testing.T) {
	b := newBox(t)
	parent := b.ws
	ws := filepath.Join(parent, "thread-1")
	sibling := filepath.Join(parent, "thread-12")
	mkdir(t, filepath.Join(ws, "sub"))
	mkdir(t, filepath.Join(sibling, "deep"))
	const missing = "/nonexistent-sbx-exec-test"
	symlink(t, "/etc", filepath.Join(ws, "etc-link"))
	symlink(t, missing, filepath.Join(ws, "missing-link"))
	symlink(t, "../thread-12", filepath.Join(ws, "sib-rel"))
	symlink(t, sibling, filepath.Join(ws, "sib-abs"))
	symlink(t, "sub", filepath.Join(ws, "in-link"))
	wb := *b
	wb.ws = ws
	b = &wb

	// Controls: cwds inside the workspace (directly and through a link
	// that stays inside) are accepted and used.
	for _, c := range []struct{ cwd, want string }{
		{"sub", filepath.Join(ws, "sub")},
		{"in-link", filepath.Join(ws, "sub")},
		{"sub/..", ws},
	} {
		t.Run("inside "+c.cwd, func(t *testing.T) {
			b := b.in(t)
			run := b.exec(b.req([]string{"pwd"}, "cwd", c.cwd))
			run.wantExited(t, 0)
			if run.res.Output != c.want+"\n" {
				t.Errorf("pwd in cwd %q = %q, want %q", c.cwd, run.res.Output, c.want+"\n")
			}
		})
	}

	// Pairs of escapes, one to an existing and one to a missing outside
	// path: both rejected the same way.
	for _, pair := range [][2]string{
		{"../", "../nonexistent-sbx"},
		{"../../etc", "../.." + missing},
		{"/etc", missing},
		{"etc-link", "missing-link"},
		{"../thread-12", "../thread-12/nonexistent"},
		{"sib-rel/deep", "sib-rel/nonexistent"},
		{"sib-abs", "sib-abs/nonexistent"},
		{"sub/../../thread-12", "sub/../../thread-13"},
	} {
		t.Run("escape "+pair[0], func(t *testing.T) {
			b := b.in(t)
			var msgs [2]string
			for i, cwd := range pair {
				run := b.exec(b.req([]string{"touch", "escaped"}, append([]any{"cwd", cwd}, writable...)...))
				run.wantRejected(t, "path escapes workspace", "permission denied")
				// No existence oracle: apart from the echoed cwd, the
				// message does not depend on what is outside.
				msgs[i] = strings.ReplaceAll(run.res.Error, strconv.Quote(cwd), "CWD")
			}
			if msgs[0] != msgs[1] {
				t.Errorf("existing and missing outside paths are told apart:\n  %q: %s\n  %q: %s", pair[0], msgs[0], pair[1], msgs[1])
			}
			for _, dir := range []string{ws, sibling, filepath.Join(sibling, "deep")} {
				mustNotExist(t, filepath.Join(dir, "escaped"))
			}
		})
	}
}

// TestExecShellWrapper: a shell as command[0] is refused by base name,
// case-folded and without .exe, unless allowShell and confirmShell.
func TestExecShellWrapper(t *testing.T) {
	b := newBox(t)
	writeFile(t, filepath.Join(b.ws, "shell-marker"), "", 0o644)
	for _, command := range [][]string{
		{"bash", "-c", "ls"},
		{"/bin/sh", "-c", "ls"},
		{"BASH.EXE"},
		{"/usr/bin/Dash", "-c", "ls"},
	} {
		t.Run(strings.Join(command, " "), func(t *testing.T) {
			b := b.in(t)
			b.exec(b.req(command)).wantRejected(t, "shell wrapper", strconv.Quote(command[0]))
			b.exec(b.req(command, "allowShell", true)).wantRejected(t, gate.MsgShellNeedsConfirm)
			b.exec(b.req(command, "confirmShell", true)).wantRejected(t, "shell wrapper")
		})
	}
	for _, command := range [][]string{{"bash", "-c", "ls"}, {"/bin/sh", "-c", "ls"}} {
		t.Run("allowed "+strings.Join(command, " "), func(t *testing.T) {
			b := b.in(t)
			run := b.exec(b.req(command, shell...))
			run.wantExited(t, 0)
			if run.res.Output != "shell-marker\n" {
				t.Errorf("output %q, want the workspace listing", run.res.Output)
			}
		})
	}
	// Past the gate, BASH.EXE is just a command that does not exist.
	t.Run("allowed BASH.EXE", func(t *testing.T) {
		b := b.in(t)
		b.exec(b.req([]string{"BASH.EXE"}, shell...)).wantExited(t, 127)
	})
}

// TestExecMalformed: requests that are not one well-formed object of the
// known keys are rejected with a clear error, sbx exits 0 with the result,
// and nothing runs. Each request would otherwise create a file.
func TestExecMalformed(t *testing.T) {
	b := newBox(t)
	ws := strconv.Quote(b.ws)
	ok := func(file string) string {
		return `"command":["touch",` + strconv.Quote(file) + `],"workspace":` + ws + `,"write":true,"confirmWrite":true`
	}
	for _, c := range []struct {
		name, in, file, want string
	}{
		{"unknown key", `{` + ok("unknown") + `,"image":"alpine"}`, "unknown", `unknown key "image"`},
		{"case-folded key", `{` + ok("folded") + `,"TimeoutMs":100}`, "folded", `unknown key "TimeoutMs"`},
		{"duplicate key", `{` + ok("dup") + `,"write":true}`, "dup", `duplicate key "write"`},
		{"command a string", `{"command":"touch cmdstr","workspace":` + ws + `}`, "cmdstr", "command must be an array of strings"},
		{"command with a number", `{"command":["touch",1],"workspace":` + ws + `}`, "1", "command[1] must be a string"},
		{"write a string", `{"command":["touch","wstr"],"workspace":` + ws + `,"write":"true","confirmWrite":true}`, "wstr", "write must be a boolean"},
		{"null", `{` + ok("null") + `,"cwd":null}`, "null", "cwd must be a string"},
		{"missing workspace", `{"command":["touch","nows"]}`, "nows", `missing required key "workspace"`},
		{"array", `[` + ok("array") + `]`, "array", "must be a JSON object"},
		{"string", `"` + "touch" + `"`, "touch", "must be a JSON object"},
		{"trailing object", `{` + ok("trail") + `}{}`, "trail", "data after the JSON object"},
		{"trailing garbage", `{` + ok("garbage") + `} x`, "garbage", "request"},
		{"truncated", `{` + ok("cut"), "cut", "request"},
		{"invalid UTF-8", `{` + ok("utf8") + `,"cwd":"` + "\xff" + `"}`, "utf8", "UTF-8"},
		{"empty", "", "", "request is empty"},
		{"white space", " \n\t", "", "request is empty"},
		{"oversized", `{` + ok("big") + `,"cwd":"` + strings.Repeat("a", gate.MaxRequestBytes) + `"}`, "big", "larger than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := b.in(t)
			run := b.exec(c.in)
			run.wantRejected(t, c.want)
			if c.file != "" {
				mustNotExist(t, filepath.Join(b.ws, c.file))
			}
		})
	}
	// The control: the well-formed request does create its file.
	t.Run("well-formed", func(t *testing.T) {
		b := b.in(t)
		b.exec(`{`+ok("good")+`}`).wantExited(t, 0)
		if _, err := os.Stat(filepath.Join(b.ws, "good")); err != nil {
			t.Errorf("the well-formed request did not run: %v", err)
		}
	})
	t.Run("no stdin", func(t *testing.T) {
		b := b.in(t)
		// /dev/null: end of file at once.
		b.exec(nil).wantRejected(t, "request is empty")
	})
}

// vmRSS returns the VmRSS of pid in bytes, or -1.
func vmRSS(pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return -1
			}
			return kb << 10
		}
	}
	return -1
}

// TestExecHugeOutput: a command printing 1 GiB gets the tail only, with the
// truncation notice, and sbx's memory stays bounded while it streams.
func TestExecHugeOutput(t *testing.T) {
	b := newBox(t)
	const maxRSS = 100 << 20
	script := `head -c 1073741824 /dev/zero | tr '\0' a; printf '\nEND\n'`
	p := b.startExec(b.req([]string{"sh", "-c", script}, append([]any{"timeoutMs", 60000}, shell...)...), opts{})
	pid := p.cmd.Process.Pid
	var peak int64
	samples := 0
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if rss := vmRSS(pid); rss > 0 {
				samples++
				peak = max(peak, rss)
			}
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	r := p.wait()
	close(done)
	<-sampled
	run := b.checkExec(r, p)
	run.wantExited(t, 0)
	out := run.res.Output
	if !run.res.Truncated || len(out) > gate.OutputBudget || !strings.HasPrefix(out, gate.TruncationNotice+"\n") ||
		!strings.HasSuffix(out, "aaaa\nEND\n") || strings.Trim(out[len(gate.TruncationNotice)+1:len(out)-5], "a") != "" {
		t.Errorf("want the truncation notice, then a's and END, within %d bytes; got %d bytes, truncated %v: %.200q...%q",
			gate.OutputBudget, len(out), run.res.Truncated, out, out[max(0, len(out)-50):])
	}
	if gate.TruncationNotice != "[Output truncated: showing tail only.]" {
		t.Errorf("truncation notice %q", gate.TruncationNotice)
	}
	t.Logf("1 GiB of output: %v, peak VmRSS of sbx %d KiB over %d samples", run.elapsed, peak>>10, samples)
	if samples < 3 {
		t.Errorf("only %d RSS samples of sbx: cannot tell its memory use", samples)
	}
	if peak > maxRSS {
		t.Errorf("peak VmRSS of sbx %d MiB while streaming 1 GiB, want < %d MiB", peak>>20, maxRSS>>20)
	}
}

// TestExecOutputShaping: output is stdout then stderr (concatenated, not in
// time order), terminal escapes are stripped, CR LF and lone CR become LF,
// and other control and format characters become U+FFFD.
func TestExecOutputShaping(t *testing.T) {
	b := newBox(t)
	// stderr is written first and still comes last.
	prog := `import sys, time
sys.stderr.buffer.write(b"err\x1b[1m bold\x1b[0m\r\n"); sys.stderr.flush()
time.sleep(0.1)
sys.stdout.buffer.write(b"\x1b[31mred\x1b[0m plain\r\ncr\rlone\n\x1b]0;title\x07osc\nctl\x01 bidi\xe2\x80\xae tab\t\xffend\n"); sys.stdout.flush()
`
	run := b.exec(b.req([]string{"python3", "-c", prog}))
	run.wantExited(t, 0)
	const want = "red plain\ncr\nlone\nosc\nctl\ufffd bidi\ufffd tab\t\ufffdend\nerr bold\n"
	if run.res.Output != want {
		t.Errorf("output\n%q\nwant\n%q", run.res.Output, want)
	}
	// The control: the raw bytes do carry what was removed.
	raw := b.host(opts{}, "python3", "-c", prog)
	if !strings.Contains(raw.stdout, "\x1b[31m") || !strings.Contains(raw.stdout, "\r\n") || !strings.Contains(raw.stderr, "\x1b[1m") {
		t.Errorf("the program does not print escapes and CR LF on the host: %v", raw)
	}
}

// TestExecViolations: an operation the sandbox denies is reported in the
// result, with the tier that denied it; the same operation works on the
// host.
func TestExecViolations(t *testing.T) {
	b := newBox(t)
	const prog = "import socket; socket.socket()"
	if r := b.host(opts{}, "python3", "-c", prog); r.code != 0 {
		t.Fatalf("control: socket() fails on the host too: %v", r)
	}
	run := b.exec(b.req([]string{"python3", "-c", prog}))
	if run.res.Status != gate.StatusExited || run.res.ExitCode == nil || *run.res.ExitCode == 0 ||
		!strings.Contains(run.res.Output, "Operation not permitted") {
		t.Errorf("socket() in the sandbox: want a non-zero exit with EPERM; got %s", run.stdout)
	}
	needRootTier(t, "bpf-report")
	if len(run.res.Violations) != 1 {
		t.Fatalf("want one violation, got %d: %s", len(run.res.Violations), run.stdout)
	}
	v := run.res.Violations[0]
	if v.Op != "socket" || v.Errno != "EPERM" || v.Tier != "bpf" || v.Comm != "python3" || !strings.Contains(v.Target, "AF_INET") {
		t.Errorf("violation %+v, want op socket, errno EPERM, tier bpf, comm python3, target AF_INET...", v)
	}
	if v.Pid <= 0 || v.Time.IsZero() || time.Since(v.Time) > time.Minute || time.Until(v.Time) > time.Minute {
		t.Errorf("violation pid %d, time %v: want a real pid and the time of the run", v.Pid, v.Time)
	}
}

// TestExecRequestLimits: the boundaries of the command's size.
func TestExecRequestLimits(t *testing.T) {
	b := newBox(t)
	echo := func(n int) []string {
		c := []string{"echo"}
		for i := 1; i < n; i++ {
			c = append(c, strconv.Itoa(i))
		}
		return c
	}
	t.Run("128 args", func(t *testing.T) {
		b := b.in(t)
		c := echo(128)
		run := b.exec(b.req(c))
		run.wantExited(t, 0)
		if want := strings.Join(c[1:], " ") + "\n"; run.res.Output != want {
			t.Errorf("output %q, want %q", run.res.Output, want)
		}
	})
	t.Run("129 args", func(t *testing.T) {
		b := b.in(t)
		b.exec(b.req(echo(129))).wantRejected(t, "128", "129")
	})
	t.Run("16384 bytes", func(t *testing.T) {
		b := b.in(t)
		run := b.exec(b.req([]string{"echo", strings.Repeat("a", 16384)}))
		run.wantExited(t, 0)
		// 16,385 bytes of output: the tail.
		if !run.res.Truncated || !strings.HasSuffix(run.res.Output, "aaaa\n") {
			t.Errorf("want the truncated tail of the a's; got %d bytes, truncated %v", len(run.res.Output), run.res.Truncated)
		}
	})
	t.Run("16385 bytes", func(t *testing.T) {
		b := b.in(t)
		b.exec(b.req([]string{"echo", strings.Repeat("a", 16385)})).wantRejected(t, "command[1]", "16385", "16384")
	})
	t.Run("16384 bytes multi-byte", func(t *testing.T) {
		b := b.in(t)
		// 5461 × 3 bytes + 1 = 16,384 bytes.
		b.exec(b.req([]string{"true", strings.Repeat("€", 5461) + "a"})).wantExited(t, 0)
		b.exec(b.req([]string{"true", strings.Repeat("€", 5461) + "ab"})).wantRejected(t, "16385")
	})
	t.Run("total over 128 KiB", func(t *testing.T) {
		b := b.in(t)
		c := []string{"true"}
		for range 8 {
			c = append(c, strings.Repeat("a", 16384))
		}
		b.exec(b.req(c)).wantRejected(t, "131076", "131072")
	})
	t.Run("empty arg", func(t *testing.T) {
		b := b.in(t)
		b.exec(b.req([]string{"echo", ""})).wantRejected(t, "command[1] is empty")
	})
	t.Run("no args", func(t *testing.T) {
		b := b.in(t)
		b.exec(b.req([]string{})).wantRejected(t, "command")
	})
}

// TestExecUsageErrors: when no result can be written, sbx exec exits 125
// with one "sbx: " line on stderr and nothing on stdout.
func TestExecUsageErrors(t *testing.T) {
	b := newBox(t)
	missing := filepath.Join(b.tempDir(), "missing.json")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"missing request file", []string{"exec", "--request", missing}, missing},
		{"request file is a directory", []string{"exec", "--request", b.tempDir()}, "request"},
		{"positional argument", []string{"exec", "ls"}, `"ls"`},
		{"unknown flag", []string{"exec", "--bogus"}, "bogus"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := b.in(t)
			p := b.start(opts{stdin: strings.NewReader(`{"command":["true"],"workspace":"` + b.ws + `"}`)}, c.args...)
			r := p.wait()
			if r.code != exitSbxError || r.stdout != "" {
				t.Errorf("want exit %d and no stdout\n%v", exitSbxError, r)
			}
			if ls := lines(r.stderr); len(ls) != 1 || !strings.HasPrefix(ls[0], "sbx: ") || !strings.Contains(ls[0], c.want) {
				t.Errorf("want one %q line on stderr mentioning %q; got %q", "sbx: ", c.want, r.stderr)
			}
			if ids, _ := runs.ids(p.cmd.Process.Pid, p.start, 100*time.Millisecond); len(ids) != 0 {
				t.Errorf("sandbox(es) %v created", ids)
			}
		})
	}
}

// TestExecHelp: sbx exec --help exits 0 and documents every key of the
// request and of the result.
func TestExecHelp(t *testing.T) {
	b := newBox(t)
	var req, res struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(gate.RequestSchema, &req); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(gate.ResultSchema, &res); err != nil {
		t.Fatal(err)
	}
	if len(req.Properties) < 8 {
		t.Fatalf("request schema has only %d keys", len(req.Properties))
	}
	for _, flag := range []string{"--help", "-h"} {
		t.Run(flag, func(t *testing.T) {
			b := b.in(t)
			r := b.sbx(opts{}, "exec", flag)
			if r.code != 0 || r.stdout == "" {
				t.Fatalf("sbx exec %s: want exit 0 and the usage\n%v", flag, r)
			}
			for _, doc := range []struct {
				what string
				keys map[string]json.RawMessage
			}{{"request", req.Properties}, {"result", res.Properties}} {
				for k := range doc.keys {
					if !strings.Contains(r.stdout, `"`+k+`"`) {
						t.Errorf("sbx exec %s does not document %s key %q", flag, doc.what, k)
					}
				}
			}
			for _, s := range []string{"--request", "512 MiB", "120000", "12,000", "cancelled", "125"} {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("sbx exec %s does not mention %q", flag, s)
				}
			}
		})
	}
}
