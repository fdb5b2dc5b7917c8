package sandbox

import (
	"os"
	"slices"
	"sort"
)

// Bind is one host path a spec bind-mounts into the sandbox.
type Bind struct {
	Source, Destination string
	Writable            bool
}

// binds are the binds of s's own paths in the order they are mounted
// (before the stable sort by depth of [Spec.config]): the home, the
// workspace, the pins, the protected entries, --ro, --rw, the run's own
// state, resolv.conf.
func (s *Spec) binds() []Bind {
	out := []Bind{
		{s.Home, s.HomeInside, true},
		{s.Workspace, s.Workspace, s.Write},
	}
	// The pins come before the protected entries below them (the sort
	// is by depth), so a pin's own copy of the host's tree is covered by
	// the read-only entries mounted onto it.
	for _, p := range s.Pinned {
		out = append(out, Bind{p, p, true})
	}
	for _, p := range s.Protected {
		out = append(out, Bind{p, p, false})
	}
	for _, p := range s.ReadOnly {
		out = append(out, Bind{p, p, false})
	}
	for _, p := range s.ReadWrite {
		out = append(out, Bind{p, p, true})
	}
	out = append(out, s.RunBinds...)
	if s.ResolvConf != "" {
		if fi, err := os.Lstat("/etc/resolv.conf"); err == nil && fi.Mode().IsRegular() {
			out = append(out, Bind{s.ResolvConf, "/etc/resolv.conf", false})
		}
	}
	return out
}

// Binds returns the binds of s's host paths that the sandbox shows at
// their destination once it is set up, in mount order: of several binds
// to one destination the last, and none whose destination lies in a
// masked path (Hidden, Masked, [MaskedPaths]), which shows the mask. Each
// destination is the source's root inode, on the source's device: what a
// check after the setup compares with the file it checked.
func (s *Spec) Binds() []Bind {
	all := s.binds()
	sort.SliceStable(all, func(i, j int) bool { return depth(all[i].Destination) < depth(all[j].Destination) })
	masked := slices.Concat(MaskedPaths, s.Masked)
	for _, h := range s.Hidden {
		masked = append(masked, h.Path)
	}
	var out []Bind
	for i, b := range all {
		later := slices.ContainsFunc(all[i+1:], func(o Bind) bool { return o.Destination == b.Destination })
		hidden := slices.ContainsFunc(masked, func(m string) bool { return within(b.Destination, m) })
		if !later && !hidden {
			out = append(out, b)
		}
	}
	return out
}

// within reports whether the clean absolute path p is root or below it.
func within(p, root string) bool {
	return p == root || root == "/" || len(p) > len(root) && p[:len(root)] == root && p[len(root)] == '/'
}
