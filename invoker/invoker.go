package invoker

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"

	"github.com/sbx-sandbox/sbx/hostfs"
	"golang.org/x/sys/unix"
)

// WorkspaceOwner returns the user a run started by root without sudo (sudo:
// SUDO_UID is set) runs as, given the workspace h held by descriptor: the owner of the workspace, when that is an ordinary user with a
// passwd entry and a home of their own. Root does not hand a program uid 0
// where a user's project is concerned (its files, its home, its sbx home
// are the user's, and so are the rights of staging and copy-back).
func WorkspaceOwner(h *hostfs.Held, sudo bool) (User, bool) {
	if os.Geteuid() != 0 {
		return User{}, false
	}
	if sudo {
		return User{}, false
	}
	if h == nil {
		return User{}, false
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(h.File.Fd()), &st); err != nil || st.Uid == 0 {
		return User{}, false
	}
	u, err := user.LookupId(strconv.Itoa(int(st.Uid)))
	if err != nil || !filepath.IsAbs(u.HomeDir) {
		return User{}, false
	}
	var hst unix.Stat_t
	if err := unix.Stat(u.HomeDir, &hst); err != nil || hst.Uid != st.Uid {
		return User{}, false // no home of their own for the sbx home
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return User{UID: uid, GID: gid, Name: u.Username, Home: u.HomeDir}, true
}

// User is the user a run is for: under sudo, the user who ran sudo.
type User struct {
	UID, GID int
	Name     string
	Home     string
}

// Cred is the file-system identity of u (with the passwd entry's groups).
func (u User) Cred() hostfs.Cred { return hostfs.LookupCred(u.UID, u.GID) }

// Cred is the file-system identity of the user sbx acts for (under
// sudo, SUDO_UID's, with the passwd entry's groups): what files the user
// names on the command line are opened with, as a run's host file
// operations are.
func Cred() hostfs.Cred {
	return Current(os.LookupEnv).Cred()
}

// Current returns the user a run is for, from the process's ids and
// (as root) sudo's variables; a uid without a passwd entry gets a home
// under /tmp.
func Current(env func(string) (string, bool)) User {
	uidStr, sudo := env("SUDO_UID")
	if !sudo || os.Getuid() != 0 {
		uidStr = strconv.Itoa(os.Getuid())
	}
	u, err := user.LookupId(uidStr)
	if err != nil {
		// A uid without a passwd entry still runs, with a home under /tmp.
		uid, _ := strconv.Atoi(uidStr)
		gid := os.Getgid()
		if g, ok := env("SUDO_GID"); ok && sudo {
			gid, _ = strconv.Atoi(g)
		}
		return User{UID: uid, GID: gid, Name: uidStr, Home: "/tmp"}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	home := u.HomeDir
	if !sudo {
		if h, ok := env("HOME"); ok && filepath.IsAbs(h) {
			home = filepath.Clean(h)
		}
	}
	return User{UID: uid, GID: gid, Name: u.Username, Home: home}
}
