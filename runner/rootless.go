package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/hostcheck"
	"github.com/sbx-sandbox/sbx/policy"
	"github.com/sbx-sandbox/sbx/sandbox"
)

// Without root, sbx builds rootless sandboxes (see package sandbox): a user
// namespace instead of root's ids, Landlock, the empty network namespace
// and a seccomp filter that refuses every socket family but AF_UNIX instead
// of the BPF tiers (loading cgroup BPF and LSM programs needs root), and
// cgroup limits only where a cgroup2 subtree is delegated to the user,
// rlimits otherwise.

// Rootless reports whether sbx runs without root and so builds rootless
// sandboxes.
func Rootless() bool { return os.Geteuid() != 0 || !hostcheck.HasCap(unix.CAP_SYS_ADMIN) }

// Why the BPF tiers do not apply to a rootless run, as doctor says it.
var (
	ErrCgroupBPFNeedsRoot = policy.ErrCgroupBPFNeedsRoot
	ErrBPFLSMNeedsRoot    = policy.ErrBPFLSMNeedsRoot
)

// UserStateDir is the state directory of a rootless sbx:
// $XDG_RUNTIME_DIR/sbx, or /tmp/sbx-UID when XDG_RUNTIME_DIR is unset.
func UserStateDir(env func(string) (string, bool)) string {
	if d, ok := env("XDG_RUNTIME_DIR"); ok && filepath.IsAbs(d) {
		return filepath.Join(filepath.Clean(d), "sbx")
	}
	return filepath.Join("/tmp", "sbx-"+strconv.Itoa(os.Geteuid()))
}

// privateDir creates dir (mode 0700) if needed and checks that it is a real
// directory of the calling user that nobody else can write: a state dir in
// /tmp that someone else created first could be a trap.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create state dir %s: %w", dir, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return fmt.Errorf("state dir %s: %w", dir, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("state dir %s: not a directory", dir)
	}
	if int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("state dir %s: owned by uid %d, not by you (remove it or set XDG_RUNTIME_DIR)", dir, st.Uid)
	}
	if st.Mode&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("state dir %s: %w", dir, err)
		}
	}
	return nil
}

// rootlessLimits decides how a rootless run enforces o.Limits: in a cgroup
// of the delegated subtree when there is one with the needed controllers
// (returned as the spec's cgroup path), else as rlimits, with the reason
// in o.limitsNote (noted on o.Log by spec, once nothing can refuse the run
// any more). Limits the user asked for explicitly (o.ExplicitLimits) that
// only a cgroup can enforce make it fail closed instead.
func rootlessLimits(o *Options, id string, deleg sandbox.Delegation, delegErr error) (string, error) {
	var need []string
	if o.Limits.MemoryBytes > 0 {
		need = append(need, "memory")
	}
	if o.Limits.CPUs > 0 {
		need = append(need, "cpu")
	}
	if o.Limits.Pids > 0 {
		need = append(need, "pids")
	}
	if delegErr == nil && deleg.Has(need...) {
		return deleg.CgroupFor(id), nil
	}
	why := delegErr
	if why == nil {
		why = fmt.Errorf("the delegated cgroup %s offers %q, not all of %q", deleg.Dir, deleg.Controllers, need)
	}
	if len(o.ExplicitLimits) > 0 {
		return "", fmt.Errorf("%s: cannot enforce as cgroup limits without root: no delegated cgroup2 subtree (%v); "+
			"fix: on a cgroup2 host, run it in a systemd user scope (systemd-run --user --scope sbx run ...), "+
			"or run sbx with sudo, or drop the flag to accept weaker rlimits (see docs/rootless.md)",
			strings.Join(o.ExplicitLimits, ", "), why)
	}
	o.limitsNote = why
	return "", nil
}

// writeLimitsNote says in one line that the limits are rlimits, once per
// host until something changes: the line is not repeated while the file
// limitsNoteFile of stateDir (the user's, private) holds the same note
// and reason; a new reason or a new sbx wording says it again. sbx doctor
// gives the reason in full.
func writeLimitsNote(w io.Writer, why error, stateDir string) {
	line := fmt.Sprintf("sbx: note: limits are rlimits, weaker than cgroups: %s (no delegated cgroup2 subtree; said once, sbx doctor says why)\n", sandbox.RlimitLimits)
	sayOnce(w, stateDir, limitsNoteFile, line, why)
}

// writeFileTierNote says, once per reason, that a root run confines files
// with Landlock alone because the BPF LSM tier is missing here (why).
func writeFileTierNote(w io.Writer, why error, stateDir string) {
	line := fmt.Sprintf("sbx: note: the BPF LSM file tier is unavailable here (%v); root runs confine files with Landlock alone (said once, sbx doctor says why)\n", why)
	sayOnce(w, stateDir, fileTierNoteFile, line, why)
}

// sayOnce writes line to w unless the state dir's file name records that
// this line was said for this reason already (the state dir lives as long
// as the boot, or the user's session).
func sayOnce(w io.Writer, stateDir, name, line string, why error) {
	sum := sha256.Sum256([]byte(line + "\x00" + why.Error()))
	key := hex.EncodeToString(sum[:])
	file := filepath.Join(stateDir, name)
	if old, err := os.ReadFile(file); err == nil && string(old) == key {
		return
	}
	fmt.Fprint(w, line)
	// Best effort: a note said twice is no harm.
	_ = os.WriteFile(file, []byte(key), 0o600)
}

// fileTierNoteFile records in the state dir which file tier note was said.
const fileTierNoteFile = "file-tier-note"

// limitsNoteFile records in the state dir which rlimit note was said.
const limitsNoteFile = "limits-note"

// usernsError adds the exact fix to a sandbox that could not be created
// when AppArmor restricts user namespaces for this binary.
func usernsError(err error) error {
	if !sandbox.ReadUsernsRestriction("/proc").Blocks() {
		return err
	}
	self, serr := os.Executable()
	if serr != nil {
		self = "sbx"
	} else if r, e := filepath.EvalSymlinks(self); e == nil {
		self = r
	}
	return fmt.Errorf("%w: %s", err, sandbox.AppArmorFix(self))
}
