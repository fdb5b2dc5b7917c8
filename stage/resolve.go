package stage

import (
	"os"
	"path/filepath"
	"strings"
)

// expandHome expands a leading "~" or "~/" with home; "~user" forms are not
// expanded (they stay relative names). With home == "" p is returned as is.
func expandHome(p, home string) string {
	if home == "" {
		return p
	}
	if p == "~" {
		return home
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return filepath.Join(home, rest)
	}
	return p
}

// absPath makes a value absolute: "~" expansion, then relative to cwd.
func absPath(v, cwd, home string) string {
	p := expandHome(v, home)
	if !filepath.IsAbs(p) {
		p = filepath.Join(cwd, p)
	}
	return filepath.Clean(p)
}

// DefaultRoots returns the allowed roots before resolution: os.TempDir(),
// /tmp, the agent's configuration tree (Agent.ConfigRoot) and the caller's
// working directory. Project-local files under the cwd are deliberate input.
func DefaultRoots(ag *Agent, o Options) []string {
	roots := []string{os.TempDir(), "/tmp"}
	if ag != nil && ag.ConfigRoot != nil {
		env := o.Env
		if env == nil {
			env = func(string) string { return "" }
		}
		if r := ag.ConfigRoot(env, o.HostHome); r != "" {
			if !filepath.IsAbs(r) {
				r = filepath.Join(o.Cwd, r)
			}
			roots = append(roots, r)
		}
	}
	if o.Cwd != "" {
		roots = append(roots, o.Cwd)
	}
	return roots
}

// resolveRoots resolves each root's symlinks and drops the ones that do not
// exist, duplicates, and "/" (which would allow every file).
func resolveRoots(raw []string) (roots, dropped []string) {
	seen := map[string]bool{}
	for _, r := range raw {
		if r == "" || !filepath.IsAbs(r) {
			continue
		}
		real, err := filepath.EvalSymlinks(r)
		if err != nil {
			continue
		}
		if real == "/" {
			dropped = append(dropped, r)
			continue
		}
		if !seen[real] {
			seen[real] = true
			roots = append(roots, real)
		}
	}
	return roots, dropped
}

// under reports whether the resolved path p is one of roots or beneath one.
func under(p string, roots []string) bool {
	for _, r := range roots {
		if p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}

// isSessionPath is pi's test for "<path|id>": a path if it holds "/" or ends
// in ".jsonl".
func isSessionPath(v string) bool {
	return strings.Contains(v, "/") || strings.HasSuffix(v, ".jsonl")
}
