package stage

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sbx-sandbox/sbx/hostfs"
	"github.com/sbx-sandbox/sbx/internal/sbxtest"
)

// TestCopyBackSessionDirSwappedForSymlink is the attack of issue #13: the
// sandbox (which can write the workspace) replaces the directory holding a
// staged session by a symlink to a directory of its choosing while the run
// lasts. Copy-back must write nothing there.
func TestCopyBackSessionDirSwappedForSymlink(t *testing.T) {
	for _, tc := range []struct {
		name string
		swap func(e *env, sess, target string)
	}{
		{"symlink", func(e *env, sess, target string) {
			must(t, os.Rename(sess, sess+".moved"))
			must(t, os.Symlink(target, sess))
		}},
		{"symlinked ancestor", func(e *env, sess, target string) {
			// allowed/proj/sess: proj becomes a link to a tree with a sess.
			proj := filepath.Dir(sess)
			must(t, os.Rename(proj, proj+".moved"))
			must(t, os.MkdirAll(filepath.Join(target, "sess"), 0o755))
			must(t, os.Symlink(target, proj))
		}},
		{"other directory", func(e *env, sess, target string) {
			must(t, os.Rename(sess, sess+".moved"))
			must(t, os.Mkdir(sess, 0o755))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			s := e.aged("allowed/proj/sess/s.jsonl", "s\n")
			target := e.mkdir("outside/target")
			p := e.prepare("pi", "--session", s)
			e.sandboxWrite(p.Argv()[2], "s\nPLANTED\n")
			tc.swap(e, filepath.Dir(s), target)
			err := p.Finish()
			if err == nil || !errors.Is(err, hostfs.ErrReplaced) && !errors.Is(err, syscall.ELOOP) {
				t.Fatalf("Finish = %v, want a refusal (ELOOP or ErrReplaced)", err)
			}
			for _, n := range listTree(e.outside) {
				if strings.HasSuffix(n, ".jsonl") {
					t.Errorf("copy-back wrote %s outside", n)
				}
			}
			if fi, err := os.Lstat(s); err == nil && fi.Mode().IsRegular() && read(t, s) != "s\n" {
				t.Errorf("the replacement got the sandbox's content")
			}
			// The staged copy is kept for the user to look at.
			if !e.staged() {
				t.Error("the staged copy is gone")
			}
		})
	}
	// The control: without a swap the same session comes back.
	e := newEnv(t)
	s := e.aged("allowed/proj/sess/s.jsonl", "s\n")
	p := e.prepare("pi", "--session", s)
	e.sandboxWrite(p.Argv()[2], "s\nAPPENDED\n")
	e.finish(p)
	if read(t, s) != "s\nAPPENDED\n" {
		t.Fatalf("control: session = %q", read(t, s))
	}
}

// TestCopyBackSizeCaps: a huge (sparse) session is refused by its size
// before it is read, with a warning; a normal one still comes back.
func TestCopyBackSizeCaps(t *testing.T) {
	e := newEnv(t)
	big := e.aged("allowed/big.jsonl", "b\n")
	small := e.aged("allowed/small/s.jsonl", "s\n")
	p := e.prepare("pi", "--session", big, "--fork", small)
	staged := e.hostOf(p.Argv()[2])
	must(t, os.Truncate(staged, 20<<30)) // 20 GiB, sparse
	e.sandboxWrite(p.Argv()[4], "s\nS\n")
	e.finish(p)
	if fi, _ := os.Stat(big); fi.Size() != 2 {
		t.Errorf("the 20 GiB file came back: %d bytes", fi.Size())
	}
	if !strings.Contains(e.warnings.String(), "over the 64 MiB limit per file") {
		t.Errorf("warnings %q", e.warnings.String())
	}
	if read(t, small) != "s\nS\n" {
		t.Errorf("control: %q", read(t, small))
	}
}

// TestCopyBackGivesUp: a copy-back that keeps failing is retried at most
// maxAttempts times in all, then given up with one line; later Recovers
// do not see it again.
func TestCopyBackGivesUp(t *testing.T) {
	e := newEnv(t)
	s := e.aged("allowed/sess/s.jsonl", "s\n")
	p := e.prepare("pi", "--session", s)
	e.sandboxWrite(p.Argv()[2], "s\nS\n")
	sess := filepath.Dir(s)
	must(t, os.Rename(sess, sess+".gone")) // missing: every attempt fails, but the user may bring it back
	if err := p.Finish(); err == nil {
		t.Fatal("first attempt succeeded")
	}
	p.lock.Close() // as if this sbx died: Recover retries
	for i := 2; i <= maxAttempts; i++ {
		e.warnings.Reset()
		err := Recover(e.state, &e.warnings)
		if (err == nil) != (i == maxAttempts) {
			t.Fatalf("Recover, attempt %d: %v (an error until the run is given up)", i, err)
		}
		if !strings.Contains(e.warnings.String(), "completing the copy-back") {
			t.Fatalf("attempt %d did not happen: %q", i, e.warnings.String())
		}
	}
	if !strings.Contains(e.warnings.String(), "giving up the copy-back") {
		t.Fatalf("not given up after %d attempts: %q", maxAttempts, e.warnings.String())
	}
	e.warnings.Reset()
	must(t, Recover(e.state, &e.warnings))
	if e.warnings.Len() != 0 {
		t.Errorf("a given-up run was tried again: %q", e.warnings.String())
	}
	if !e.staged() {
		t.Error("the staged copy of a given-up run is gone")
	}
}

// TestCopyBackGivesUpAtOnce: a host directory replaced since staging
// stays replaced: no retry, one line.
func TestCopyBackGivesUpAtOnce(t *testing.T) {
	e := newEnv(t)
	s := e.aged("allowed/sess/s.jsonl", "s\n")
	p := e.prepare("pi", "--session", s)
	e.sandboxWrite(p.Argv()[2], "s\nS\n")
	sess := filepath.Dir(s)
	must(t, os.Rename(sess, sess+".gone"))
	must(t, os.Mkdir(sess, 0o755))
	if err := p.Finish(); !errors.Is(err, hostfs.ErrReplaced) {
		t.Fatalf("Finish = %v, want ErrReplaced", err)
	}
	if !strings.Contains(e.warnings.String(), "giving up") || exists(manifestPath(e.state, testRun)) {
		t.Errorf("not given up at once: %q", e.warnings.String())
	}
	// What the sandbox wrote is kept in the user's data dir (the run dir
	// is removed by the caller).
	kept := filepath.Join(e.home, ".local/share/sbx/kept", testRun, "session", "s.jsonl")
	if !strings.Contains(e.warnings.String(), "what the sandbox wrote is kept in "+filepath.Dir(filepath.Dir(kept))) || read(t, kept) != "s\nS\n" {
		t.Errorf("the sandbox's version is not kept: %q", e.warnings.String())
	}
}

// TestRecoverDiscardsOldManifest: a manifest of an older format is removed
// with one line, not retried on every run.
func TestRecoverDiscardsOldManifest(t *testing.T) {
	e := newEnv(t)
	must(t, os.MkdirAll(e.state, 0o700))
	must(t, os.WriteFile(manifestPath(e.state, testRun), []byte(`{"version":1,"run_id":"`+testRun+`","sandbox_home":"/x","entries":[]}`), 0o600))
	must(t, Recover(e.state, &e.warnings))
	if !strings.Contains(e.warnings.String(), "another sbx version") || exists(manifestPath(e.state, testRun)) {
		t.Fatalf("warnings %q", e.warnings.String())
	}
	e.warnings.Reset()
	must(t, Recover(e.state, &e.warnings))
	if e.warnings.Len() != 0 {
		t.Errorf("second Recover: %q", e.warnings.String())
	}
}

// TestStagingAsUser: root staging for a user reads only what the user may
// read, and copy-back writes only where the user may write, creating files
// the user owns.
func TestStagingAsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		sbxtest.Skip(t, sbxtest.Root, "needs root to act for another user")
	}
	const uid = 65534
	e := newEnv(t)
	must(t, os.Chmod(e.base, 0o755))
	must(t, os.Chmod(filepath.Dir(e.base), 0o755))
	must(t, os.Chown(e.sbxHome, uid, uid))
	must(t, os.Chown(e.run, uid, uid)) // the caller makes the run dir the user's
	secret := e.write("allowed/secret.md", "SECRET")
	must(t, os.Chmod(secret, 0o600)) // root's, unreadable for the user
	readable := e.write("allowed/ok.md", "ok")
	rootDir := e.mkdir("allowed/rootonly")
	must(t, os.Chmod(rootDir, 0o755))
	s := e.aged("allowed/rootonly/s.jsonl", "s\n")
	must(t, os.Chmod(s, 0o644))
	o := e.opts()
	o.Cred = hostfs.Cred{UID: uid, GID: uid}
	p, err := Prepare([]string{"pi", "-e", secret, "-e", readable, "--session", s}, o)
	if err != nil {
		t.Fatal(err)
	}
	argv := p.Argv()
	if argv[2] != secret {
		t.Errorf("a file the user cannot read was staged: %q", argv[2])
	}
	if argv[4] == readable {
		t.Errorf("control: a readable file was not staged (%s)", e.warnings.String())
	}
	st, err := os.Stat(e.hostOf(argv[4]))
	must(t, err)
	if st.Sys().(*syscall.Stat_t).Uid != uid {
		t.Errorf("staged copy owned by %d, want %d", st.Sys().(*syscall.Stat_t).Uid, uid)
	}
	// The session's directory is root's 0755: the user cannot write it, so
	// neither can copy-back.
	e.sandboxWrite(argv[6], "s\nS\n")
	if err := p.Finish(); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("copy-back into a directory the user cannot write: %v, want EACCES", err)
	}
	if read(t, s) != "s\n" {
		t.Error("copy-back wrote where the user cannot")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestStagingRefusesSymlinkOutOfWritableTree: a symlink planted inside a
// tree a sandbox can write (the workspace) that leads out of it is never
// followed while staging, for an existing session or a new one; one that
// stays inside is (the control).
func TestStagingRefusesSymlinkOutOfWritableTree(t *testing.T) {
	e := newEnv(t)
	target := e.mkdir("allowed/target") // under an allowed root, outside the workspace
	e.write("allowed/target/s.jsonl", "t\n")
	must(t, os.Symlink(target, filepath.Join(e.cwd, "sess")))
	e.mkdir("work/real")
	e.write("work/real/in.jsonl", "in\n")
	must(t, os.Symlink("real", filepath.Join(e.cwd, "inside")))
	o := e.opts()
	o.Writable = []string{e.cwd}
	for _, v := range []string{"sess/s.jsonl", "sess/new.jsonl"} {
		p, err := Prepare([]string{"pi", "--session", v}, o)
		must(t, err)
		if p.Argv()[2] != v {
			t.Errorf("%s through a planted symlink was staged as %s", v, p.Argv()[2])
		}
		must(t, p.Finish())
	}
	if !strings.Contains(e.warnings.String(), "leads out of it") {
		t.Errorf("warnings %q", e.warnings.String())
	}
	p, err := Prepare([]string{"pi", "--session", "inside/in.jsonl"}, o)
	must(t, err)
	if p.Argv()[2] == "inside/in.jsonl" {
		t.Errorf("control: a symlink within the workspace was not followed: %s", e.warnings.String())
	}
	must(t, p.Finish())
}

// TestRecoverThrowawayHome: a run with a throwaway home killed before its
// copy-back: the next Recover brings the session back and then removes the
// whole home; a manifest write cut short (.json.tmp) is removed too.
func TestRecoverThrowawayHome(t *testing.T) {
	e := newEnv(t)
	s := e.aged("allowed/s.jsonl", "s\n")
	o := e.opts()
	o.Throwaway = true
	p, err := Prepare([]string{"pi", "--session", s}, o)
	must(t, err)
	e.sandboxWrite(p.Argv()[2], "s\nS\n")
	p.lock.Close() // killed
	must(t, os.WriteFile(filepath.Join(e.state, "feedfeedfeedfeed.json.tmp"), []byte("{"), 0o600))
	must(t, Recover(e.state, &e.warnings))
	if read(t, s) != "s\nS\n" {
		t.Errorf("session %q", read(t, s))
	}
	if exists(e.sbxHome) {
		t.Error("the throwaway home is still there")
	}
	if exists(filepath.Join(e.state, "feedfeedfeedfeed.json.tmp")) {
		t.Error("the stale manifest temp file is still there")
	}
	// The control: a persistent home stays.
	e2 := newEnv(t)
	s2 := e2.aged("allowed/s.jsonl", "s\n")
	p2 := e2.prepare("pi", "--session", s2)
	p2.lock.Close()
	must(t, Recover(e2.state, &e2.warnings))
	if !exists(e2.sbxHome) {
		t.Error("control: a persistent home was removed")
	}
}

// TestNewSessionDirCreatedAsUser: a new session whose directory does not
// exist yet gets it on the host, made with the user's identity inside the
// allowed root, and its transcript comes back there; one outside the roots
// creates nothing (the control).
func TestNewSessionDirCreatedAsUser(t *testing.T) {
	e := newEnv(t)
	o := e.opts()
	uid, gid := os.Geteuid(), os.Getegid()
	if uid == 0 {
		uid, gid = 65534, 65534
		must(t, os.Chmod(e.base, 0o755))
		must(t, os.Chmod(filepath.Dir(e.base), 0o755))
		for _, d := range []string{e.allowed, e.outside, e.run} {
			must(t, os.Chown(d, uid, gid))
		}
		o.Cred = hostfs.Cred{UID: uid, GID: gid}
	}
	s := filepath.Join(e.allowed, "sessions", "--w--", "s.jsonl")
	out := filepath.Join(e.outside, "sessions", "new")
	p, err := Prepare([]string{"pi", "--session", s, "--session-dir", out}, o)
	must(t, err)
	argv := p.Argv()
	if argv[2] == s {
		t.Fatalf("a new session in a new directory was not staged: %s", e.warnings.String())
	}
	if exists(filepath.Dir(out)) || argv[4] != out {
		t.Errorf("a directory outside the roots was created (%q)", argv[4])
	}
	e.sandboxWrite(argv[2], "turn\n")
	must(t, os.Chown(e.hostOf(argv[2]), uid, gid)) // the program writes as the user
	e.finish(p)
	if read(t, s) != "turn\n" {
		t.Error("the transcript did not come back")
	}
	for _, d := range []string{filepath.Dir(s), filepath.Dir(filepath.Dir(s)), s} {
		fi, err := os.Lstat(d)
		must(t, err)
		if got := fi.Sys().(*syscall.Stat_t).Uid; int(got) != uid {
			t.Errorf("%s owned by %d, want %d", d, got, uid)
		}
	}
}
