package main

// The as-user mode of the integration tests (issue 7): with
// SBX_TEST_AS_USER=NAME, TestMain (still started as root) creates the user
// NAME once, hands it a copy of the binary and a runtime dir, and from then
// on the box helpers run every sbx process and every host control as that
// user: its ids, a session of its own, its environment (HOME, USER,
// XDG_RUNTIME_DIR, the box's XDG_DATA_HOME, no SUDO_*). The suites then
// prove the rootless path; what the rootless path cannot do here skips with
// the reason sbx doctor gives as that user (needRootTier).

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// asUserEnv switches the as-user mode on: the name of the test user.
const asUserEnv = "SBX_TEST_AS_USER"

// testUser is an ordinary user the tests create, and the copy of the sbx
// binary it can read and run.
type testUser struct {
	name     string
	uid, gid int
	home     string
	bin      string
}

var (
	testUsersMu sync.Mutex
	testUsers   = map[string]testUser{}
)

// ensureTestUser creates the system user name if it does not exist
// (useradd, with a home; idempotent, and safe against a concurrent
// useradd), and copies sbxBin to a directory the user can read, once per
// user and test binary. The caller must be root.
func ensureTestUser(name string) (testUser, error) {
	testUsersMu.Lock()
	defer testUsersMu.Unlock()
	if u, ok := testUsers[name]; ok {
		return u, nil
	}
	if _, err := user.Lookup(name); err != nil {
		out, err := exec.Command("useradd", "--system", "--create-home", "--home-dir", "/home/"+name, "--shell", "/bin/sh", name).CombinedOutput()
		if err != nil && !strings.Contains(string(out), "already exists") {
			return testUser{}, fmt.Errorf("useradd %s: %v: %s", name, err, out)
		}
	}
	pw, err := user.Lookup(name)
	if err != nil {
		return testUser{}, fmt.Errorf("look up user %s: %w", name, err)
	}
	u := testUser{name: name, home: pw.HomeDir}
	if u.uid, err = strconv.Atoi(pw.Uid); err != nil {
		return testUser{}, fmt.Errorf("uid of %s: %w", name, err)
	}
	if u.gid, err = strconv.Atoi(pw.Gid); err != nil {
		return testUser{}, fmt.Errorf("gid of %s: %w", name, err)
	}
	dir, err := os.MkdirTemp("", "sbx-rootless-bin-")
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		return testUser{}, fmt.Errorf("directory for the user's sbx binary: %w", err)
	}
	data, err := os.ReadFile(sbxBin)
	if err != nil {
		return testUser{}, fmt.Errorf("copy sbx for %s: %w", name, err)
	}
	u.bin = filepath.Join(dir, "sbx")
	if err := os.WriteFile(u.bin, data, 0o755); err != nil {
		return testUser{}, fmt.Errorf("copy sbx for %s: %w", name, err)
	}
	testUsers[name] = u
	return u, nil
}

// removeTestUserBins removes the users' copies of the binary.
func removeTestUserBins() {
	testUsersMu.Lock()
	defer testUsersMu.Unlock()
	for _, u := range testUsers {
		os.RemoveAll(filepath.Dir(u.bin))
	}
}

// credential runs a process with the user's ids and no supplementary
// group, in a session of its own (no controlling terminal of root's).
func (u testUser) credential() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid), Groups: []uint32{}},
		Setsid:     true,
	}
}

// asUserMode is the state of the as-user mode.
type asUserMode struct {
	testUser
	// runDir is the XDG_RUNTIME_DIR of every run (so the state dir,
	// shared by all boxes as /run/sbx is with root, is runDir/sbx).
	runDir string
	// doctor is what sbx doctor says as the user: state ("ok" or
	// "missing") and detail of each check, and its "limits:" line.
	doctor map[string][2]string
	limits string
	// delegated is the cgroup2 subtree delegated to the user, where its
	// sandboxes' cgroups are made ("" on a host without one: rlimits).
	delegated string
}

// asUser is set in the as-user mode.
var asUser *asUserMode

// rootless tells whether the tests run sbx as an ordinary user.
func rootless() bool { return asUser != nil }

// setupAsUser prepares the as-user mode for user name: the user, its copy
// of the binary (which becomes sbxBin), its runtime dir, and what doctor
// says as the user. The returned cleanup removes the runtime dir.
func setupAsUser(name string) (func(), error) {
	u, err := ensureTestUser(name)
	if err != nil {
		return nil, err
	}
	m := &asUserMode{testUser: u}
	if m.runDir, err = os.MkdirTemp("", "sbx-asuser-run-"); err != nil {
		return nil, fmt.Errorf("runtime dir of %s: %w", name, err)
	}
	cleanup := func() { os.RemoveAll(m.runDir) }
	// The dirs sbx would create itself (its state dir and the run dirs
	// below it), made now so that the run watcher can watch them.
	for _, d := range []string{m.runDir, filepath.Join(m.runDir, "sbx"), filepath.Join(m.runDir, "sbx", "run")} {
		err := os.MkdirAll(d, 0o700)
		if err == nil {
			err = os.Chown(d, u.uid, u.gid)
		}
		if err != nil {
			cleanup()
			return nil, fmt.Errorf("runtime dir of %s: %w", name, err)
		}
	}
	sbxBin = u.bin
	stateRoot = filepath.Join(m.runDir, "sbx")
	asUser = m
	if err := m.readDoctor(); err != nil {
		cleanup()
		return nil, err
	}
	return cleanup, nil
}

// environ is the user's environment: the test's own without what names
// root (sudo's variables, HOME, USER, LOGNAME, MAIL, XDG_*, the PATH
// entries the user cannot reach, such as root's own tools), and the
// user's HOME, USER, LOGNAME and runtime dir.
func (m *asUserMode) environ() []string {
	env := []string{"HOME=" + m.home, "USER=" + m.name, "LOGNAME=" + m.name, "XDG_RUNTIME_DIR=" + m.runDir}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "SUDO_"), strings.HasPrefix(k, "XDG_"):
		case k == "HOME", k == "USER", k == "LOGNAME", k == "MAIL":
		case k == "PATH":
			var path []string
			for _, d := range filepath.SplitList(v) {
				if m.canSearch(d) {
					path = append(path, d)
				}
			}
			env = append(env, "PATH="+strings.Join(path, ":"))
		default:
			env = append(env, kv)
		}
	}
	return env
}

// canSearch reports whether the user may look up names in dir: dir and
// every directory above it are searchable by the user's uid, gid or
// anyone.
func (m *asUserMode) canSearch(dir string) bool {
	if !filepath.IsAbs(dir) {
		return false
	}
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		var st syscall.Stat_t
		if err := syscall.Stat(d, &st); err != nil {
			return false
		}
		var bit uint32 = 0o001
		switch {
		case int(st.Uid) == m.uid:
			bit = 0o100
		case int(st.Gid) == m.gid:
			bit = 0o010
		}
		if st.Mode&bit == 0 {
			return false
		}
		if d == "/" {
			return true
		}
	}
}

// delegatedLimits matches the doctor's limits line where a cgroup2
// subtree is delegated to the user.
var delegatedLimits = regexp.MustCompile(`^cgroup2 limits in the delegated subtree (/\S+)$`)

// readDoctor runs sbx doctor as the user and keeps its verdicts.
func (m *asUserMode) readDoctor() error {
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, m.bin, "doctor")
	cmd.Dir = m.home
	cmd.Env = m.environ()
	cmd.SysProcAttr = m.credential()
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("sbx doctor as %s: %v\n%s", m.name, err, out)
	}
	m.doctor = map[string][2]string{}
	for _, l := range lines(string(out)) {
		if d := doctorLine.FindStringSubmatch(l); d != nil {
			m.doctor[d[1]] = [2]string{d[2], d[3]}
		}
		if v, ok := strings.CutPrefix(l, "limits:"); ok {
			m.limits = strings.TrimSpace(v)
		}
	}
	if !strings.Contains(string(out), "mode:          rootless") || m.limits == "" {
		return fmt.Errorf("sbx doctor as %s does not describe a rootless sandbox:\n%s", m.name, out)
	}
	if d := delegatedLimits.FindStringSubmatch(m.limits); d != nil {
		m.delegated = d[1]
	}
	return nil
}

// A rootTier is a part of sbx the rootless path does without; doctor says
// whether it applies to the user, and why not. (The limits have their own
// line in doctor, and their own expectations: see rlimitMode.)
type rootTier struct {
	// check is the doctor line of the tier.
	check string
	// needs says what the test needs the tier for.
	needs string
}

var rootTiers = map[string]rootTier{
	"bpf-report": {"cgroup bpf", "denial lines/--violations need the BPF wall"},
	"bpf-wall":   {"cgroup bpf", "the netwall sabotage takes the sandbox out of the BPF wall (rootless, the net canary proves seccomp's refusal, which the sbxtest build cannot break)"},
	"bpf-lsm":    {"bpf lsm", "--policy bpf needs the BPF LSM"},
}

// hasRootTier reports whether the tier applies to the runs of the tests:
// always as root (the tests assume what root has), as the user when
// doctor says so. The second result is doctor's reason when it does not.
func hasRootTier(name string) (bool, string) {
	tier, ok := rootTiers[name]
	if !ok {
		panic("unknown tier " + name)
	}
	if !rootless() {
		return true, ""
	}
	d, ok := asUser.doctor[tier.check]
	if !ok {
		return false, fmt.Sprintf("sbx doctor as %s has no %q line", asUser.name, tier.check)
	}
	return d[0] == "ok", fmt.Sprintf("sbx doctor as %s: %s: %s: %s", asUser.name, tier.check, d[0], d[1])
}

// needRootTier skips t, with what it needs and doctor's reason, when the
// tier does not apply to the runs.
func needRootTier(t *testing.T, name string) {
	t.Helper()
	if ok, why := hasRootTier(name); !ok {
		t.Skipf("%s; %s", rootTiers[name].needs, why)
	}
}

// bpfReports tells whether sbx reports denials ("sbx: denied" lines,
// --violations, the --write hint): the BPF wall and tracer do, and need
// root. Rootless, Landlock and seccomp refuse silently.
func bpfReports() bool {
	ok, _ := hasRootTier("bpf-report")
	return ok
}

// reported returns want where sbx reports denials, and nil where it
// refuses silently: the expected report of a test's denials.
func reported[T any](want []T) []T {
	if bpfReports() {
		return want
	}
	return nil
}

// reportedCount is n where sbx reports denials, else 0.
func reportedCount(n int) int {
	if bpfReports() {
		return n
	}
	return 0
}

// limitsNote is the note of a rootless run whose limits are rlimits.
var limitsNote = regexp.MustCompile(`(?m)^sbx: note: limits are rlimits, weaker than cgroups: .*\n`)

// dropLimitsNotes removes the rlimit notes from s and counts them.
func dropLimitsNotes(s string) (string, int) {
	n := len(limitsNote.FindAllStringIndex(s, -1))
	return limitsNote.ReplaceAllString(s, ""), n
}

// rlimitMode tells whether the runs' limits are rlimits (rootless, no
// delegated cgroup): then every run that gets to run its program says so,
// once.
func rlimitMode() bool { return rootless() && asUser.delegated == "" }

// checkLimitsNote fails t unless a run printed the rlimit note as it must:
// in the rlimit mode at most once (it is said once per host until its
// reason changes: the first run of the suite says it, see
// TestRootlessLimits), else never (only a run that failed during setup,
// status 125, may have printed it).
func checkLimitsNote(t *testing.T, args []string, ran bool, code, notes int) {
	t.Helper()
	max := 0
	if rlimitMode() && ran && code != exitSbxError || code == exitSbxError {
		max = 1
	}
	if notes > max {
		t.Errorf("%q: printed the rlimit note %d times, want at most %d", args, notes, max)
	}
}

// tempDir is t.TempDir, in the as-user mode owned by the user (and its
// parent traversable), for the files of a run.
func (b *box) tempDir() string {
	b.t.Helper()
	d := b.t.TempDir()
	if rootless() {
		if err := os.Chmod(filepath.Dir(d), 0o755); err != nil {
			b.t.Fatal(err)
		}
		chownToUser(b.t, d)
	}
	return d
}

// chownToUser hands paths (not following symlinks) to the test user in
// the as-user mode, so that its runs may change them as the user's own.
func chownToUser(t *testing.T, paths ...string) {
	t.Helper()
	if !rootless() {
		return
	}
	for _, p := range paths {
		if err := os.Lchown(p, asUser.uid, asUser.gid); err != nil {
			t.Fatal(err)
		}
	}
}

// hostHome is the home of the user sbx runs for.
func hostHome(t *testing.T) string {
	t.Helper()
	if rootless() {
		return asUser.home
	}
	h := os.Getenv("HOME")
	if h == "" {
		t.Fatal("HOME is not set")
	}
	return h
}

// hostUID is the host uid of the programs the tests run.
func hostUID() int {
	if rootless() {
		return asUser.uid
	}
	return os.Getuid()
}

// hostPrivileged runs a control that needs privilege on the host: as
// root, directly (b.host); as the user, as uid 0 of a user namespace of its
// own (unshare -r, plus the namespaces of flags, e.g. "-mn"), the most an
// ordinary user gets from the kernel and what the sandbox's program would
// have without sbx's tiers.
func (b *box) hostPrivileged(o opts, flags string, name string, args ...string) result {
	b.t.Helper()
	if !rootless() {
		return b.host(o, name, args...)
	}
	return b.host(o, "unshare", append([]string{"-r" + strings.TrimPrefix(flags, "-"), "--", name}, args...)...)
}

// hostProcess starts a process of the runs' user on the host (for tests
// that need one, such as a target of kill or a holder of a file
// descriptor): the test itself as root, else shellCmd as the user, killed
// at the end of the test. It returns its pid once shellCmd has had time to
// set up (ready reports when it has).
func (b *box) hostProcess(shellCmd string, ready func(pid int) bool) int {
	b.t.Helper()
	if !rootless() {
		return os.Getpid()
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := b.command(ctx, opts{}, "sh", "-c", shellCmd)
	if err := cmd.Start(); err != nil {
		cancel()
		b.t.Fatalf("start %q as %s: %v", shellCmd, asUser.name, err)
	}
	b.t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	pid := cmd.Process.Pid
	for deadline := time.Now().Add(10 * time.Second); !ready(pid); {
		if time.Now().After(deadline) {
			b.t.Fatalf("host process %q as %s not ready within 10s", shellCmd, asUser.name)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return pid
}
