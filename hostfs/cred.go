package hostfs

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"runtime"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Cred is the identity host file operations run with: the invoking user's.
type Cred struct {
	UID, GID int
	// Groups are the supplementary groups; empty means none but GID.
	Groups []int
}

// LookupCred returns uid's credentials with the supplementary groups of
// its passwd entry (none when it has no entry).
func LookupCred(uid, gid int) Cred {
	c := Cred{UID: uid, GID: gid}
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return c
	}
	ids, err := u.GroupIds()
	if err != nil {
		return c
	}
	for _, s := range ids {
		if g, err := strconv.Atoi(s); err == nil {
			c.Groups = append(c.Groups, g)
		}
	}
	return c
}

// switches reports whether Do must change identity: only root acting for
// another user does.
func (c Cred) switches() bool {
	return os.Geteuid() == 0 && (c.UID != 0 || c.GID != 0)
}

// Do runs fn with c's file-system identity and returns its error. When sbx
// is root and c is another user, fn runs on a goroutine locked to a fresh
// OS thread whose fsuid, fsgid and groups are c's; the thread ends with
// the goroutine. Otherwise (rootless sbx, or c is root) fn runs as it is.
// fn must not start goroutines that touch files: they would run with sbx's
// own identity.
func (c Cred) Do(fn func() error) error {
	if !c.switches() {
		return fn()
	}
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: the runtime ends a thread whose goroutine
		// exits while locked, so the switched identity dies with it.
		runtime.LockOSThread()
		if err := c.become(); err != nil {
			errc <- err
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// AsSelf runs fn on a goroutine of its own and waits for it: called from
// inside Do, fn runs with sbx's own identity (another thread), e.g. to
// write sbx's private state.
func AsSelf(fn func() error) error {
	errc := make(chan error, 1)
	go func() { errc <- fn() }()
	return <-errc
}

// become switches the calling thread (locked) to c. The raw syscalls
// change this thread only (the syscall package's Setgroups would change
// every thread of the process).
func (c Cred) become() error {
	gs := make([]uint32, 0, len(c.Groups)+1)
	for _, g := range c.Groups {
		gs = append(gs, uint32(g))
	}
	if len(gs) == 0 {
		gs = append(gs, uint32(c.GID))
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(gs)), uintptr(unsafe.Pointer(&gs[0])), 0); e != 0 {
		return fmt.Errorf("switch to uid %d: setgroups: %w", c.UID, e)
	}
	unix.Setfsgid(c.GID)
	unix.Setfsuid(c.UID)
	// setfsuid/setfsgid report no errors: read the ids back.
	gid, _ := unix.SetfsgidRetGid(-1)
	uid, _ := unix.SetfsuidRetUid(-1)
	if uid != c.UID || gid != c.GID {
		return fmt.Errorf("switch to uid %d gid %d: the kernel kept fsuid %d fsgid %d", c.UID, c.GID, uid, gid)
	}
	return nil
}

// ErrReplaced is returned when a directory is not the one recorded.
var ErrReplaced = errors.New("replaced since it was recorded")
