package hostfs

import "path/filepath"

// ResolvePrefix resolves the symlinks of the longest existing prefix of the
// absolute path p and joins the rest to it, so that a directory not created
// yet (a state dir, a home) is still compared by its real location.
func ResolvePrefix(p string) string {
	p = filepath.Clean(p)
	rest := ""
	for cur := p; ; cur = filepath.Dir(cur) {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		if cur == "/" || cur == "." {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
	}
}
