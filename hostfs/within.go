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

// Under is Within for a root that may carry a trailing slash ("/a/" as
// "/a"; "/" stays "/").
func Under(p, root string) bool {
	if r := strings.TrimSuffix(root, "/"); r != "" {
		root = r
	}
	return Within(p, root)
}
