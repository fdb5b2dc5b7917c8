package policysrc

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/hostfs"
)

// maxDepth bounds a chain walk (PATH_MAX allows at most 2048 components).
const maxDepth = 4096

// link is one directory of a chain.
type link struct {
	id   hostfs.FileID
	uid  uint32
	mode uint32
}

// chain returns dir and its ancestors up to "/", nearest first, walked
// by file descriptor (".." of the open directory, never a name).
func chain(dir *os.File) ([]link, error) {
	fd, err := unix.Dup(int(dir.Fd()))
	if err != nil {
		return nil, fmt.Errorf("walk up from %s: %w", dir.Name(), err)
	}
	var out []link
	for range maxDepth {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("walk up from %s: %w", dir.Name(), err)
		}
		l := link{id: hostfs.FileID{Dev: st.Dev, Ino: st.Ino}, uid: st.Uid, mode: st.Mode}
		if n := len(out); n > 0 && out[n-1].id == l.id {
			unix.Close(fd)
			return out, nil // ".." of "/" is "/"
		}
		out = append(out, l)
		up, err := unix.Openat(fd, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return nil, fmt.Errorf("walk up from %s: %w", dir.Name(), err)
		}
		fd = up
	}
	unix.Close(fd)
	return nil, fmt.Errorf("walk up from %s: more than %d directories", dir.Name(), maxDepth)
}
