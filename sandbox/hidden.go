package sandbox

import (
	"fmt"

	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"
)

// Hidden is a path masked by sbx run --mask: it stays visible, as an empty
// directory or an empty file, but its content is not: a directory becomes
// a read-only tmpfs of mode 0000, a file the run's empty file of mode 0000
// (Spec.HiddenFile) bound read-only. The program has no capabilities, so
// neither its owner bits nor CAP_DAC_OVERRIDE let it list or read them
// (EACCES), and the read-only mount refuses chmod (EROFS). This is the
// mount level of a mask; it holds on every file tier, Landlock included,
// whose rules can only add access below an allowed directory.
type Hidden struct {
	Path string // absolute, clean; must exist in the sandbox's view
	Dir  bool
}

// hiddenMounts returns the mounts of s.Hidden, to go after every other
// bind (a mask wins over a protected entry or an --ro of the same path).
func (s *Spec) hiddenMounts() ([]*configs.Mount, error) {
	var out []*configs.Mount
	for _, h := range s.Hidden {
		if !isCleanAbs(h.Path) || h.Path == "/" {
			return nil, fmt.Errorf("masked path %q is not a clean absolute path below /", h.Path)
		}
		if h.Dir {
			out = append(out, &configs.Mount{
				Source: "tmpfs", Destination: h.Path, Device: "tmpfs",
				Flags: unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC,
				Data:  "mode=000,size=4k,nr_inodes=1",
			})
			continue
		}
		if !isCleanAbs(s.HiddenFile) {
			return nil, fmt.Errorf("masked file %q: no empty file to mount over it", h.Path)
		}
		m := bindMount(s.HiddenFile, h.Path, false)
		m.Flags |= unix.MS_NOEXEC
		out = append(out, m)
	}
	return out, nil
}
