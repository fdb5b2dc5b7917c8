package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/sbx-sandbox/sbx/hostfs"
	"github.com/sbx-sandbox/sbx/policysrc"
	"github.com/sbx-sandbox/sbx/runner"
	"github.com/sbx-sandbox/sbx/settings"
)

// The policy inputs of a run (the config file, settings files, the paths
// a profile names) are read with the invoking user's rights, and each is
// asked whether a sandbox could have written it (package policysrc): such
// a file may only tighten.

// stateDir is the state directory the run will use (see runner.Options).
func stateDir() string {
	if runner.Rootless() {
		return runner.UserStateDir(os.LookupEnv)
	}
	return runner.DefaultStateDir
}

// sbxHomes are the directories that hold sbx's homes of the invoking
// user: every run's $HOME, writable by its sandbox.
func (e *profileEnv) sbxHomes() []string {
	var out []string
	if d := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(d) && os.Getenv("SUDO_UID") == "" {
		out = append(out, filepath.Join(d, "sbx"))
	}
	if filepath.IsAbs(e.home) {
		out = append(out, filepath.Join(e.home, ".local", "share", "sbx"))
	}
	return out
}

// checker returns the trust checker of a run whose writable paths (but
// the workspace) are rw and whose --home is home ("" or "tmp": sbx's).
// It opens the paths as the invoking user.
func (e *profileEnv) checker(rw []string, home string) (policysrc.Checker, error) {
	c := policysrc.Checker{UID: e.cred.UID}
	grants, err := policysrc.Load(stateDir())
	if err != nil {
		return c, err
	}
	c.Grants = grants
	err = e.cred.Do(func() error {
		add := func(what, p string) {
			if r, ok := policysrc.NewRoot(what, p); ok {
				c.Roots = append(c.Roots, r)
			}
		}
		if e.workspace != "" {
			add("the workspace", e.workspace)
		}
		for _, h := range e.sbxHomes() {
			add("sbx's homes", h)
		}
		if home != "" && home != runner.HomeTmp {
			add("--home", e.abs(home))
		}
		for _, p := range rw {
			add("the writable path", e.abs(p))
		}
		return nil
	})
	return c, err
}

// policyFile is one settings file as read, with why it may only tighten
// ("" when it may widen).
type policyFile struct {
	pol settings.Policy
	why string
}

// readSettings reads a settings file with c, as the invoking user.
func (e *profileEnv) readSettings(c policysrc.Checker, path string, env settings.Env) (policyFile, error) {
	var out policyFile
	err := e.cred.Do(func() error {
		f, why, err := c.Open(e.abs(path))
		if err != nil {
			return fmt.Errorf("settings %s: %w", path, err)
		}
		defer f.Close()
		out.why = why
		out.pol, err = settings.Read(e.abs(path), f, env)
		return err
	})
	return out, err
}

// present reports whether the path p that a profile names exists, looked
// up as the invoking user with no symlink followed below the home (the
// home's own path may pass through one: it is the user's), and returns
// the path to use. A symlink is left out with one line on stderr: an
// earlier run could have planted it in a directory it could write.
func (e *profileEnv) present(p string) (string, bool) {
	abs := e.abs(p)
	real := abs
	if filepath.IsAbs(e.home) && hostfs.Within(abs, e.home) {
		var rh string
		_ = e.cred.Do(func() error {
			var err error
			rh, err = filepath.EvalSymlinks(e.home)
			return err
		})
		if rh != "" {
			rel, _ := filepath.Rel(e.home, abs)
			real = filepath.Join(rh, rel)
		}
	}
	err := e.cred.Do(func() error {
		f, err := policysrc.OpenNoFollow(real)
		if err == nil {
			f.Close()
		}
		return err
	})
	var sl *policysrc.SymlinkError
	switch {
	case errors.As(err, &sl):
		fmt.Fprintf(e.s.err, "sbx: leaving out %s: %v\n", p, err)
		return "", false
	case err != nil:
		return "", false
	}
	return real, true
}

// mountable returns the --ro or --rw paths a profile or the config names
// as present finds them: a symlink is left out (one line on stderr), a
// path that does not exist is kept as named (the run then says so).
func (e *profileEnv) mountable(paths []string) []string {
	var out []string
	for _, p := range paths {
		if real, ok := e.present(p); ok {
			out = append(out, real)
			continue
		}
		err := e.cred.Do(func() error { _, err := os.Lstat(e.abs(p)); return err })
		if errors.Is(err, fs.ErrNotExist) {
			out = append(out, p) // missing: the run says so
		}
	}
	return out
}

// settleDenials makes the denyRead and denyWrite paths of the settings
// (mask and protect, from the files only) fit what exists, as the
// invoking user: a path that does not exist is no error (pi's defaults
// name ~/.ssh and .env, which a machine may lack). A missing denyRead
// path has nothing to hide now; one created during the run is not
// hidden, which is said on stderr when it would be shown in the sandbox
// (inside the workspace or a writable path). A missing denyWrite path
// inside a writable tree cannot be mounted over, so its nearest existing
// directory strictly inside that tree is kept read-only instead (it
// cannot be created then); when that directory would be the tree itself,
// it is said on stderr that it is not protected.
// With quiet, nothing is said.
func (e *profileEnv) settleDenials(mask, protect, roots []string, quiet bool) (outMask, outProtect []string) {
	say := func(format string, a ...any) {
		if !quiet {
			fmt.Fprintf(e.s.err, format, a...)
		}
	}
	exists := func(p string) bool {
		return e.cred.Do(func() error { _, err := os.Stat(p); return err }) == nil
	}
	resolve := func(p string) string {
		r := p
		_ = e.cred.Do(func() error { r = hostfs.ResolvePrefix(p); return nil })
		return r
	}
	rootOf := func(p string) string {
		p = resolve(p)
		best := ""
		for _, r := range roots {
			if hostfs.Within(p, r) && len(r) > len(best) {
				best = r
			}
		}
		return best
	}
	for _, p := range mask {
		if exists(p) {
			outMask = append(outMask, p)
		} else if rootOf(p) != "" || (e.workspace != "" && hostfs.Within(p, e.workspace)) {
			say("sbx: settings denyRead %s: not there, nothing to hide (a file created there during the run is not hidden)\n", p)
		}
	}
	for _, p := range protect {
		if exists(p) {
			outProtect = append(outProtect, p)
			continue
		}
		root := rootOf(p)
		if root == "" {
			continue // not writable in the sandbox: cannot be created there
		}
		d := filepath.Dir(resolve(p))
		for d != root && hostfs.Within(d, root) && !exists(d) {
			d = filepath.Dir(d)
		}
		if d == root || !hostfs.Within(d, root) {
			say("sbx: settings denyWrite %s: not there, and sbx cannot keep a name that does not exist from being created directly in %s; not protected\n", p, root)
			continue
		}
		if !slices.Contains(outProtect, d) {
			say("sbx: settings denyWrite %s: not there; keeping %s read-only instead, so that it cannot be created\n", p, d)
			outProtect = append(outProtect, d)
		}
	}
	return outMask, outProtect
}
