package lsm

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// FilePolicy is the set of files a sandbox may open under the LSM tier,
// built from rules and compiled to file identities ([FilePolicy.Compile]).
// The zero value allows nothing; rules only add. Build it with chained calls:
//
//	var p bpf.FilePolicy
//	p.Allow("/usr", false).Allow(workspace, true).AllowFilesystem(procDir, false)
//
// A rule names a file or directory; a directory covers everything below it,
// through mounts (a file's ancestry is walked up across mount points, as
// Landlock does). The nearest listed ancestor of a file decides its access,
// so a read-only rule below a read-write one (a protected .git in a writable
// workspace) narrows it. Paths are resolved when the policy is compiled, so
// a later rename keeps a rule on the same file, and no path string reaches
// the kernel.
//
// Anonymous pipes (reopened through /proc/self/fd, as shells do for process
// substitution) are always allowed; every other pseudo filesystem without a
// path (nsfs, memfd, anon inodes) is denied.
type FilePolicy struct {
	rules []fileRule
}

type fileRule struct {
	path  string
	write bool
	fs    bool
	list  bool
	deny  bool
}

// Allow lets the sandbox open path and, if it is a directory, everything
// below it: for reading, and also for writing (write opens, O_TRUNC,
// creating, removing, linking and renaming entries) when write is true.
// Exec and mmap need read access, so the program, its interpreter and its
// libraries must be allowed. It returns p for chaining.
func (p *FilePolicy) Allow(path string, write bool) *FilePolicy {
	p.rules = append(p.rules, fileRule{path: path, write: write})
	return p
}

// AllowFilesystem lets the sandbox open every file of the filesystem that
// path is on (the whole superblock, wherever it is mounted), for reading and,
// if write is true, writing. It is meant for the sandbox's own procfs
// instance (seen from the host as /proc/<sandbox pid>/root/proc), where a
// file's ancestry does not lead to a listed directory. It returns p.
func (p *FilePolicy) AllowFilesystem(path string, write bool) *FilePolicy {
	p.rules = append(p.rules, fileRule{path: path, write: write, fs: true})
	return p
}

// AllowList lets the sandbox open the directory path itself for reading,
// that is list it, and nothing below it: a file under path is allowed only
// by a rule of its own or of a nearer directory. It is meant for the
// sandbox's root (seen from the host as /proc/<sandbox pid>/root), so that
// "ls /" works as under Landlock's list-only rule. A read-only or
// read-write rule on the same directory wins over it. It returns p.
func (p *FilePolicy) AllowList(path string) *FilePolicy {
	p.rules = append(p.rules, fileRule{path: path, list: true})
	return p
}

// Deny refuses the sandbox every open of path and, if it is a directory,
// of everything below it, whatever an ancestor's rule allows (sbx run
// --mask). It is the one rule that takes access away: as the nearest
// listed ancestor decides, a deny on a file inside an allowed workspace
// wins there, and since it names the file's identity, any other name of
// the same file (a hard link) is refused too. A deny and an allow of the
// same file compile to the deny. It returns p for chaining.
func (p *FilePolicy) Deny(path string) *FilePolicy {
	p.rules = append(p.rules, fileRule{path: path, deny: true})
	return p
}

// FileRule is one compiled rule: the identity the LSM programs look up.
type FileRule struct {
	// Path is the rule's path as given ("pipe:" for the implicit pipe
	// rule).
	Path string
	// Dev is the device of the file's superblock in the kernel's internal
	// encoding (major<<20 | minor), as in sb->s_dev.
	Dev uint32
	// Ino is the inode number, or 0 for a whole-filesystem rule.
	Ino uint64
	// Write is true for read-write, false for read-only.
	Write bool
	// List is true for a list-only rule ([FilePolicy.AllowList]).
	List bool
	// Deny is true for a rule that refuses all access ([FilePolicy.Deny]).
	Deny bool
}

// key is the sbx_lsm_allow key of the rule for the sandbox.
func (r FileRule) key(sandbox uint64) lsmSbxAllowKey {
	return lsmSbxAllowKey{Sandbox: sandbox, Ino: r.Ino, Dev: r.Dev}
}

// access is the sbx_lsm_allow value of the rule.
func (r FileRule) access() uint32 {
	if r.Deny {
		return uint32(lsmSbxAccessSBX_ACCESS_NONE)
	}
	if r.List {
		return uint32(lsmSbxAccessSBX_ACCESS_LIST)
	}
	if r.Write {
		return uint32(lsmSbxAccessSBX_ACCESS_WRITE)
	}
	return uint32(lsmSbxAccessSBX_ACCESS_READ)
}

// Compile resolves every rule to the identity of the file it names: the
// device of its superblock (from the mount table, which is what the kernel
// compares: on btrfs stat reports a per-subvolume device instead) and its
// inode number. A path that does not exist or is not absolute is an error.
// When two rules name the same file the widest access wins. Compile needs no
// privileges and changes nothing.
//
// Limit: on overlayfs the inode number stat reports for a non-directory may
// differ from the overlay inode's; rules on overlayfs should name
// directories.
func (p *FilePolicy) Compile() ([]FileRule, error) {
	mounts, err := mountDevices()
	if err != nil {
		return nil, err
	}
	var out []FileRule
	seen := make(map[[2]uint64]int)
	add := func(r FileRule) {
		k := [2]uint64{uint64(r.Dev), r.Ino}
		if i, ok := seen[k]; ok {
			if out[i].Deny || r.Deny { // fail closed: a deny wins
				out[i] = FileRule{Path: out[i].Path, Dev: r.Dev, Ino: r.Ino, Deny: true}
				return
			}
			out[i].Write = out[i].Write || r.Write
			out[i].List = out[i].List && r.List
			return
		}
		seen[k] = len(out)
		out = append(out, r)
	}
	for _, rule := range p.rules {
		r, err := compileRule(rule, mounts)
		if err != nil {
			return nil, err
		}
		add(r)
	}
	pipe, err := pipeRule()
	if err != nil {
		return nil, err
	}
	add(pipe)
	return out, nil
}

func compileRule(rule fileRule, mounts map[uint64]uint32) (FileRule, error) {
	if !filepath.IsAbs(rule.path) {
		return FileRule{}, fmt.Errorf("allow %q: not an absolute path", rule.path)
	}
	var st unix.Statx_t
	err := unix.Statx(unix.AT_FDCWD, rule.path, 0, unix.STATX_INO|unix.STATX_TYPE|unix.STATX_MNT_ID, &st)
	if err != nil {
		return FileRule{}, fmt.Errorf("allow %s: %w", rule.path, &os.PathError{Op: "statx", Path: rule.path, Err: err})
	}
	dev := kernelDev(st.Dev_major, st.Dev_minor)
	if st.Mask&unix.STATX_MNT_ID != 0 {
		if d, ok := mounts[st.Mnt_id]; ok {
			dev = d
		}
	}
	r := FileRule{Path: rule.path, Dev: dev, Ino: st.Ino, Write: rule.write, List: rule.list, Deny: rule.deny}
	if rule.list && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return FileRule{}, fmt.Errorf("allow listing %s: not a directory", rule.path)
	}
	if rule.fs {
		r.Ino = 0
	}
	return r, nil
}

// pipeRule is the whole-filesystem rule for pipefs, whose device is read
// from a pipe.
func pipeRule() (FileRule, error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return FileRule{}, fmt.Errorf("pipe rule: %w", err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	var st unix.Stat_t
	if err := unix.Fstat(fds[0], &st); err != nil {
		return FileRule{}, fmt.Errorf("pipe rule: fstat: %w", err)
	}
	return FileRule{Path: "pipe:", Dev: kernelDev(unix.Major(st.Dev), unix.Minor(st.Dev)), Write: true}, nil
}

// kernelDev encodes a device number as the kernel does internally
// (MKDEV: 12 bits of major, 20 of minor), unlike the st_dev of stat.
func kernelDev(major, minor uint32) uint32 {
	return major<<20 | minor&(1<<20-1)
}

// mountDevices maps each mount id of this process's mount namespace to the
// device of its superblock, from /proc/self/mountinfo.
func mountDevices() (map[uint64]uint32, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mount table: %w", err)
	}
	defer f.Close()
	return parseMountDevices(f)
}

// parseMountDevices parses mountinfo lines ("36 35 98:0 /mnt1 ...": mount
// id, parent id, major:minor, ...) into mount id -> kernel device.
func parseMountDevices(f io.Reader) (map[uint64]uint32, error) {
	out := make(map[uint64]uint32)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 {
			return nil, fmt.Errorf("parse mount table: short line %q", sc.Text())
		}
		id, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("parse mount table: mount id %q: %w", fields[0], err)
		}
		maj, min, ok := strings.Cut(fields[2], ":")
		if !ok {
			return nil, fmt.Errorf("parse mount table: device %q", fields[2])
		}
		ma, err1 := strconv.ParseUint(maj, 10, 12)
		mi, err2 := strconv.ParseUint(min, 10, 20)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("parse mount table: device %q: %w", fields[2], err)
		}
		out[id] = kernelDev(uint32(ma), uint32(mi))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("parse mount table: %w", err)
	}
	return out, nil
}
