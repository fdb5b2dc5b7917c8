package discover

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/hostfs"
	"github.com/sbx-sandbox/sbx/internal/safetext"
)

// discovery is what discover found for the command.
type discovery struct {
	name   string
	found  string   // host path of the command (unresolved)
	show   []string // resolved paths to show read-only
	bins   []string // directories to put first on the sandbox's PATH
	refuse string   // why show is not shown ("" when it is)
}

// Query is what Find needs to know about the run.
type Query struct {
	// Name is the command, the program's argv[0] (no slash in it).
	Name string
	// Env is the sandbox's environment (its PATH is searched first).
	Env []string
	// Visible are the host directories the sandbox shows at their own
	// path: the system directories, the workspace and the extra mounts.
	Visible []string
	// Cred are the invoking user's rights, which every lookup uses.
	Cred hostfs.Cred
	// UID and Home are the invoking user's (their PATH is read from an
	// ancestor process of UID under sudo; their home is never shown).
	UID  int
	Home string
	// SbxData is where sbx keeps its homes (never shown).
	SbxData string
	// Sudo: sbx runs as root under sudo, whose PATH is its secure_path.
	Sudo bool
	// PathGiven: --env names PATH (no sudo PATH hint then).
	PathGiven bool
	// Off is --no-discover: nothing is shown, the hint still is.
	Off bool
	// CheckShow is the host-path check of an --ro path; an installation
	// it refuses is not shown.
	CheckShow func(p string) error
}

// Result is what Find found.
type Result struct {
	// Env is Query.Env, with the installation's bin first on PATH when
	// it is shown.
	Env []string
	// Show are the host paths to show read-only (none: nothing shown).
	Show []string
	// Note says what is shown, to print once the run cannot be refused.
	Note string
	// NotFound is what to say if the program ends with 127 ("": nothing
	// useful).
	NotFound string
}

// homeMarkers are entries of a home directory: a prefix that holds one is
// a home, not an installation.
var homeMarkers = []string{".ssh", ".gnupg", ".aws", ".config", ".bashrc", ".profile"}

// Find looks q.Name up as the sandbox will and, when it is missing there
// but installed on the host, returns its installation to show read-only
// (and the environment with its bin first on PATH), or the hint to print
// when the run ends with 127.
func Find(q Query) Result {
	name, env := q.Name, q.Env
	res := Result{Env: env}
	sboxPath := envValue(env, "PATH")
	visible := q.Visible
	isVisible := func(dir string) bool {
		for _, v := range visible {
			if hostfs.Under(dir, v) {
				return true
			}
		}
		return false
	}
	var d *discovery
	inside := false
	_ = q.Cred.Do(func() error {
		dirs := filepath.SplitList(sboxPath)
		for _, dir := range dirs {
			if filepath.IsAbs(dir) && isVisible(filepath.Clean(dir)) && isExec(filepath.Join(dir, name)) {
				inside = true
				return nil
			}
		}
		search := q.hostSearchPath(dirs)
		found := lookIn(name, search, isVisible)
		if found == "" {
			return nil
		}
		d = &discovery{name: name, found: found}
		d.show, d.bins = installOf(found)
		if len(d.show) == 0 {
			return nil
		}
		show, bin := d.show[0], d.bins[0]
		// The interpreter of a script must resolve inside too.
		interp := interpreter(found)
		switch {
		case interp == "":
		case filepath.IsAbs(interp):
			if !isVisible(interp) && !hostfs.Under(realPath(interp), show) {
				d.add(installOf(interp))
			}
		case isExec(filepath.Join(bin, interp)):
		default:
			if lookIn(interp, dirs, func(dir string) bool { return !isVisible(dir) }) != "" {
				return nil // on the sandbox's PATH, visible
			}
			if f := lookIn(interp, search, isVisible); f != "" {
				d.add(installOf(f))
			}
		}
		return nil
	})
	if inside {
		return res
	}
	if d == nil {
		res.NotFound = q.notFoundHint(d, env)
		return res
	}
	if len(d.show) == 0 {
		d.refuse = "sbx cannot tell which installation it belongs to"
	}
	for _, s := range d.show {
		if why := q.refuseShow(s); why != "" && d.refuse == "" {
			d.refuse = why
		}
	}
	if d.refuse != "" || q.Off {
		res.NotFound = q.notFoundHint(d, env)
		return res
	}
	res.Show = d.show
	path := strings.Join(append(append([]string{}, d.bins...), sboxPath), ":")
	res.Env = setEnvValue(env, "PATH", path)
	res.Note = fmt.Sprintf("sbx: %s is not in the sandbox but installed at %s: showing %s read-only, %s first on PATH (--no-discover turns this off)\n",
		name, d.found, strings.Join(d.show, " and "), strings.Join(d.bins, ":"))
	return res
}

// notFoundHint says, after the program ended with 127, where the command
// was on the host and how to show it, and under sudo what PATH it was
// looked up on. It is empty when sbx knows nothing useful.
func (q *Query) notFoundHint(d *discovery, env []string) string {
	var b strings.Builder
	if d != nil && (d.refuse != "" || q.Off) {
		flags := ""
		bins := d.bins
		if d.refuse != "" {
			// Never advise showing what sbx refused (a home): the
			// command's own file at most.
			flags, bins = " --ro "+realPath(d.found), []string{filepath.Dir(d.found)}
		} else {
			for _, s := range d.show {
				flags += " --ro " + s
			}
		}
		if len(bins) > 0 {
			flags += " --env PATH=" + strings.Join(bins, ":") + ":\"$PATH\""
		}
		why := "--no-discover"
		if d.refuse != "" {
			why = "sbx does not show it by itself: " + d.refuse
		}
		// The name is the argv's, the paths are found in trees a
		// sandbox may write: escaped.
		fmt.Fprintf(&b, "sbx: %s is installed on the host at %s, which the sandbox does not show (%s)", safetext.Escape(d.name), safetext.Escape(d.found), safetext.Escape(why))
		if flags != "" {
			fmt.Fprintf(&b, "; to show it:%s", safetext.Escape(flags))
		}
		b.WriteString("\n")
	}
	if q.Sudo && !q.PathGiven {
		fmt.Fprintf(&b, "sbx: under sudo, PATH is sudo's secure_path (%s), not yours: run sbx with sudo --preserve-env=PATH, or pass yours with --env PATH=\"$PATH\"\n", envValue(env, "PATH"))
	}
	return b.String()
}

// lookIn returns the first dir/name of dirs that is an executable file,
// skipping relative entries and the directories skip reports.
func lookIn(name string, dirs []string, skip func(dir string) bool) string {
	for _, dir := range dirs {
		if !filepath.IsAbs(dir) || skip(filepath.Clean(dir)) {
			continue
		}
		if p := filepath.Join(dir, name); isExec(p) {
			return p
		}
	}
	return ""
}

// isExec reports whether p is a regular file the caller may execute.
func isExec(p string) bool {
	var st unix.Stat_t
	if unix.Stat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false
	}
	return unix.Faccessat(unix.AT_FDCWD, p, unix.X_OK, unix.AT_EACCESS) == nil
}

// realPath is p with symlinks resolved, or p when that fails.
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// add adds the paths and bin directories of another installation.
func (d *discovery) add(show, bins []string) {
	for _, s := range show {
		if !slices.Contains(d.show, s) {
			d.show = append(d.show, s)
		}
	}
	for _, b := range bins {
		if !slices.Contains(d.bins, b) {
			d.bins = append(d.bins, b)
		}
	}
}

// installOf returns the installation of the command at found (resolved),
// to show read-only, and the directories of it to put on PATH:
//   - a prefix P with found in P/bin and its target inside P, when P is an
//     npm prefix (P/lib/node_modules: nvm's version directories, npm -g
//     --prefix, ~/.npm-global), Bun's home (P/install/global), or a Python
//     venv (P/pyvenv.cfg);
//   - else the command's own directory, plus the package its symlink
//     points into (the top of a node_modules package, a venv, or the
//     target's directory), when that lies elsewhere.
//
// Both nil when found cannot be resolved.
func installOf(found string) (show, bins []string) {
	real, err := filepath.EvalSymlinks(found)
	if err != nil {
		return nil, nil
	}
	dir := realPath(filepath.Dir(found))
	// ~/.local as an npm prefix (prefix=~/.local) also holds every
	// application's data (~/.local/share): only its bin and the package.
	if p := filepath.Dir(dir); filepath.Base(dir) == "bin" && filepath.Base(p) != ".local" {
		marks := []string{"lib/node_modules", "install/global", "pyvenv.cfg"}
		for _, m := range marks {
			if _, err := os.Stat(filepath.Join(p, m)); err == nil && hostfs.Under(real, p) {
				return []string{p}, []string{dir}
			}
		}
	}
	if hostfs.Under(real, dir) {
		return []string{dir}, []string{dir}
	}
	return []string{dir, packageRoot(real)}, []string{dir}
}

// packageRoot is the installation real belongs to: the package directory
// under the last node_modules of its path, the venv holding it, or its
// directory.
func packageRoot(real string) string {
	if i := strings.LastIndex(real, "/node_modules/"); i >= 0 {
		rest := strings.Split(real[i+len("/node_modules/"):], "/")
		n := 1
		if strings.HasPrefix(rest[0], "@") && len(rest) > 2 {
			n = 2
		}
		if len(rest) > n {
			return real[:i+len("/node_modules/")] + strings.Join(rest[:n], "/")
		}
	}
	for d := filepath.Dir(real); d != "/"; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "pyvenv.cfg")); err == nil {
			return d
		}
	}
	return filepath.Dir(real)
}

// interpreter reads the #! line of the file at p: the interpreter's
// absolute path, or for "#!/usr/bin/env [-S] NAME" the name; "" for none.
func interpreter(p string) string {
	// Never blocks (a FIFO on PATH) and reads only a regular file.
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	buf := make([]byte, 256)
	n, _ := io.ReadFull(f, buf)
	line, _, _ := bytes.Cut(buf[:n], []byte("\n"))
	rest, ok := bytes.CutPrefix(line, []byte("#!"))
	if !ok {
		return ""
	}
	fields := strings.Fields(string(rest))
	if len(fields) == 0 {
		return ""
	}
	if filepath.Base(fields[0]) != "env" {
		return fields[0]
	}
	for _, a := range fields[1:] {
		if strings.HasPrefix(a, "-") || strings.Contains(a, "=") {
			continue
		}
		return a
	}
	return ""
}

// refuseShow says why the installation at p may not be shown: it is or
// contains the user's home, looks like a home, holds sbx's homes, or fails
// the checks of every --ro path. "" when it may.
func (q *Query) refuseShow(p string) string {
	home := realPath(q.Home)
	if p == "/" || hostfs.Under(home, p) {
		return p + " is or contains your home directory"
	}
	sbxData := realPath(q.SbxData)
	if hostfs.Under(p, sbxData) || hostfs.Under(sbxData, p) {
		return p + " holds sbx's own homes"
	}
	for _, m := range homeMarkers {
		if _, err := os.Lstat(filepath.Join(p, m)); err == nil {
			return p + " looks like a home directory (it holds " + m + ")"
		}
	}
	if err := q.CheckShow(p); err != nil {
		return err.Error()
	}
	return ""
}

// envValue is the value of k in env ("" when unset).
func envValue(env []string, k string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], k+"="); ok {
			return v
		}
	}
	return ""
}

// setEnvValue sets k in env, in place when it is there.
func setEnvValue(env []string, k, v string) []string {
	for i := range env {
		if strings.HasPrefix(env[i], k+"=") {
			env[i] = k + "=" + v
			return env
		}
	}
	return append(env, k+"="+v)
}
