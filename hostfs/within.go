package hostfs

import "strings"

// Within reports whether the path p is root or lies below it, by name:
// "/a/b" is within "/a", "/ab" is not, and every absolute path is within
// "/". Both must be clean absolute paths (filepath.Clean); Within does not
// resolve symlinks (resolve first, or use [Dir], when the tree can change).
func Within(p, root string) bool {
	if root == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == root || strings.HasPrefix(p, root+"/")
}
