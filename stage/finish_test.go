package stage

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

var past = time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)

// aged writes a host file with an old mtime, so that an untouched file is
// recognisable by its mtime.
func (e *env) aged(rel, content string) string {
	e.t.Helper()
	p := e.write(rel, content)
	if err := os.Chtimes(p, past, past); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// sandboxWrite plays the agent: it writes the staged file behind the
// rewritten argument in.
func (e *env) sandboxWrite(in, content string) {
	e.t.Helper()
	p := e.hostOf(in)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) finish(p *Plan) {
	e.t.Helper()
	if err := p.Finish(); err != nil {
		e.t.Fatalf("Finish: %v (warnings %q)", err, e.warnings.String())
	}
	if e.staged() {
		e.t.Errorf("run dir left: %q", listTree(e.runDir()))
	}
}

func noTemps(t *testing.T, dir string) {
	t.Helper()
	for _, n := range listTree(dir) {
		if strings.Contains(n, ".sbx-tmp-") {
			t.Errorf("temp file left: %s", n)
		}
	}
}

func TestCopyBackUnchanged(t *testing.T) {
	e := newEnv(t)
	s := e.aged("allowed/s.jsonl", "one\n")
	ino := inode(t, s)
	p := e.prepare("pi", "--session", s)
	e.finish(p)
	fi, _ := os.Stat(s)
	if read(t, s) != "one\n" || !fi.ModTime().Equal(past) || inode(t, s) != ino {
		t.Errorf("host file touched: mtime %v inode %d->%d", fi.ModTime(), ino, inode(t, s))
	}
	if e.warnings.Len() != 0 {
		t.Errorf("warnings %q", e.warnings.String())
	}
}

func TestCopyBackChanged(t *testing.T) {
	e := newEnv(t)
	s := e.aged("allowed/s.jsonl", "one\n")
	if err := os.Chmod(s, 0o640); err != nil {
		t.Fatal(err)
	}
	ino := inode(t, s)
	p := e.prepare("pi", "--session", s)
	e.sandboxWrite(p.Argv()[2], "one\ntwo\n")
	e.finish(p)
	if got := read(t, s); got != "one\ntwo\n" {
		t.Errorf("host %q", got)
	}
	fi, _ := os.Stat(s)
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640 kept", fi.Mode().Perm())
	}
	if inode(t, s) == ino {
		t.Error("host file rewritten in place, not replaced by rename")
	}
	noTemps(t, e.allowed)
	if e.warnings.Len() != 0 {
		t.Errorf("warnings %q", e.warnings.String())
	}
}

func TestCopyBackConflict(t *testing.T) {
	for _, tc := range []struct {
		name, what string
		host       func(p string)
		hostWant   string
	}{
		{"content changed", "changed", func(p string) { os.WriteFile(p, []byte("host edit\n"), 0o644) }, "host edit\n"},
		{"only touched", "changed", func(p string) { os.Chtimes(p, time.Now(), time.Now()) }, "one\n"},
		{"removed", "was removed", func(p string) { os.Remove(p) }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			s := e.aged("allowed/s.jsonl", "one\n")
			p := e.prepare("pi", "--session", s)
			e.sandboxWrite(p.Argv()[2], "one\nsandbox\n")
			tc.host(s)
			e.finish(p)
			if tc.hostWant == "" {
				if exists(s) {
					t.Error("removed host file was resurrected")
				}
			} else if got := read(t, s); got != tc.hostWant {
				t.Errorf("host %q, want %q", got, tc.hostWant)
			}
			conflict := filepath.Join(e.allowed, "s.sbx-conflict-"+testRun+".jsonl")
			if got := read(t, conflict); got != "one\nsandbox\n" {
				t.Errorf("conflict copy %q", got)
			}
			want := "sbx: " + s + " " + tc.what + " on the host during the run; kept it, the sandbox's version is " + conflict + "\n"
			if e.warnings.String() != want {
				t.Errorf("warnings\n got %q\nwant %q", e.warnings.String(), want)
			}
			noTemps(t, e.allowed)
		})
	}
}

func TestCopyBackResolvedPath(t *testing.T) {
	// The anchor wrote back to the raw argument; here "~/..." and a
	// symlinked path both land on the resolved file.
	e := newEnv(t)
	real := e.aged("home/.pi/agent/sessions/--w--/s.jsonl", "a\n")
	link := filepath.Join(e.allowed, "link.jsonl")
	if err := os.Symlink(e.aged("allowed/real/l.jsonl", "b\n"), link); err != nil {
		t.Fatal(err)
	}
	p := e.prepare("pi", "--session", "~/.pi/agent/sessions/--w--/s.jsonl", "--fork", "../allowed/link.jsonl")
	argv := p.Argv()
	if argv[2] != inside("session/s.jsonl") || argv[4] != inside("fork/l.jsonl") {
		t.Fatalf("argv %q", argv)
	}
	e.sandboxWrite(argv[2], "a\nA\n")
	e.sandboxWrite(argv[4], "b\nB\n")
	e.finish(p)
	if read(t, real) != "a\nA\n" || read(t, filepath.Join(e.allowed, "real/l.jsonl")) != "b\nB\n" {
		t.Errorf("resolved files: %q %q", read(t, real), read(t, filepath.Join(e.allowed, "real/l.jsonl")))
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the symlink was replaced")
	}
	if exists(filepath.Join(e.cwd, "~")) {
		t.Error("a literal ~ directory was created")
	}
}

// TestCopyBackOnlyTheStagedFile: files the sandbox creates beside a staged
// session never reach the host (a run could otherwise plant .envrc or a
// Makefile next to it), and existing ones are left alone.
func TestCopyBackOnlyTheStagedFile(t *testing.T) {
	e := newEnv(t)
	s := e.aged("allowed/sessions/s.jsonl", "s\n")
	e.aged("allowed/sessions/taken.jsonl", "host\n")
	p := e.prepare("pi", "--session", s)
	dir := filepath.Dir(e.hostOf(p.Argv()[2]))
	for _, n := range []string{"new.jsonl", "taken.jsonl", ".envrc", "Makefile"} {
		os.WriteFile(filepath.Join(dir, n), []byte("sandbox\n"), 0o600)
	}
	e.sandboxWrite(p.Argv()[2], "s\nS\n")
	e.finish(p)
	if read(t, s) != "s\nS\n" {
		t.Errorf("the staged session did not come back: %q", read(t, s))
	}
	for _, n := range []string{"new.jsonl", ".envrc", "Makefile", "taken.sbx-conflict-" + testRun + ".jsonl"} {
		if exists(filepath.Join(e.allowed, "sessions", n)) {
			t.Errorf("%s beside the session came back", n)
		}
	}
	if read(t, filepath.Join(e.allowed, "sessions/taken.jsonl")) != "host\n" {
		t.Error("existing host file changed")
	}
	if w := e.warnings.String(); !strings.Contains(w, "ignoring 4 other entries") {
		t.Errorf("warnings %q", w)
	}
}

func TestCopyBackNewSessionFile(t *testing.T) {
	e := newEnv(t)
	s := filepath.Join(e.allowed, "fresh.jsonl")
	p := e.prepare("pi", "--session", s)
	e.sandboxWrite(p.Argv()[2], "{}\n")
	e.finish(p)
	if read(t, s) != "{}\n" {
		t.Error("new session not created on the host")
	}
}

func TestCopyBackSessionDir(t *testing.T) {
	e := newEnv(t)
	a := e.aged("allowed/sd/a.jsonl", "a\n")
	b := e.aged("allowed/sd/b.jsonl", "b\n")
	p := e.prepare("pi", "--session-dir", filepath.Join(e.allowed, "sd"))
	in := e.hostOf(p.Argv()[2])
	os.WriteFile(filepath.Join(in, "a.jsonl"), []byte("a\nA\n"), 0o600)
	os.Remove(filepath.Join(in, "b.jsonl"))
	os.MkdirAll(filepath.Join(in, "--w--"), 0o700)
	os.WriteFile(filepath.Join(in, "--w--/c.jsonl"), []byte("c\n"), 0o600)
	e.finish(p)
	if read(t, a) != "a\nA\n" || read(t, b) != "b\n" || read(t, filepath.Join(e.allowed, "sd/--w--/c.jsonl")) != "c\n" {
		t.Errorf("session dir: %q", listTree(filepath.Join(e.allowed, "sd")))
	}
}

func TestCopyBackNewSessionDir(t *testing.T) {
	e := newEnv(t)
	sd := filepath.Join(e.allowed, "sessions")
	p := e.prepare("pi", "--session-dir", sd)
	e.finish(p)
	if exists(sd) {
		t.Error("empty session dir created on the host")
	}
	p = e.prepare("pi", "--session-dir", sd)
	e.sandboxWrite(p.Argv()[2]+"/x.jsonl", "x\n")
	e.finish(p)
	if read(t, filepath.Join(sd, "x.jsonl")) != "x\n" {
		t.Error("session not copied back")
	}
	if fi, _ := os.Stat(sd); fi.Mode().Perm() != 0o700 {
		t.Errorf("new host dir mode %v", fi.Mode().Perm())
	}
}

func TestCopyBackExportOutput(t *testing.T) {
	e := newEnv(t)
	in := e.write("allowed/s.jsonl", "s")
	out := filepath.Join(e.allowed, "out.html")
	p := e.prepare("pi", "--export", in, out)
	e.finish(p)
	if exists(out) {
		t.Error("output created although pi wrote nothing")
	}
	p = e.prepare("pi", "--export", in, out)
	e.sandboxWrite(p.Argv()[3], "<html>")
	e.finish(p)
	if read(t, out) != "<html>" {
		t.Error("export output not copied back")
	}
	// The host created the output meanwhile: keep both.
	os.Remove(out)
	p = e.prepare("pi", "--export", in, out)
	e.sandboxWrite(p.Argv()[3], "<sandbox>")
	os.WriteFile(out, []byte("<host>"), 0o644)
	e.finish(p)
	if read(t, out) != "<host>" || read(t, filepath.Join(e.allowed, "out.sbx-conflict-"+testRun+".html")) != "<sandbox>" {
		t.Error("conflicting output not kept beside")
	}
}

func TestReadOnlyValuesNeverWrittenBack(t *testing.T) {
	e := newEnv(t)
	ext := e.aged("allowed/ext.mjs", "ext")
	fork := e.aged("allowed/f.jsonl", "f\n")
	p := e.prepare("pi", "-e", ext, "--fork", fork)
	e.sandboxWrite(p.Argv()[2], "tampered")
	e.finish(p)
	if read(t, ext) != "ext" || read(t, fork) != "f\n" {
		t.Error("host file changed")
	}
	if fi, _ := os.Stat(fork); !fi.ModTime().Equal(past) {
		t.Error("unchanged --fork source touched")
	}
}

func TestCopyBackRefusesSandboxSymlinks(t *testing.T) {
	e := newEnv(t)
	secret := e.write("outside/secret", "SECRET")
	s := e.aged("allowed/s.jsonl", "s\n")
	p := e.prepare("pi", "--session", s)
	staged := e.hostOf(p.Argv()[2])
	os.Remove(staged)
	if err := os.Symlink(secret, staged); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(filepath.Dir(staged), "x.jsonl")); err != nil {
		t.Fatal(err)
	}
	e.finish(p)
	if read(t, s) != "s\n" || exists(filepath.Join(e.allowed, "x.jsonl")) {
		t.Error("a symlink planted in the staging dir was followed")
	}
	for _, n := range listTree(e.allowed) {
		if strings.Contains(n, "conflict") {
			t.Errorf("unexpected %s", n)
		}
	}
	if w := e.warnings.String(); strings.Count(w, "not a regular file") != 1 || !strings.Contains(w, "ignoring 1 other entries") {
		t.Errorf("warnings %q", w)
	}
}

func TestCopyBackRefusesEscapingStagingDir(t *testing.T) {
	// The run dir is replaced with a symlink to a host directory (no
	// sandbox can reach it; the check holds anyway): Finish must neither
	// read from nor delete through it.
	e := newEnv(t)
	victim := e.mkdir("outside/victim")
	os.WriteFile(filepath.Join(victim, "s.jsonl"), []byte("victim\n"), 0o600)
	s := e.aged("allowed/s.jsonl", "s\n")
	p := e.prepare("pi", "--session", s)
	if err := os.RemoveAll(e.runDir()); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, e.runDir()); err != nil {
		t.Fatal(err)
	}
	if err := p.Finish(); !errors.Is(err, errGivenUp) {
		t.Errorf("Finish through a replaced run dir: %v, want it given up", err)
	}
	if read(t, s) != "s\n" {
		t.Error("host session overwritten through the planted symlink")
	}
	if read(t, filepath.Join(victim, "s.jsonl")) != "victim\n" {
		t.Error("files deleted through the planted symlink")
	}
	if !strings.Contains(e.warnings.String(), "giving up the copy-back of run "+testRun+": what the sandbox wrote is lost") {
		t.Errorf("warnings %q", e.warnings.String())
	}
}

func TestFinishIdempotentAndRetry(t *testing.T) {
	e := newEnv(t)
	s := e.aged("allowed/d/s.jsonl", "s\n")
	p := e.prepare("pi", "--session", s)
	e.sandboxWrite(p.Argv()[2], "s\nS\n")
	// The host directory vanished: Finish fails and keeps everything.
	if err := os.Rename(filepath.Join(e.allowed, "d"), filepath.Join(e.allowed, "d.moved")); err != nil {
		t.Fatal(err)
	}
	if err := p.Finish(); err == nil {
		t.Fatal("Finish succeeded without the host directory")
	}
	if !e.staged() || !exists(manifestPath(e.state, testRun)) || p.RunDir() == "" {
		t.Fatal("a failed Finish removed the staging dir or manifest")
	}
	if !strings.Contains(e.warnings.String(), "keeping the staged files of run "+testRun) {
		t.Errorf("warnings %q", e.warnings.String())
	}
	os.Rename(filepath.Join(e.allowed, "d.moved"), filepath.Join(e.allowed, "d"))
	e.finish(p)
	if read(t, s) != "s\nS\n" {
		t.Error("retry did not copy back")
	}
	if err := p.Finish(); err != nil || p.RunDir() != "" {
		t.Errorf("third Finish: %v", err)
	}
	var nilPlan *Plan
	if err := nilPlan.Finish(); err != nil {
		t.Error(err)
	}
}

func TestFinishAfterSandboxRemovedStaging(t *testing.T) {
	e := newEnv(t)
	s := e.aged("allowed/s.jsonl", "s\n")
	p := e.prepare("pi", "--session", s, "-e", e.write("work/x.mjs", "x"))
	os.RemoveAll(filepath.Join(e.runDir(), "session"))
	e.finish(p)
	if !strings.Contains(e.warnings.String(), "the staged copy was removed inside the sandbox") || read(t, s) != "s\n" {
		t.Errorf("warnings %q", e.warnings.String())
	}
	p = e.prepare("pi", "--session", s)
	os.RemoveAll(e.runDir())
	e.finish(p)
	if !strings.Contains(e.warnings.String(), "is gone; nothing to copy back") {
		t.Errorf("warnings %q", e.warnings.String())
	}
	if ents, _ := os.ReadDir(e.state); len(ents) != 0 {
		t.Errorf("state left: %v", ents)
	}
}

func TestCopyBackRetryIsIdempotent(t *testing.T) {
	// A Finish interrupted after writing the host file must not turn the
	// retry into a conflict.
	e := newEnv(t)
	s := e.aged("allowed/s.jsonl", "s\n")
	p := e.prepare("pi", "--session", s)
	e.sandboxWrite(p.Argv()[2], "s\nS\n")
	os.WriteFile(s, []byte("s\nS\n"), 0o644) // as if copied back already
	e.finish(p)
	if e.warnings.Len() != 0 || read(t, s) != "s\nS\n" {
		t.Errorf("warnings %q", e.warnings.String())
	}
}

func TestCopyBackIgnoresPlantedFIFO(t *testing.T) {
	e := newEnv(t)
	s := e.aged("allowed/s.jsonl", "s\n")
	p := e.prepare("pi", "--session-dir", filepath.Dir(s))
	if err := syscall.Mkfifo(filepath.Join(e.hostOf(p.Argv()[2]), "pipe.jsonl"), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Finish() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Finish blocked on a FIFO planted in the staging dir")
	}
	if exists(filepath.Join(e.allowed, "pipe.jsonl")) || !strings.Contains(e.warnings.String(), "pipe.jsonl: not a regular file") {
		t.Errorf("warnings %q", e.warnings.String())
	}
}
