package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A watcher ends a sandbox whose sbx died at a moment nothing else covers.
//
// The shim ends the sandbox when its lifeline closes, but the shim runs
// only once the program is let go (Exec). Before that, from libcontainer's
// start on, runc's init waits on its exec FIFO with no parent-death signal
// (clone resets it) and holds the caller's stdio: a SIGKILLed sbx left it
// there until the next run reclaimed it, and a harness reading to EOF hung.
// So Create starts, before the sandbox, a small process of its own (this
// binary again, as watchArg0) in a session of its own, reading a pipe whose
// write end only sbx holds. It learns the sandbox's cgroups and init pid;
// when the pipe closes (sbx ended or died), it kills whatever is still in
// them and exits. After a normal teardown there is nothing left to kill.

// watchArg0 is argv[0] of the watcher; [Init] dispatches on it.
const watchArg0 = "sbx-watch"

// watcher is sbx's end of the pipe to the watcher process.
type watcher struct {
	w   *os.File
	cmd *exec.Cmd
}

// startWatcher starts the watcher process of a sandbox.
func startWatcher(self string) (*watcher, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start watcher: %w", err)
	}
	defer r.Close()
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("start watcher: %w", err)
	}
	defer devnull.Close()
	cmd := &exec.Cmd{
		Path:   self,
		Args:   []string{watchArg0},
		Env:    []string{},
		Dir:    "/", // never keeps a workspace busy
		Stdin:  r,
		Stdout: devnull,
		Stderr: devnull,
		// Its own session: a kill of sbx's process group spares it.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, fmt.Errorf("start watcher: %w", err)
	}
	// Reaped in the background; it outlives sbx only when sbx dies.
	go func() { _ = cmd.Wait() }()
	return &watcher{w: w, cmd: cmd}, nil
}

// watch tells the watcher what to end: "cg DIR" for a cgroup directory,
// "pid N" for a process (taken by pidfd on receipt, so never a reused pid);
// "grace D" delays the kill by D once the shim watches its lifeline.
func (wt *watcher) watch(kind, what string) {
	if wt != nil {
		fmt.Fprintf(wt.w, "%s %s\n", kind, what)
	}
}

// close lets the watcher go after a teardown: there is nothing left to
// kill, and it exits at once.
func (wt *watcher) close() {
	if wt != nil && wt.w != nil {
		fmt.Fprintln(wt.w, "done")
		wt.w.Close()
		wt.w = nil
	}
}

// runWatch is the watcher process: it reads stdin until EOF, then ends
// what it was told to watch. Its process then exits 0.
func runWatch() {
	var pidfds []int
	var cgroups []string
	var grace time.Duration
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		kind, arg, _ := strings.Cut(sc.Text(), " ")
		switch kind {
		case "done":
			return // sbx tore the sandbox down itself
		case "grace":
			if d, err := time.ParseDuration(arg); err == nil && d >= 0 && d < time.Second {
				grace = d
			}
		case "pid":
			if pid, err := strconv.Atoi(arg); err == nil {
				if fd, err := unix.PidfdOpen(pid, 0); err == nil {
					pidfds = append(pidfds, fd)
				}
			}
		case "cg":
			if filepath.IsAbs(arg) && strings.HasPrefix(arg, "/sys/fs/cgroup/") {
				cgroups = append(cgroups, arg)
			}
		}
	}
	// Once the shim watches its lifeline, it ends the sandbox itself (and
	// says so): the watcher is only the backstop then.
	time.Sleep(grace)
	for _, fd := range pidfds {
		_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	}
	for _, d := range cgroups {
		killCgroup(d)
	}
}

// killCgroup kills every process in the cgroup dir d (cgroup.kill where the
// kernel has it, else each pid of cgroup.procs, a few rounds for forks).
func killCgroup(d string) {
	if !isDir(d) {
		return
	}
	if err := os.WriteFile(filepath.Join(d, "cgroup.kill"), []byte("1"), 0); err == nil {
		return
	}
	for i := 0; i < 20 && !killProcs(d); i++ {
		time.Sleep(10 * time.Millisecond)
	}
}

// cgroupDirs are the directories the sandbox's cgroups will have, in every
// hierarchy that may hold them (most do not exist; the watcher skips those).
func (s *Spec) cgroupDirs() []string {
	var dirs []string
	add := func(rel string) {
		dirs = append(dirs, filepath.Join("/sys/fs/cgroup", rel))
		ents, _ := os.ReadDir("/sys/fs/cgroup")
		for _, e := range ents {
			if e.IsDir() {
				dirs = append(dirs, filepath.Join("/sys/fs/cgroup", e.Name(), rel))
			}
		}
	}
	switch {
	case s.Rootless && s.Cgroup != "":
		add(s.Cgroup)
	case !s.Rootless:
		add(filepath.Join(CgroupParent, s.WallGroup, s.ID))
	}
	return dirs
}
