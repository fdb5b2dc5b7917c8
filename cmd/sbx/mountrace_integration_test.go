package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/gate"
	"golang.org/x/sys/unix"
)

// Issue 25, class 3: a host path checked by sbx and then mounted by name
// could be exchanged for a symlink to "/" in between (renameat2
// RENAME_EXCHANGE, from a concurrent sandbox that can write its parent),
// and the sandbox saw the host's root. sbx now resolves each path once
// into a descriptor and, once the mounts are in place, checks every
// bind's destination against the file it checked (runner/mountsrc.go).

// swapKind is one kind of mounted host path: how a run mounts the path p
// and reads its marker.
type swapKind struct {
	name string
	file bool // p is a file (else a directory holding "marker")
	exec bool // an sbx exec request (else sbx run)
	// args are sbx run's arguments, or the request's fields (command
	// and workspace added).
	run func(b *box, p string) []string
	req func(b *box, p string) map[string]any
}

// markerOf is the file whose content a run prints.
func markerOf(p string, file bool) string {
	if file {
		return p
	}
	return filepath.Join(p, "marker")
}

var swapKinds = []swapKind{
	{name: "run workspace", run: func(_ *box, p string) []string {
		return []string{"--workspace", p, "--", "cat", markerOf(p, false)}
	}},
	{name: "exec workspace", exec: true, req: func(_ *box, p string) map[string]any {
		return map[string]any{"workspace": p, "command": []string{"cat", markerOf(p, false)}}
	}},
	{name: "--ro dir", run: func(_ *box, p string) []string {
		return []string{"--ro", p, "--", "cat", markerOf(p, false)}
	}},
	{name: "--ro file", file: true, run: func(_ *box, p string) []string {
		return []string{"--ro", p, "--", "cat", p}
	}},
	{name: "--rw dir", run: func(_ *box, p string) []string {
		return []string{"--rw", p, "--", "cat", markerOf(p, false)}
	}},
	{name: "--rw file", file: true, run: func(_ *box, p string) []string {
		return []string{"--rw", p, "--", "cat", p}
	}},
	{name: "--home", run: func(_ *box, p string) []string {
		return []string{"--home", p, "--", "sh", "-c", `exec cat "$HOME/marker"`}
	}},
	{name: "exec ro", exec: true, req: func(b *box, p string) map[string]any {
		return map[string]any{"workspace": b.ws, "ro": []string{p}, "command": []string{"cat", markerOf(p, false)}}
	}},
}

// swapTarget is what the symlink exchanged with a path names: the host's
// root for a directory, a kernel file for a file (both refused as mount
// sources, so a run that sees them saw an unchecked mount).
func swapTarget(file bool) string {
	if file {
		return "/proc/version"
	}
	return "/"
}

// raceOutcome is how one run under the swaps ended.
type raceOutcome int

const (
	sawRight   raceOutcome = iota // printed the right marker
	refused                       // exit 125 (or a rejected/failed request) naming why
	sawWrong                      // ran and printed anything else
	unexpected                    // none of these
)

// refusals are what a refusal under the race may say: the check after the
// setup, a path that changed while resolved, the refused target itself
// (the swap came before the resolution), a mount point of another type.
var refusals = []string{
	"replaced while the sandbox was set up",
	"changed while sbx resolved it",
	"the whole host cannot be mounted",
	"a kernel interface",
	"not a directory",
	// stage's own check, when it resolves the swapped --home as "/".
	"is inside the sandbox home",
}

// refusalKind is the first of refusals that s contains.
func refusalKind(s string) string {
	for _, r := range refusals {
		if strings.Contains(s, r) {
			return r
		}
	}
	return ""
}

// swapFixture makes the kind's path in a directory of its own, with the
// right marker, and the symlink it is exchanged with; owned by uid when it
// is not -1 (sudo's user), else by the box's user.
func swapFixture(t *testing.T, b *box, k swapKind, uid int) (p, link string) {
	dir := b.tempDir()
	if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	p, link = filepath.Join(dir, "x"), filepath.Join(dir, "x.swap")
	made := []string{dir, p}
	if k.file {
		writeFile(t, p, "RIGHT\n", 0o644)
	} else {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(p, "marker"), "RIGHT\n", 0o644)
		made = append(made, filepath.Join(p, "marker"))
	}
	for _, f := range made[1:] {
		chownToUser(t, f)
	}
	if uid >= 0 {
		for _, f := range made {
			if err := os.Chown(f, uid, uid); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Symlink(swapTarget(k.file), link); err != nil {
		t.Fatal(err)
	}
	return p, link
}

// raceRun runs the kind once on p with bin and classifies the outcome.
func raceRun(t *testing.T, b *box, bin string, k swapKind, p string, env []string) (raceOutcome, string) {
	if k.exec {
		req := k.req(b, p)
		data, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		args := []string{"exec"}
		if _, ok := req["ro"]; ok {
			// The harness allows ro paths in the race's directory
			// (whose entries are swapped; the root itself is not).
			args = append(args, "--ro-root", filepath.Dir(p))
		}
		proc := b.startCmd(opts{stdin: bytes.NewReader(data), env: env}, bin, args...)
		proc.ownNoteCheck = true
		r := proc.wait()
		if r.code != 0 {
			return unexpected, r.String()
		}
		res := parseResult(t, r.stdout)
		switch {
		case res.Status == gate.StatusExited && res.ExitCode != nil && *res.ExitCode == 0 && res.Output == "RIGHT\n":
			return sawRight, ""
		case res.Status == gate.StatusExited:
			return sawWrong, r.stdout
		case res.Status == gate.StatusRejected:
			// sbx exec's own checks of the request (the gate
			// resolves the workspace, cwd and ro by name first)
			// met the swap: nothing ran.
			return refused, res.Error
		case res.Status == gate.StatusFailed && containsAny(res.Error, refusals):
			return refused, res.Error
		}
		return unexpected, r.stdout
	}
	proc := b.startCmd(opts{env: env}, bin, append([]string{"run"}, k.run(b, p)...)...)
	proc.sbxRun = true
	r := proc.wait()
	switch {
	case r.code == 0 && r.stdout == "RIGHT\n":
		return sawRight, ""
	case r.code == exitSbxError && containsAny(r.stderr, refusals):
		return refused, r.stderr
	case r.code == exitSbxError:
		return unexpected, r.String()
	}
	return sawWrong, r.String()
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// swapper exchanges p and link (renameat2 RENAME_EXCHANGE) until stopped,
// as a program of another sandbox that can write their directory could,
// and counts the exchanges made while a run is in flight.
type swapper struct {
	p, link  string
	inflight *atomic.Int32
	overlap  atomic.Int64
	stop     chan struct{}
	done     chan error
}

func startSwapper(p, link string, inflight *atomic.Int32) *swapper {
	s := &swapper{p: p, link: link, inflight: inflight, stop: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		n := 0
		for {
			select {
			case <-s.stop:
				if n%2 == 1 { // leave the real path in place
					if err := unix.Renameat2(unix.AT_FDCWD, s.p, unix.AT_FDCWD, s.link, unix.RENAME_EXCHANGE); err != nil {
						s.done <- err
						return
					}
				}
				s.done <- nil
				return
			default:
			}
			if err := unix.Renameat2(unix.AT_FDCWD, s.p, unix.AT_FDCWD, s.link, unix.RENAME_EXCHANGE); err != nil {
				s.done <- err
				return
			}
			n++
			if s.inflight.Load() > 0 {
				s.overlap.Add(1)
			}
			// Short enough to land in every step of a run's setup
			// (milliseconds), long enough to leave sbx the CPU.
			time.Sleep(50 * time.Microsecond)
		}
	}()
	return s
}

func (s *swapper) end(t *testing.T) {
	t.Helper()
	close(s.stop)
	if err := <-s.done; err != nil {
		t.Fatalf("swap %s: %v", s.p, err)
	}
}

// TestMountSwapRace: every kind of mounted host path (the workspace of
// sbx run and of sbx exec, --ro and --rw directories and files, --home,
// a request's ro) is exchanged with a symlink to the host's root (or a
// kernel file) in a loop while runs start. Each run must print the right
// marker or refuse (125, or a rejected/failed request) saying why; none
// may see another tree. The control of each kind is a run without the
// swaps, which sees the marker; TestMountSwapRaceControl shows the same
// race seen without the check. As root it runs as plain root and as root
// with sudo's variables (the paths are then resolved as the user).
func TestMountSwapRace(t *testing.T) {
	requireRoot(t)
	t.Parallel()
	bin := testBin(t)
	for _, m := range deputyModes(t) {
		t.Run(m.name, func(t *testing.T) {
			b := newSerialBox(t)
			if m.uid >= 0 {
				if err := os.Chown(b.ws, m.uid, m.uid); err != nil {
					t.Fatal(err)
				}
			}
			swapRace(t, b, bin, m)
		})
	}
}

// swapRace is TestMountSwapRace in one mode.
func swapRace(t *testing.T, b *box, bin string, m deputyMode) {
	const runsPerKind = 8
	var total atomic.Int64
	counts := map[string][4]int{}
	why := map[string]int{}
	for _, k := range swapKinds {
		t.Run(k.name, func(t *testing.T) {
			b := b.in(t)
			p, link := swapFixture(t, b, k, m.uid)
			// Control: no swap, the marker is seen.
			if o, detail := raceRun(t, b, bin, k, p, m.env); o != sawRight {
				t.Fatalf("control without swaps: want the marker\n%s", detail)
			}
			var inflight atomic.Int32
			sw := startSwapper(p, link, &inflight)
			var c [4]int
			var wg sync.WaitGroup
			results := make(chan [2]any, runsPerKind)
			for i := 0; i < runsPerKind; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					inflight.Add(1)
					defer inflight.Add(-1)
					o, detail := raceRun(t, b, bin, k, p, m.env)
					results <- [2]any{o, detail}
				}()
				if i%2 == 1 {
					wg.Wait() // two at a time: the machine is small
				}
			}
			wg.Wait()
			sw.end(t)
			close(results)
			for r := range results {
				o, detail := r[0].(raceOutcome), r[1].(string)
				c[o]++
				switch o {
				case refused:
					why[refusalKind(detail)]++
				case sawWrong:
					t.Errorf("a run saw another tree than %s:\n%s", p, detail)
				case unexpected:
					t.Errorf("a run ended neither with the marker nor with a refusal:\n%s", detail)
				}
			}
			total.Add(sw.overlap.Load())
			counts[k.name] = c
			t.Logf("%d swaps during runs; %d saw the marker, %d refused", sw.overlap.Load(), c[sawRight], c[refused])
		})
	}
	if n := total.Load(); n < 500 {
		t.Errorf("only %d swaps overlapped runs, want at least 500", n)
	}
	t.Logf("%d swaps overlapped runs in all; outcomes by kind (right, refused, wrong, unexpected): %v; refusals: %v", total.Load(), counts, why)
	// About one run in four passes the resolution and meets the swap at
	// the mount: with none, the check after the setup was not exercised.
	if why[refusals[0]] == 0 {
		t.Errorf("no run was refused by the check after the setup (%q): the swaps never fell between the resolution and the mount", refusals[0])
	}
}

// TestMountSwapRaceControl: the same race with the check after the setup
// turned off (the sbxtest build's sabotage "mountcheck") shows another
// tree than the workspace at least once: the race is real, so the test
// above can fail. It stops at the first run that shows it.
func TestMountSwapRaceControl(t *testing.T) {
	b := newBox(t)
	bin := testBin(t)
	k := swapKinds[0] // the workspace of sbx run
	p, link := swapFixture(t, b, k, -1)
	var inflight atomic.Int32
	sw := startSwapper(p, link, &inflight)
	defer func() {
		if sw != nil {
			sw.end(t)
		}
	}()
	env := []string{"SBX_TEST_SABOTAGE=mountcheck"}
	const maxRuns = 60
	deadline := time.Now().Add(40 * time.Second)
	var c [4]int
	for i := 0; i < maxRuns && time.Now().Before(deadline); i++ {
		inflight.Add(1)
		o, _ := raceRun(t, b, bin, k, p, env)
		inflight.Add(-1)
		c[o]++
		if o == sawWrong {
			break
		}
	}
	sw.end(t)
	overlap := sw.overlap.Load()
	sw = nil
	t.Logf("without the check: %d runs saw the marker, %d refused, %d saw another tree, %d other; %d swaps during runs", c[sawRight], c[refused], c[sawWrong], c[unexpected], overlap)
	if c[sawWrong] == 0 {
		t.Errorf("no run saw another tree with the check turned off in %d runs: the race did not happen, so TestMountSwapRace proves nothing here", c[0]+c[1]+c[2]+c[3])
	}
}

// TestMountPointSymlinkInHome: a bind that lands inside the sbx home (an
// agent's file below ~/.pi/agent, mounted --ro over the home) needs a
// mount point there. A symlink an earlier run planted on the way (.pi ->
// a directory of the writable workspace) would have led runc, as root,
// to create the mount point through it (victim/agent/ appeared in the
// workspace, and the check after the setup then refused the run); sbx
// creates mount points itself, as the
// user and without following links, and refuses (125) when one is a
// symlink. The control: without the link the file is mounted, and its
// mount point in the sbx home is a plain file.
func TestMountPointSymlinkInHome(t *testing.T) {
	b := newBox(t)
	home := b.tempDir()
	agent := filepath.Join(home, ".pi", "agent")
	if err := os.MkdirAll(agent, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(agent, "models.json"), "RIGHT\n", 0o644)
	chownToUser(t, filepath.Join(home, ".pi"), agent, filepath.Join(agent, "models.json"))
	env := []string{"HOME=" + home}
	models := filepath.Join(agent, "models.json")
	args := []string{"--write", "--ro", models, "--", "cat", models}

	r := b.runOpts(opts{env: env}, args...)
	if r.code != 0 || r.stdout != "RIGHT\n" {
		t.Fatalf("control: want the mounted file\n%v", r)
	}
	sbxHome := b.sbxHome(b.data)
	fi, err := os.Lstat(filepath.Join(sbxHome, ".pi", "agent", "models.json"))
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("control: the mount point in the sbx home is not a regular file: %v %v", fi, err)
	}

	// A run planted .pi -> a directory of the workspace in the sbx home.
	victim := filepath.Join(b.ws, "victim")
	if err := os.Mkdir(victim, 0o755); err != nil {
		t.Fatal(err)
	}
	chownToUser(t, victim)
	if err := os.RemoveAll(filepath.Join(sbxHome, ".pi")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(sbxHome, ".pi")); err != nil {
		t.Fatal(err)
	}
	chownToUser(t, filepath.Join(sbxHome, ".pi"))
	r = b.runOpts(opts{env: env}, args...)
	if r.code != exitSbxError || !strings.Contains(r.stderr, "its mount point in the sbx home is a symlink") || r.stdout != "" {
		t.Errorf("a symlink on the way to a mount point in the sbx home: want exit 125 naming it\n%v", r)
	}
	if entries, _ := os.ReadDir(victim); len(entries) != 0 {
		t.Errorf("something was created through the planted symlink: %v", entries)
	}
}

// TestMaskSwap: runc mounts a mask (--mask) by its name inside the
// sandbox's tree, following symlinks there; a directory above the masked
// file swapped for a symlink before the mount (the sbxtest build does it
// right after sbx's checks, as a concurrent run could) would put the mask
// elsewhere and leave the content readable under the directory's new name.
// sbx checks that each masked path shows the mask before the program
// starts (125). The control, with that check sabotaged, reads the secret.
func TestMaskSwap(t *testing.T) {
	b := newBox(t)
	bin := testBin(t)
	sub, other := filepath.Join(b.ws, "sub"), filepath.Join(b.ws, "other")
	for _, d := range []string{sub, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(sub, "secret"), "SECRET\n", 0o644)
	writeFile(t, filepath.Join(other, "secret"), "DECOY\n", 0o644)
	chownTree(t, b.ws)
	args := []string{"run", "--no-profile", "-w", "--mask", "sub/secret", "--", "sh", "-c", "cat sub.sbx-swapped/secret"}
	restore := func() {
		if err := os.Remove(sub); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(sub+".sbx-swapped", sub); err != nil {
			t.Fatal(err)
		}
	}
	env := append(confEnv(t, ""), "SBX_TEST_PROTECT_SWAP="+sub+"="+other)

	p := b.startCmd(opts{env: env}, bin, args...)
	p.sbxRun = true
	r := p.wait()
	restore()
	ws, _ := filepath.EvalSymlinks(b.ws)
	want := "masked path " + filepath.Join(ws, "sub", "secret") + " in the sandbox does not show the mask (replaced while the sandbox was set up); not running"
	if r.code != exitSbxError || strings.Contains(r.stdout, "SECRET") || !strings.Contains(r.stderr, want) {
		t.Errorf("mask whose directory was swapped: want exit 125 and %q\n%v", want, r)
	}

	// Control: the check sabotaged, the same swap shows the secret.
	p = b.startCmd(opts{env: append(env, "SBX_TEST_SABOTAGE=mountcheck")}, bin, args...)
	p.sbxRun = true
	r = p.wait()
	restore()
	if r.code != 0 || r.stdout != "SECRET\n" {
		t.Errorf("control, check sabotaged: want the secret read under the swapped name\n%v", r)
	}
}

// TestExecResolvesAsUser: under sudo, sbx exec resolves a request's paths
// with the user's rights, not root's: an ro path inside a directory only
// root may search is rejected (nothing runs) rather than looked up as
// root. The control: the same request from plain root, in a workspace of
// root's, runs.
func TestExecResolvesAsUser(t *testing.T) {
	if rootless() {
		t.Skip("sudo's variables matter only to a root sbx")
	}
	b := newBox(t)
	requireRoot(t) // creates and acts for another user
	u, err := ensureTestUser("sbx-rootless-test")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(b.ws, u.uid, u.gid); err != nil {
		t.Fatal(err)
	}
	locked := t.TempDir()
	if err := os.Chmod(filepath.Dir(locked), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(locked, 0o700); err != nil { // root's alone
		t.Fatal(err)
	}
	ro := filepath.Join(locked, "tool")
	if err := os.Mkdir(ro, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ro, "marker"), "RIGHT\n", 0o644)
	req := b.req([]string{"cat", filepath.Join(ro, "marker")}, "ro", []string{ro})
	data, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	sudo := []string{fmt.Sprintf("SUDO_UID=%d", u.uid), fmt.Sprintf("SUDO_GID=%d", u.gid), "SUDO_USER=" + u.name}

	roRoot := []string{"exec", "--ro-root", filepath.Dir(locked)}
	p := b.startCmd(opts{stdin: bytes.NewReader(data), env: sudo}, sbxBin, roRoot...)
	p.ownNoteCheck = true
	r := p.wait()
	res := parseResult(t, r.stdout)
	if res.Status != gate.StatusRejected || !strings.Contains(res.Error, "permission denied") {
		t.Errorf("sudo: ro inside a root-only directory: want rejected with permission denied\n%v", r)
	}

	// Root's own workspace (one of another user's runs as its owner).
	if err := os.Chown(b.ws, 0, 0); err != nil {
		t.Fatal(err)
	}
	p = b.startCmd(opts{stdin: bytes.NewReader(data)}, sbxBin, roRoot...)
	p.ownNoteCheck = true
	r = p.wait()
	res = parseResult(t, r.stdout)
	if res.Status != gate.StatusExited || res.Output != "RIGHT\n" {
		t.Errorf("control, plain root: want the marker\n%v", r)
	}
}
