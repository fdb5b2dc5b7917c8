package gate

import (
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"
)

// Checked is a request that passed every rule, with its paths resolved. The
// runner uses Root and Dir, never the request's own strings, so that what was
// checked is what runs.
type Checked struct {
	// Request is the request as given.
	Request Request
	// Root is the real path (symbolic links resolved) of the workspace.
	Root string
	// Dir is the real path of the working directory: Root, or Root joined
	// with the request's cwd, always inside Root.
	Dir string
	// Timeout is the run's deadline (Request.Timeout).
	Timeout time.Duration
	// Writable is true when the workspace is mounted read-write.
	Writable bool
	// ReadOnly are the real paths of Request.ReadOnly.
	ReadOnly []string
}

// Validate is Check without its result: it applies every rule, those on disk
// included.
func (r Request) Validate() error {
	_, err := r.Check()
	return err
}

// Check is CheckIn with the zero Scope: every rule of the gate, in a fixed
// order, the first that fails returned as a *RejectError: the static rules
// (CheckStatic), staging and ro (refused: no harness allowed them), then the
// workspace jail on disk (ResolveWorkspace). Check changes nothing on disk.
func (r Request) Check() (Checked, error) { return r.CheckIn(Scope{}) }

// CheckStatic applies the rules that need no file system, in this order:
// the command (CheckCommand), write confirmation, shell confirmation, the
// shell wrapper rule, the timeout, the workspace's form (absolute, no NUL) and
// the cwd's form (relative, no NUL, not leaving the workspace lexically). It is
// not enough to run a request: the workspace jail needs Check.
func (r Request) CheckStatic() error {
	if err := CheckCommand(r.Command); err != nil {
		return err
	}
	if r.Write && !r.ConfirmWrite {
		return reject("write", MsgWriteNeedsConfirm)
	}
	if r.AllowShell && !r.ConfirmShell {
		return reject("allowShell", MsgShellNeedsConfirm)
	}
	if IsShell(r.Command[0]) && !r.AllowShell {
		return reject("command", "command[0] %q is a shell wrapper; shells are refused unless allowShell=true and confirmShell=true", r.Command[0])
	}
	if r.TimeoutMs < 0 || r.TimeoutMs > MaxTimeoutMs {
		return reject("timeoutMs", "timeoutMs must be between 1 and %d (milliseconds), not %d", MaxTimeoutMs, r.TimeoutMs)
	}
	if err := checkWorkspaceForm(r.Workspace); err != nil {
		return err
	}
	if err := checkReadOnlyForm(r.ReadOnly); err != nil {
		return err
	}
	return checkRelForm("cwd", r.Cwd)
}

// checkReadOnlyForm checks the form of the ro paths: at most MaxReadOnly,
// each absolute, valid UTF-8 and free of NUL.
func checkReadOnlyForm(ro []string) error {
	if len(ro) > MaxReadOnly {
		return reject("ro", "ro has %d paths; the limit is %d", len(ro), MaxReadOnly)
	}
	for i, p := range ro {
		switch {
		case p == "":
			return reject("ro", "ro[%d] is empty", i)
		case !utf8.ValidString(p):
			return reject("ro", "ro[%d] is not valid UTF-8", i)
		case strings.IndexByte(p, 0) >= 0:
			return reject("ro", "ro[%d] contains a NUL character", i)
		case !filepath.IsAbs(p):
			return reject("ro", "ro[%d] %q is not an absolute path", i, p)
		}
	}
	return nil
}

// CheckCommand checks an argv: 1..MaxArgs elements, each non-empty, valid
// UTF-8, free of NUL and at most MaxArgBytes long, and at most
// MaxCommandBytes in total (the sum of the elements' byte lengths). It does
// not apply the shell rule (see IsShell).
func CheckCommand(argv []string) error {
	if argv == nil {
		return reject("command", "command is required")
	}
	if len(argv) < 1 || len(argv) > MaxArgs {
		return reject("command", "command must have 1 to %d elements, not %d", MaxArgs, len(argv))
	}
	total := 0
	for i, arg := range argv {
		switch {
		case arg == "":
			return reject("command", "command[%d] is empty", i)
		case !utf8.ValidString(arg):
			return reject("command", "command[%d] is not valid UTF-8", i)
		case strings.IndexByte(arg, 0) >= 0:
			return reject("command", "command[%d] contains a NUL character", i)
		case len(arg) > MaxArgBytes:
			return reject("command", "command[%d] is %d bytes long; the limit is %d", i, len(arg), MaxArgBytes)
		}
		total += len(arg)
	}
	if total > MaxCommandBytes {
		return reject("command", "command is %d bytes long in total; the limit is %d", total, MaxCommandBytes)
	}
	return nil
}

// shellNames are the shells refused as command[0], as the Docker sandbox
// tool lists them.
var shellNames = []string{
	"ash", "bash", "cmd", "csh", "dash", "fish", "ksh",
	"powershell", "pwsh", "sh", "tcsh", "zsh",
}

// ShellNames returns the names IsShell matches, in order.
func ShellNames() []string { return append([]string(nil), shellNames...) }

// IsShell reports whether argv0 names a shell: its base name (after the last
// '/' or '\'), without one trailing ".exe", equals one of ShellNames under
// Unicode case folding ("BASH.EXE", "/bin/sh" and "C:\\x\\Cmd.exe" are
// shells).
//
// The rule looks at argv[0] only. It keeps a model from wrapping commands in
// a shell by accident; it is not a security boundary (`env sh -c` or
// `busybox sh` pass it), the sandbox is.
func IsShell(argv0 string) bool {
	base := argv0[strings.LastIndexAny(argv0, `/\`)+1:]
	if n := len(base); n >= 4 && strings.EqualFold(base[n-4:], ".exe") {
		base = base[:n-4]
	}
	for _, s := range shellNames {
		if strings.EqualFold(base, s) {
			return true
		}
	}
	return false
}

func checkWorkspaceForm(ws string) error {
	switch {
	case ws == "":
		return reject("workspace", "workspace is required")
	case strings.IndexByte(ws, 0) >= 0:
		return reject("workspace", "workspace contains a NUL character")
	case !filepath.IsAbs(ws):
		return reject("workspace", "workspace %q is not an absolute path", ws)
	}
	return nil
}

// checkRelForm checks a path meant to be relative to the workspace without
// looking at the disk: no NUL, not absolute, and, once cleaned, not starting
// with "..". The last rule also refuses paths that leave the workspace and
// come back ("../ws/x"), which is stricter than resolving them.
func checkRelForm(field, rel string) error {
	switch {
	case strings.IndexByte(rel, 0) >= 0:
		return reject(field, "%s contains a NUL character", field)
	case filepath.IsAbs(rel):
		// An absolute cwd names a place by itself, not one inside the
		// workspace: it is an escape, reported as such (the wording does
		// not depend on what exists there).
		return escape(field, rel)
	}
	if c := filepath.Clean(rel); c == ".." || strings.HasPrefix(c, "../") {
		return escape(field, rel)
	}
	return nil
}

func escape(field, rel string) *RejectError {
	return rejectErr(field, ErrEscape, "%s %q: %v", field, rel, ErrEscape)
}
