package gate

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"
)

// args returns n copies of s.
func args(n int, s string) []string {
	a := make([]string, n)
	for i := range a {
		a[i] = s
	}
	return a
}

func TestCheckCommand(t *testing.T) {
	long := strings.Repeat("a", MaxArgBytes)
	// 8 arguments of 16384 bytes are exactly 128 KiB.
	full := args(MaxCommandBytes/MaxArgBytes, long)
	tests := []struct {
		name string
		argv []string
		msg  string // "" means accepted
	}{
		{"one arg", []string{"ls"}, ""},
		{"nil", nil, "command is required"},
		{"empty", []string{}, "command must have 1 to 128 elements, not 0"},
		{"128 args", args(128, "x"), ""},
		{"129 args", args(129, "x"), "command must have 1 to 128 elements, not 129"},
		{"empty arg", []string{"ls", ""}, "command[1] is empty"},
		{"empty argv0", []string{""}, "command[0] is empty"},
		{"16384 bytes", []string{long}, ""},
		{"16385 bytes", []string{long + "a"}, "command[0] is 16385 bytes long; the limit is 16384"},
		// 5461 three-byte characters (16383 bytes) + 1 byte = 16384: the limit is bytes.
		{"16384 bytes multibyte", []string{strings.Repeat("€", 5461) + "a"}, ""},
		{"16386 bytes multibyte", []string{strings.Repeat("€", 5462)}, "command[0] is 16386 bytes long; the limit is 16384"},
		{"total 128 KiB", full, ""},
		{"total 128 KiB + 1", append(append([]string{}, full...), "x"), "command is 131073 bytes long in total; the limit is 131072"},
		{"total exact with many args", append(args(7, long), strings.Repeat("b", MaxArgBytes-10), "0123456789"), ""},
		{"NUL", []string{"ls", "a\x00b"}, "command[1] contains a NUL character"},
		{"NUL alone", []string{"\x00"}, "command[0] contains a NUL character"},
		{"invalid UTF-8", []string{"ls", "\xff"}, "command[1] is not valid UTF-8"},
		{"encoded surrogate", []string{"\xed\xa0\x80"}, "command[0] is not valid UTF-8"},
		{"spaces fine", []string{"echo", " ", "a b"}, ""},
		{"newline fine", []string{"echo", "a\nb"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkRejectMsg(t, CheckCommand(tt.argv), "command", tt.msg)
		})
	}
}

// checkRejectMsg fails unless err matches msg exactly ("" for no error) and
// is a *RejectError for field.
func checkRejectMsg(t *testing.T, err error, field, msg string) {
	t.Helper()
	if msg == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("accepted; want %q", msg)
	}
	var re *RejectError
	if !errors.As(err, &re) {
		t.Fatalf("error %v is %T, not *RejectError", err, err)
	}
	if err.Error() != msg {
		t.Errorf("error = %q, want %q", err, msg)
	}
	if re.Field != field {
		t.Errorf("Field = %q, want %q", re.Field, field)
	}
}

func TestIsShell(t *testing.T) {
	var yes []string
	for _, s := range ShellNames() {
		yes = append(yes, s, strings.ToUpper(s), s+".exe", strings.ToUpper(s)+".EXE",
			"/bin/"+s, "/usr/local/bin/"+s, `C:\Windows\System32\`+s+".exe", "./"+s, "../x/"+s+".Exe")
	}
	yes = append(yes, "BASH.EXE", "/bin/sh", "Bash", "PwSh.eXe", "/bin/../bin/zsh",
		"\u212Ash",   // KELVIN SIGN folds to k
		"\u017Fh",    // LATIN SMALL LETTER LONG S folds to s
		"dir/x\\ash", // backslash is a separator too
	)
	for _, s := range yes {
		if !IsShell(s) {
			t.Errorf("IsShell(%q) = false, want true", s)
		}
	}
	no := []string{
		"ls", "python3", "bash5", "shh", "s", "", "/bin/", "sh/", "sh.exe.exe", "bash.sh", "sh.ex",
		"xsh", "sh ", " sh", "bashful", "/bin/sh/x", "zsh-5.9", "env", "busybox", ".exe", "sh.exe.",
	}
	for _, s := range no {
		if IsShell(s) {
			t.Errorf("IsShell(%q) = true, want false", s)
		}
	}
	want := []string{"ash", "bash", "cmd", "csh", "dash", "fish", "ksh", "powershell", "pwsh", "sh", "tcsh", "zsh"}
	if got := ShellNames(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("ShellNames() = %v, want %v", got, want)
	}
	ShellNames()[0] = "mutated"
	if ShellNames()[0] != "ash" {
		t.Error("ShellNames returns the package's own slice")
	}
}

func TestCheckStatic(t *testing.T) {
	base := func(mod func(*Request)) Request {
		r := Request{Command: []string{"ls"}, Workspace: "/w"}
		mod(&r)
		return r
	}
	shellMsg := func(s string) string {
		return `command[0] "` + s + `" is a shell wrapper; shells are refused unless allowShell=true and confirmShell=true`
	}
	tests := []struct {
		name  string
		req   Request
		field string
		msg   string
	}{
		{"ok", base(func(r *Request) {}), "", ""},
		{"write confirmed", base(func(r *Request) { r.Write, r.ConfirmWrite = true, true }), "", ""},
		{"write alone", base(func(r *Request) { r.Write = true }), "write", MsgWriteNeedsConfirm},
		{"confirmWrite alone is harmless", base(func(r *Request) { r.ConfirmWrite = true }), "", ""},
		{"allowShell alone", base(func(r *Request) { r.AllowShell = true }), "allowShell", MsgShellNeedsConfirm},
		{"allowShell alone with a shell", base(func(r *Request) { r.Command = []string{"sh"}; r.AllowShell = true }), "allowShell", MsgShellNeedsConfirm},
		{"confirmShell alone with a shell", base(func(r *Request) { r.Command = []string{"sh"}; r.ConfirmShell = true }), "command", shellMsg("sh")},
		{"shell allowed", base(func(r *Request) { r.Command = []string{"bash", "-c", "x"}; r.AllowShell, r.ConfirmShell = true, true }), "", ""},
		{"ro absolute", base(func(r *Request) { r.ReadOnly = []string{"/opt/x", "/home/u/.nvm"} }), "", ""},
		{"ro relative", base(func(r *Request) { r.ReadOnly = []string{"opt/x"} }), "ro", `ro[0] "opt/x" is not an absolute path`},
		{"ro empty path", base(func(r *Request) { r.ReadOnly = []string{"/a", ""} }), "ro", "ro[1] is empty"},
		{"ro NUL", base(func(r *Request) { r.ReadOnly = []string{"/a\x00b"} }), "ro", "ro[0] contains a NUL character"},
		{"ro too many", base(func(r *Request) { r.ReadOnly = make([]string, MaxReadOnly+1) }), "ro", "ro has 17 paths; the limit is 16"},
		{"shell BASH.EXE", base(func(r *Request) { r.Command = []string{"BASH.EXE", "-c", "x"} }), "command", shellMsg("BASH.EXE")},
		{"shell /bin/sh", base(func(r *Request) { r.Command = []string{"/bin/sh", "-c", "x"} }), "command", shellMsg("/bin/sh")},
		{"shell later is fine", base(func(r *Request) { r.Command = []string{"env", "sh"} }), "", ""},
		{"write checked before shell", base(func(r *Request) { r.Command = []string{"sh"}; r.Write = true }), "write", MsgWriteNeedsConfirm},
		{"command checked first", base(func(r *Request) { r.Command = []string{""}; r.Write = true }), "command", "command[0] is empty"},
		{"timeout default", base(func(r *Request) { r.TimeoutMs = 0 }), "", ""},
		{"timeout 1", base(func(r *Request) { r.TimeoutMs = 1 }), "", ""},
		{"timeout max", base(func(r *Request) { r.TimeoutMs = 120000 }), "", ""},
		{"timeout over", base(func(r *Request) { r.TimeoutMs = 120001 }), "timeoutMs", "timeoutMs must be between 1 and 120000 (milliseconds), not 120001"},
		{"timeout negative", base(func(r *Request) { r.TimeoutMs = -5 }), "timeoutMs", "timeoutMs must be between 1 and 120000 (milliseconds), not -5"},
		{"workspace empty", base(func(r *Request) { r.Workspace = "" }), "workspace", "workspace is required"},
		{"workspace relative", base(func(r *Request) { r.Workspace = "w" }), "workspace", `workspace "w" is not an absolute path`},
		{"workspace dot", base(func(r *Request) { r.Workspace = "./w" }), "workspace", `workspace "./w" is not an absolute path`},
		{"workspace NUL", base(func(r *Request) { r.Workspace = "/w\x00" }), "workspace", "workspace contains a NUL character"},
		{"cwd fine", base(func(r *Request) { r.Cwd = "a/b/../c" }), "", ""},
		{"cwd dot", base(func(r *Request) { r.Cwd = "." }), "", ""},
		{"cwd absolute", base(func(r *Request) { r.Cwd = "/w/a" }), "cwd", `cwd "/w/a": path escapes workspace: permission denied`},
		{"cwd NUL", base(func(r *Request) { r.Cwd = "a\x00" }), "cwd", "cwd contains a NUL character"},
		{"cwd dotdot", base(func(r *Request) { r.Cwd = ".." }), "cwd", `cwd "..": path escapes workspace: permission denied`},
		{"cwd dotdot slash", base(func(r *Request) { r.Cwd = "../" }), "cwd", `cwd "../": path escapes workspace: permission denied`},
		{"cwd up", base(func(r *Request) { r.Cwd = "../../etc" }), "cwd", `cwd "../../etc": path escapes workspace: permission denied`},
		{"cwd down and up", base(func(r *Request) { r.Cwd = "a/../../b" }), "cwd", `cwd "a/../../b": path escapes workspace: permission denied`},
		{"cwd sibling", base(func(r *Request) { r.Cwd = "../w-evil" }), "cwd", `cwd "../w-evil": path escapes workspace: permission denied`},
		{"cwd out and back", base(func(r *Request) { r.Cwd = "../w/x" }), "cwd", `cwd "../w/x": path escapes workspace: permission denied`},
		{"cwd dotdot name is fine", base(func(r *Request) { r.Cwd = "..x/..." }), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkRejectMsg(t, tt.req.CheckStatic(), tt.field, tt.msg)
		})
	}
}

func TestEscapeErrorMatchesPermission(t *testing.T) {
	err := Request{Command: []string{"ls"}, Workspace: "/w", Cwd: "../x"}.CheckStatic()
	if !errors.Is(err, ErrEscape) {
		t.Errorf("errors.Is(%v, ErrEscape) = false", err)
	}
	if !IsRejected(err) {
		t.Errorf("IsRejected(%v) = false", err)
	}
	if !errors.Is(err, fs.ErrPermission) {
		t.Errorf("errors.Is(%v, fs.ErrPermission) = false", err)
	}
	if errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an escape must not read as does-not-exist: %v", err)
	}
}

func TestTimeoutAndWritable(t *testing.T) {
	if got := (Request{}).Timeout(); got != MaxTimeout {
		t.Errorf("default Timeout = %v, want %v", got, MaxTimeout)
	}
	if got := (Request{TimeoutMs: 1500}).Timeout(); got != 1500*time.Millisecond {
		t.Errorf("Timeout = %v, want 1.5s", got)
	}
	if MaxTimeoutMs*time.Millisecond != MaxTimeout {
		t.Errorf("MaxTimeoutMs %d disagrees with MaxTimeout %v", MaxTimeoutMs, MaxTimeout)
	}
	if (Request{Write: true}).Writable() || (Request{ConfirmWrite: true}).Writable() || !(Request{Write: true, ConfirmWrite: true}).Writable() {
		t.Error("Writable must need both Write and ConfirmWrite")
	}
}

func TestLimits(t *testing.T) {
	// The container variant's fixed limits; changing one is a decision, not a refactor.
	if MemoryBytes != 512*1024*1024 || CPUs != 1 || Pids != 256 || MaxTimeout != 120*time.Second ||
		CleanupTimeout != 10*time.Second || OutputBudget != 12000 || MaxArgs != 128 ||
		MaxArgBytes != 16384 || MaxCommandBytes != 131072 {
		t.Fatal("a fixed limit changed")
	}
}
