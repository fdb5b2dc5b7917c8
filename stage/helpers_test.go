package stage

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testRun = "0123456789abcdef"

// env is a scratch world: a cwd, a host home, two allowed roots besides
// the cwd, a directory outside every root, the sandbox home (with its
// in-sandbox path) and the host-only state dir.
type env struct {
	t        *testing.T
	base     string
	cwd      string
	home     string
	allowed  string
	outside  string
	sbxHome  string
	run      string // the run dir (Options.RunDir), outside the sandbox home
	state    string
	warnings bytes.Buffer
}

const insideHome = "/home/inside"

func newEnv(t *testing.T) *env {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, base: base}
	e.cwd = e.mkdir("work")
	e.home = e.mkdir("home")
	e.mkdir("home/.pi/agent")
	e.allowed = e.mkdir("allowed")
	e.outside = e.mkdir("outside")
	e.sbxHome = e.mkdir("sbxhome")
	e.state = filepath.Join(base, "state")
	e.run = e.mkdir("runs/" + testRun)
	if err := os.Chmod(e.run, 0o700); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) mkdir(rel string) string {
	e.t.Helper()
	p := filepath.Join(e.base, rel)
	if err := os.MkdirAll(p, 0o755); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// write creates base/rel with content and returns its path.
func (e *env) write(rel, content string) string {
	e.t.Helper()
	p := filepath.Join(e.base, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// opts are the Options of a run with explicit roots: the cwd, "allowed"
// and the pi config tree (home/.pi), never "outside".
func (e *env) opts() Options {
	return Options{
		Cwd:               e.cwd,
		HostHome:          e.home,
		Env:               func(string) string { return "" },
		SandboxHome:       e.sbxHome,
		SandboxHomeInside: insideHome,
		StateDir:          e.state,
		RunDir:            e.run,
		RunID:             testRun,
		Roots:             []string{e.cwd, e.allowed, filepath.Join(e.home, ".pi")},
		Warn:              &e.warnings,
	}
}

func (e *env) prepare(argv ...string) *Plan {
	e.t.Helper()
	p, err := Prepare(argv, e.opts())
	if err != nil {
		e.t.Fatalf("Prepare(%q): %v", argv, err)
	}
	return p
}

// inside is the rewritten path of rel below the run dir.
func inside(rel string) string { return insideHome + "/.sbx-staging/" + testRun + "/" + rel }

// hostOf maps an in-sandbox staged path to its host file.
func (e *env) hostOf(in string) string {
	rel := strings.TrimPrefix(in, insideHome+"/"+StagingDir+"/"+testRun+"/")
	return filepath.Join(e.run, rel)
}

func (e *env) runDir() string { return e.run }

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// listTree lists every path below dir (relative), for diagnostics.
func listTree(dir string) []string {
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != dir {
			r, _ := filepath.Rel(dir, p)
			out = append(out, r)
		}
		return nil
	})
	return out
}

// staged reports whether the run dir holds anything (Finish empties it;
// the caller removes it).
func (e *env) staged() bool {
	ents, err := os.ReadDir(e.run)
	return err == nil && len(ents) > 0
}
