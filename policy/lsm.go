package policy

import "path"

// LSMKind is how an [LSMRule] grants its path.
type LSMKind int

// The kinds of BPF LSM rule.
const (
	// LSMTree grants the file or directory tree at Path (by inode, on
	// the filesystem it is on).
	LSMTree LSMKind = iota
	// LSMList grants listing the directory Path, not opening below it.
	LSMList
	// LSMFilesystem grants the whole filesystem mounted at Path (the
	// sandbox's own /proc, /tmp, /dev).
	LSMFilesystem
	// LSMDeny refuses the file or directory at Path (by identity), even
	// inside a granted tree: the masks of --mask.
	LSMDeny
)

// String names k as the golden files do.
func (k LSMKind) String() string {
	switch k {
	case LSMTree:
		return "tree"
	case LSMList:
		return "list"
	case LSMFilesystem:
		return "filesystem"
	case LSMDeny:
		return "deny"
	}
	return "LSMKind(?)"
}

// LSMRule is one grant of the BPF LSM file tier, by host path.
type LSMRule struct {
	Kind  LSMKind
	Path  string
	Write bool
}

// LSM compiles p's files for the BPF LSM tier, which checks from outside
// the sandbox and so names everything by host path: the same set as
// [Policy.Landlock], with the home by its host directory and the sandbox's
// own pseudo filesystems (/proc, /tmp, /dev) through root, the path of its
// root as the host sees it (/proc/PID1/root), and the masks of --mask
// refused by identity. The root itself is listed but
// not opened below: "ls /" works as on the Landlock tier, and a file on the
// root filesystem outside the set (the shim) stays refused.
func (p Policy) LSM(root string) []LSMRule {
	f := p.Files
	var rules []LSMRule
	tree := func(path string, write bool) { rules = append(rules, LSMRule{LSMTree, path, write}) }
	for _, d := range f.System {
		tree(d, false)
	}
	for _, d := range f.ReadOnly {
		tree(d, false)
	}
	for _, d := range f.ReadWrite {
		tree(d, true)
	}
	tree(f.Workspace, f.Write)
	tree(f.Home, true)
	for _, d := range f.RunState {
		tree(d, true)
	}
	for _, h := range f.Hidden {
		rules = append(rules, LSMRule{LSMDeny, h, false})
	}
	rules = append(rules,
		LSMRule{LSMList, root, false},
		LSMRule{LSMFilesystem, path.Join(root, "proc"), false},
		LSMRule{LSMFilesystem, path.Join(root, "tmp"), true},
		LSMRule{LSMFilesystem, path.Join(root, "dev"), true},
		LSMRule{LSMFilesystem, path.Join(root, "dev/pts"), true},
		LSMRule{LSMFilesystem, path.Join(root, "dev/shm"), true},
	)
	return rules
}
