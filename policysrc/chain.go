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
	// birth is its creation time (statx btime, Unix nanoseconds; 0 when
	// the filesystem does not keep it): with id, it tells a directory
	// from a later one that reuses its inode number.
	birth int64
}

// statLink returns the link of the open file fd.
func statLink(fd int) (link, error) {
	var st unix.Statx_t
	err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_SYNC_AS_STAT, unix.STATX_BASIC_STATS|unix.STATX_BTIME, &st)
	if err != nil {
		return link{}, err
	}
	l := link{id: hostfs.FileID{Dev: unix.Mkdev(st.Dev_major, st.Dev_minor), Ino: st.Ino}, uid: st.Uid, mode: uint32(st.Mode)}
	if st.Mask&unix.STATX_BTIME != 0 {
		l.birth = st.Btime.Sec*int64(1e9) + int64(st.Btime.Nsec)
	}
	return l, nil
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
		l, err := statLink(fd)
		if err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("walk up from %s: %w", dir.Name(), err)
		}
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
