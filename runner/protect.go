package runner

import (
	"os"
	"path/filepath"
	"sort"
)

// ProtectedNames are the workspace entries that stay read-only even with
// --write: files that run later outside the sandbox (git hooks and config,
// direnv, editor and agent settings, shell rc files), through which a
// hostile program could persist. All of .git is protected, not only its
// hooks and config: a program that may write there can rename .git away and
// build one with its own hooks, or point git elsewhere with commondir
// (--rw .git allows commits from inside). Entries with a "*" are globs in
// the workspace root.
var ProtectedNames = []string{
	".git", ".gitmodules", ".sbx*", ".envrc",
	".vscode", ".idea", ".mcp.json",
	".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
	".zshrc", ".zshenv", ".zprofile", ".zlogin", ".config/fish",
}

// protectedPaths returns the existing protected entries of workspace ws
// (symlinks resolved; those resolving outside ws are covered by the rest of
// the sandbox already), minus those the user opened with --rw.
func protectedPaths(ws string, rw []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, name := range ProtectedNames {
		matches, _ := filepath.Glob(filepath.Join(ws, name))
		for _, m := range matches {
			r, err := filepath.EvalSymlinks(m)
			if err != nil || !within(r, ws) || r == ws || seen[r] {
				continue
			}
			if _, err := os.Stat(r); err != nil {
				continue
			}
			opened := false
			for _, p := range rw {
				opened = opened || within(r, p)
			}
			if !opened {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	sort.Strings(out)
	return out
}
