package stage

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sbx-sandbox/sbx/hostfs"

	"github.com/sbx-sandbox/sbx/internal/runid"
)

const (
	// MaxFileSize is the largest file staged (exactly 8 MiB is allowed).
	MaxFileSize = 8 << 20
	// MaxFiles is the number of files staged per run; a directory counts
	// its files, an empty directory or a not-yet-existing output one.
	MaxFiles = 16
	// StagingDir is the directory below the sandbox home holding one
	// directory per run.
	StagingDir = ".sbx-staging"
)

// Options says where things are. Every path must be absolute.
type Options struct {
	// Cwd is the caller's working directory: relative values resolve
	// against it and it is an allowed root.
	Cwd string
	// HostHome is the invoking user's home on the host, for "~" and the
	// agents' default config dirs ("" disables both).
	HostHome string
	// Env looks up the host environment (PI_CODING_AGENT_DIR,
	// CLAUDE_CONFIG_DIR). nil means an empty environment; pass os.Getenv.
	Env func(string) string
	// SandboxHome is the host directory backing HOME inside the sandbox.
	// It must exist when something is staged.
	SandboxHome string
	// SandboxHomeInside is HOME's path inside the sandbox; rewritten
	// arguments point below it.
	SandboxHomeInside string
	// RunDir is the host directory staged files are copied into: private
	// to the run (mode 0700, the invoking user's, outside SandboxHome and
	// every other tree a sandbox can reach), which the caller binds at
	// SandboxHomeInside/.sbx-staging/<RunID> for this run alone, so that a
	// concurrent run of the same home can neither read nor change what is
	// staged. It must exist and be empty; it is opened with sbx's own
	// identity (it may lie in sbx's state dir, which the user cannot
	// search). Finish empties it; the caller removes it.
	RunDir string
	// StateDir holds the run's manifest and lock. It must be host-only (not
	// mounted into the sandbox): a manifest names the host paths copy-back
	// writes to. Prepare refuses a StateDir inside SandboxHome.
	StateDir string
	// RunID names the run's staging dir; ^[A-Za-z0-9._-]+$. "" draws one
	// (runid.New).
	RunID string
	// Roots are the allowed roots; nil means DefaultRoots. Each is resolved
	// (symlinks); missing ones and "/" are dropped.
	Roots []string
	// Table is the agent table; nil means DefaultTable.
	Table Table
	// Warn receives sbx's "sbx: ..." lines (stderr); nil discards them.
	Warn io.Writer
	// Writable are the host trees a sandbox can write (the workspace, which
	// a concurrent run may have writable, --rw paths, the sandbox home), each
	// resolved: a symlink inside one that leads out of it is never followed
	// while staging (see resolveIn).
	Writable []string
	// Throwaway: SandboxHome is the run's own throwaway home; once its
	// copy-back is done (by Finish, or by a later Recover after a kill) the
	// whole home is removed, not only the staging dir.
	Throwaway bool
	// Cred is the invoking user's identity: every source is read, and
	// every staged file written, with it (hostfs.Cred.Do), so that root
	// staging for a user reads only what the user may read and creates
	// only what the user owns. The zero value is root's (no switch).
	Cred hostfs.Cred
}

func (o *Options) normalize() error {
	if !filepath.IsAbs(o.Cwd) {
		return fmt.Errorf("stage: cwd %q is not an absolute path", o.Cwd)
	}
	if o.HostHome != "" && !filepath.IsAbs(o.HostHome) {
		return fmt.Errorf("stage: host home %q is not an absolute path", o.HostHome)
	}
	for _, p := range []struct{ name, v string }{
		{"sandbox home", o.SandboxHome},
		{"sandbox home inside", o.SandboxHomeInside},
		{"state dir", o.StateDir},
		{"run dir", o.RunDir},
	} {
		if !filepath.IsAbs(p.v) {
			return fmt.Errorf("stage: %s %q is not an absolute path", p.name, p.v)
		}
	}
	o.Cwd = filepath.Clean(o.Cwd)
	o.SandboxHome = filepath.Clean(o.SandboxHome)
	o.SandboxHomeInside = path.Clean(o.SandboxHomeInside)
	o.StateDir = filepath.Clean(o.StateDir)
	o.RunDir = filepath.Clean(o.RunDir)
	if o.HostHome != "" {
		o.HostHome = filepath.Clean(o.HostHome)
	}
	if hostfs.Within(o.StateDir, o.SandboxHome) || hostfs.Within(hostfs.ResolvePrefix(o.StateDir), hostfs.ResolvePrefix(o.SandboxHome)) {
		return fmt.Errorf("stage: state dir %s is inside the sandbox home %s (the sandbox could forge manifests)", o.StateDir, o.SandboxHome)
	}
	if hostfs.Within(o.RunDir, o.SandboxHome) || hostfs.Within(hostfs.ResolvePrefix(o.RunDir), hostfs.ResolvePrefix(o.SandboxHome)) {
		return fmt.Errorf("stage: run dir %s is inside the sandbox home %s (other runs could reach it)", o.RunDir, o.SandboxHome)
	}
	if o.RunID == "" {
		id, err := runid.New()
		if err != nil {
			return err
		}
		o.RunID = id
	}
	if !runid.Valid(o.RunID) {
		return fmt.Errorf("stage: invalid run id %q (want ^[A-Za-z0-9._-]+$, not . or ..)", o.RunID)
	}
	if o.Warn == nil {
		o.Warn = io.Discard
	}
	return nil
}

// Plan is the result of Prepare: the rewritten argv and what Finish must
// copy back. Its methods are safe for concurrent use.
type Plan struct {
	mu    sync.Mutex
	argv  []string
	opts  Options
	roots []string

	run   *hostfs.Dir // Options.RunDir, once something is staged
	lock  *os.File    // flock'ed StateDir/<run>.lock
	man   manifest    // what Finish (or Recover) does
	taken map[string]bool
	seen  map[string]string // resolved source -> rewritten value
	count int
	err   error
	done  bool
}

// Prepare scans argv with the agent table (Options.Table), copies every
// host path it may stage into Options.RunDir and
// returns the plan with the rewritten argv. A value that cannot be staged
// (missing, outside the allowed roots, too large, over the file limit, ...)
// is left as it is, with a "sbx: not staging ..." line on Options.Warn.
// Prepare fails only on bad options or a real I/O failure while staging; it
// then removes whatever it created. Nothing is created on disk when nothing
// is staged. The manifest is on disk when Prepare returns, so the program
// may start. Call Finish once the sandboxed program has exited.
func Prepare(argv []string, opts Options) (*Plan, error) {
	if err := opts.normalize(); err != nil {
		return nil, err
	}
	t := opts.Table
	if t == nil {
		t = DefaultTable
	}
	p := &Plan{opts: opts, taken: map[string]bool{}, seen: map[string]string{}}
	var ag *Agent
	if len(argv) > 0 {
		ag = t.Lookup(argv[0])
	}
	if ag == nil {
		p.argv = append([]string(nil), argv...)
		return p, nil
	}
	raw := opts.Roots
	if raw == nil {
		raw = DefaultRoots(ag, opts)
	}
	var dropped []string
	p.roots, dropped = resolveRoots(raw)
	for _, d := range dropped {
		fmt.Fprintf(opts.Warn, "sbx: ignoring allowed root %s: it resolves to /\n", d)
	}
	p.argv = Rewrite(argv, t, p.stage)
	if p.err == nil && p.lock != nil && p.count == 0 {
		p.abort() // every copy was refused half-way: leave nothing behind
	}
	if p.err == nil && p.lock != nil {
		if err := writeManifest(opts.StateDir, &p.man); err != nil {
			p.err = err
		}
	}
	if p.err != nil {
		p.abort()
		return nil, p.err
	}
	return p, nil
}

// Argv returns the rewritten argv; it has the length of Prepare's argv.
func (p *Plan) Argv() []string { return append([]string(nil), p.argv...) }

// RunDir returns Options.RunDir when something was staged there and
// Finish has not completed, else "". The caller binds it at Inside().
func (p *Plan) RunDir() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lock == nil || p.done {
		return ""
	}
	return p.opts.RunDir
}

// Inside is where the run dir appears inside the sandbox (the rewritten
// arguments point below it).
func (p *Plan) Inside() string {
	return path.Join(p.opts.SandboxHomeInside, StagingDir, p.opts.RunID)
}

// Finish copies back what the sandbox wrote to session-like values and
// removes the staging dir, its manifest and lock. Call it on every exit
// path, after the sandboxed program (and everything it started) is gone.
// It is idempotent: after a success further calls do nothing. On failure
// the staging dir and manifest stay and the lock stays held, so a later
// Finish, or Recover in a later process, can complete the copy-back.
func (p *Plan) Finish() error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done || p.lock == nil {
		return nil
	}
	if p.run != nil {
		p.run.Close()
		p.run = nil
	}
	if err := finishRun(p.opts.StateDir, &p.man, p.opts.Warn); err != nil {
		if errors.Is(err, errGivenUp) {
			p.done = true
			p.lock.Close()
		}
		return err
	}
	p.done = true
	p.lock.Close()
	return nil
}

// stage is Rewrite's resolver: it stages one value and returns the
// in-sandbox path.
func (p *Plan) stage(a Arg) (string, bool) {
	if p.err != nil {
		return "", false
	}
	var inside string
	err := p.opts.Cred.Do(func() error {
		var err error
		inside, err = p.stageArg(a)
		return err
	})
	var se *skipError
	switch {
	case errors.As(err, &se):
		fmt.Fprintf(p.opts.Warn, "sbx: not staging %s: %s\n", a, se.reason)
		return "", false
	case err != nil:
		p.err = fmt.Errorf("stage %s: %w", a, err)
		return "", false
	}
	return inside, inside != ""
}

// stageArg returns the in-sandbox path for a, "" to leave a alone
// silently, or an error (*skipError: leave it alone with a warning).
func (p *Plan) stageArg(a Arg) (string, error) {
	v, spec := a.Value, a.Spec
	if v == "" || (spec.SessionRef && !isSessionPath(v)) {
		return "", nil
	}
	if (v == "~" || strings.HasPrefix(v, "~/")) && p.opts.HostHome == "" {
		if spec.Text {
			return "", nil
		}
		return "", skipf("no home directory to expand ~ with")
	}
	abs := absPath(v, p.opts.Cwd, p.opts.HostHome)
	real, err := resolveIn(abs, p.opts.Writable)
	if err != nil {
		var se *skipError
		switch {
		case errors.As(err, &se):
			return "", err
		case spec.Text:
			return "", nil
		case errors.Is(err, fs.ErrNotExist) && spec.Create && spec.CopyBack:
			return p.stageNew(a, abs)
		case errors.Is(err, fs.ErrNotExist):
			return "", skipf("no such file or directory")
		}
		return "", skipf("%v", errors.Unwrap(err))
	}
	fi, err := os.Stat(real)
	if err != nil {
		if spec.Text {
			return "", nil
		}
		return "", skipf("%v", errors.Unwrap(err))
	}
	if fi.IsDir() {
		if !spec.Dirs {
			if spec.Text {
				return "", nil
			}
			return "", skipf("is a directory")
		}
		return p.stageDir(a, abs, real)
	}
	if !fi.Mode().IsRegular() {
		if spec.Text {
			return "", nil
		}
		return "", skipf("not a regular file")
	}
	// The checks, in this order: size, allowed roots, file count.
	if fi.Size() > MaxFileSize {
		return "", skipf("larger than %s", sizeString(MaxFileSize))
	}
	if !under(real, p.roots) {
		return "", skipf("outside the allowed roots")
	}
	key := seenKey(spec, real)
	if inside, ok := p.seen[key]; ok {
		return inside, nil
	}
	if p.count >= MaxFiles {
		return "", skipf("%d files are staged already (the per-run limit)", MaxFiles)
	}
	if err := p.ensureRun(); err != nil {
		return "", err
	}
	// The name as written: a symlink's target may not carry the extension
	// the agent dispatches on.
	base := filepath.Base(abs)
	var rel string
	if spec.CopyBack {
		// A session-like file gets a directory of its own: pi keeps new
		// sessions beside the one it opened, and those come back too.
		// It mirrors the resolved file, so it keeps the resolved name.
		base = filepath.Base(real)
		sub := uniqueName(subdirName(a), p.taken)
		if err := p.run.Mkdir(sub, 0o700); err != nil {
			return "", fmt.Errorf("create staged directory %s: %w", sub, err)
		}
		rel = path.Join(sub, base)
		rec, err := copyIn(real, p.run, rel, MaxFileSize)
		if err != nil {
			_ = p.run.RemoveAll(sub)
			delete(p.taken, sub)
			return "", err
		}
		id, err := dirID(filepath.Dir(real))
		if err != nil {
			_ = p.run.RemoveAll(sub)
			return "", skipf("%v", err)
		}
		p.man.Entries = append(p.man.Entries, entry{
			Arg: a.String(), Staged: sub, Host: filepath.Dir(real), HostID: id, Name: base,
			Files: map[string]record{base: rec},
		})
	} else {
		rel = uniqueName(base, p.taken)
		if _, err := copyIn(real, p.run, rel, MaxFileSize); err != nil {
			delete(p.taken, rel)
			return "", err
		}
	}
	p.count++
	return p.inside(key, rel), nil
}

// stageDir stages a directory value. The roots are checked before the
// directory is walked, so that a wide tree outside them is never read.
func (p *Plan) stageDir(a Arg, abs, real string) (string, error) {
	if !under(real, p.roots) {
		return "", skipf("outside the allowed roots")
	}
	key := seenKey(a.Spec, real)
	if inside, ok := p.seen[key]; ok {
		return inside, nil
	}
	budget := MaxFiles - p.count
	if budget <= 0 {
		return "", skipf("%d files are staged already (the per-run limit)", MaxFiles)
	}
	items, n, err := planTree(real, budget, MaxFileSize)
	if err != nil {
		return "", err
	}
	if err := p.ensureRun(); err != nil {
		return "", err
	}
	name := uniqueName(filepath.Base(abs), p.taken)
	var recs map[string]record
	if a.Spec.CopyBack {
		recs = map[string]record{}
	}
	if err := copyTreeIn(items, p.run, name, MaxFileSize, recs); err != nil {
		_ = p.run.RemoveAll(name)
		delete(p.taken, name)
		return "", err
	}
	if a.Spec.CopyBack {
		id, err := dirID(real)
		if err != nil {
			_ = p.run.RemoveAll(name)
			return "", skipf("%v", err)
		}
		p.man.Entries = append(p.man.Entries, entry{
			Arg: a.String(), Staged: name, Host: real, HostID: id, Recursive: true, Files: recs,
		})
	}
	p.count += max(n, 1)
	return p.inside(key, name), nil
}

// stageNew stages an output that does not exist yet: its parent must exist
// under an allowed root, or is created there (makeParents). A file gets an empty directory of its own (the
// agent creates the file there); a directory (--session-dir) an empty
// directory. Either comes back at Finish if the agent wrote something.
func (p *Plan) stageNew(a Arg, abs string) (string, error) {
	parent, err := resolveIn(filepath.Dir(abs), p.opts.Writable)
	if errors.Is(err, fs.ErrNotExist) {
		parent, err = p.makeParents(filepath.Dir(abs))
	}
	var se *skipError
	if errors.As(err, &se) {
		return "", err
	}
	if err != nil {
		return "", skipf("no such file or directory")
	}
	target := filepath.Join(parent, filepath.Base(abs))
	if _, err := os.Lstat(target); err == nil {
		return "", skipf("a dangling symlink")
	}
	if fi, err := os.Stat(parent); err != nil || !fi.IsDir() {
		return "", skipf("parent is not a directory")
	}
	if !under(target, p.roots) {
		return "", skipf("outside the allowed roots")
	}
	key := seenKey(a.Spec, target)
	if inside, ok := p.seen[key]; ok {
		return inside, nil
	}
	if p.count >= MaxFiles {
		return "", skipf("%d files are staged already (the per-run limit)", MaxFiles)
	}
	parentID, err := dirID(parent)
	if err != nil {
		return "", skipf("%v", err)
	}
	if err := p.ensureRun(); err != nil {
		return "", err
	}
	var rel string
	if a.Spec.Dirs {
		rel = uniqueName(filepath.Base(target), p.taken)
		if err := p.run.Mkdir(rel, 0o700); err != nil {
			return "", fmt.Errorf("create staged directory %s: %w", rel, err)
		}
		p.man.Entries = append(p.man.Entries, entry{
			Arg: a.String(), Staged: rel, Host: target, HostID: parentID, Recursive: true, CreateHost: true,
			Files: map[string]record{},
		})
	} else {
		sub := uniqueName(subdirName(a), p.taken)
		if err := p.run.Mkdir(sub, 0o700); err != nil {
			return "", fmt.Errorf("create staged directory %s: %w", sub, err)
		}
		rel = path.Join(sub, filepath.Base(target))
		p.man.Entries = append(p.man.Entries, entry{
			Arg: a.String(), Staged: sub, Host: parent, HostID: parentID, Name: filepath.Base(target),
			Files: map[string]record{},
		})
	}
	p.count++
	return p.inside(key, rel), nil
}

// maxNewDirs bounds the missing directories made for one output.
const maxNewDirs = 8

// makeParents creates dir, the missing parent of a new output (pi's
// --session ~/.pi/agent/sessions/<new-dir>/s.jsonl), and its missing
// parents, with the user's identity, as the agent would outside a sandbox;
// only inside an allowed root: the nearest existing ancestor is resolved
// (resolveIn) and must lie in one, and the directories are made from that
// root's descriptor, never above it and without following any symlink
// (hostfs.Dir), so that a path swapped meanwhile cannot lead them out. It
// returns dir resolved.
func (p *Plan) makeParents(dir string) (string, error) {
	var missing []string
	cur := dir
	real := ""
	for {
		r, err := resolveIn(cur, p.opts.Writable)
		if err == nil {
			real = r
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if len(missing) == maxNewDirs || cur == "/" {
			return "", skipf("no such file or directory (more than %d missing directories)", maxNewDirs)
		}
		missing = append([]string{filepath.Base(cur)}, missing...)
		cur = filepath.Dir(cur)
	}
	target := filepath.Join(append([]string{real}, missing...)...)
	for _, r := range p.roots {
		if !hostfs.Within(real, r) {
			continue
		}
		rel, err := filepath.Rel(r, target)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			continue
		}
		root, err := hostfs.OpenDir(r, nil)
		if err != nil {
			return "", skipf("%v", err)
		}
		defer root.Close()
		if err := root.MkdirAll(filepath.ToSlash(rel), 0o700); err != nil {
			return "", skipf("create the directory: %v", errors.Unwrap(err))
		}
		return target, nil
	}
	return "", skipf("outside the allowed roots")
}

// seenKey identifies a staged source: the same path given twice for the
// same purpose is staged once.
func seenKey(f Flag, real string) string {
	return fmt.Sprintf("%t|%t|%s", f.CopyBack, f.Dirs, real)
}

func (p *Plan) inside(key, rel string) string {
	v := path.Join(p.opts.SandboxHomeInside, StagingDir, p.opts.RunID, rel)
	p.seen[key] = v
	return v
}

// subdirName names the directory of a session-like file after its flag.
func subdirName(a Arg) string {
	if n := strings.TrimLeft(a.Flag, "-@"); n != "" {
		return n
	}
	return "out"
}

// ensureRun opens, on first use, the run dir (as sbx itself: see
// Options.RunDir) and creates the lock and a first manifest (so that a
// kill from here on leaves something Recover understands). It runs with
// the user's identity (inside Cred.Do): the lock and manifest, in sbx's
// private state dir, are written as sbx itself.
func (p *Plan) ensureRun() error {
	if p.run != nil {
		return nil
	}
	c := p.opts.Cred
	man := manifest{
		Version: manifestVersion, RunID: p.opts.RunID, PID: os.Getpid(),
		Started: time.Now().UTC(), Staging: p.opts.RunDir,
		UID: c.UID, GID: c.GID, Groups: c.Groups, Throwaway: p.opts.Throwaway, Entries: []entry{},
	}
	if p.opts.HostHome != "" {
		if h, err := filepath.EvalSymlinks(p.opts.HostHome); err == nil {
			man.KeepHome = h
		}
	}
	if p.opts.Throwaway {
		home, err := filepath.EvalSymlinks(p.opts.SandboxHome)
		if err != nil {
			return fmt.Errorf("sandbox home: %w", err)
		}
		if man.HomeID, err = dirID(home); err != nil {
			return fmt.Errorf("open sandbox home: %w", err)
		}
		man.SandboxHome = home
	}
	var run *hostfs.Dir
	err := hostfs.AsSelf(func() error {
		lock, err := createLock(p.opts.StateDir, p.opts.RunID)
		if err != nil {
			return err
		}
		if run, err = openRunDir(p.opts.RunDir); err == nil {
			if man.StagingID, err = run.ID(); err == nil {
				err = writeManifest(p.opts.StateDir, &man)
			}
			if err != nil {
				run.Close()
			}
		}
		if err != nil {
			lock.Close()
			os.Remove(lockPath(p.opts.StateDir, p.opts.RunID))
			return err
		}
		p.lock = lock
		return nil
	})
	if err != nil {
		return err
	}
	p.man, p.run = man, run
	return nil
}

// openRunDir opens the run dir, which must be an empty directory.
func openRunDir(p string) (*hostfs.Dir, error) {
	run, err := hostfs.OpenDir(p, nil)
	if err != nil {
		return nil, fmt.Errorf("open run dir: %w", err)
	}
	names, err := run.ReadDir(".")
	if err == nil && len(names) > 0 {
		err = fmt.Errorf("run dir %s is not empty", p)
	}
	if err != nil {
		run.Close()
		return nil, err
	}
	return run, nil
}

// dirID returns the identity of the host directory p (resolved), opened
// without following symlinks.
func dirID(p string) (hostfs.FileID, error) {
	d, err := hostfs.OpenDir(p, nil)
	if err != nil {
		return hostfs.FileID{}, err
	}
	defer d.Close()
	return d.ID()
}

// abort undoes a failed Prepare.
func (p *Plan) abort() {
	if p.run != nil {
		_ = p.opts.Cred.Do(p.run.Empty)
		p.run.Close()
		p.run = nil
	}
	if p.lock == nil {
		return
	}
	os.Remove(manifestPath(p.opts.StateDir, p.opts.RunID))
	os.Remove(lockPath(p.opts.StateDir, p.opts.RunID))
	p.lock.Close()
	p.lock = nil
}
