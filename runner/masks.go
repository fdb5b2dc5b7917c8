package runner

import (
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/sbx-sandbox/sbx/protect"
)

// resolveMaskPaths resolves Masks and Protect (symlinks evaluated, each
// must exist). It writes nothing.
func (o *Options) resolveMaskPaths(cwd string) error {
	o.masks, o.protects = nil, nil
	if n := len(o.Masks) + len(o.Protect); n > protect.MaxMasks {
		return fmt.Errorf("%d paths to mask or protect: more than %d (each is a mount); name directories instead of their files", n, protect.MaxMasks)
	}
	for _, set := range []struct {
		flag string
		in   []string
		out  *[]string
	}{{"--mask", o.Masks, &o.masks}, {"--settings denyWrite", o.Protect, &o.protects}} {
		for _, p := range set.in {
			h, err := o.holdPath(set.flag, p, cwd, true)
			if err != nil {
				return err
			}
			r := h.Path
			if !utf8.ValidString(r) {
				return fmt.Errorf("%s %q is not valid UTF-8", set.flag, r)
			}
			if r == "/" {
				return fmt.Errorf("%s /: cannot hide the whole root (run nothing instead)", set.flag)
			}
			if !slices.Contains(*set.out, r) {
				*set.out = append(*set.out, r)
			}
		}
	}
	return nil
}

// mounts are o's host paths as protect sees them (resolved by
// resolvePaths; discover may have added to o.ro).
func (o *Options) mounts() protect.Mounts {
	return protect.Mounts{WS: o.ws, Write: o.Write, RO: o.ro, RW: o.rw}
}
