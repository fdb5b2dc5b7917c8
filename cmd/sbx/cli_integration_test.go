package main

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// runHelpFlags are the flags of "sbx run" that the help must explain.
var runHelpFlags = []string{"workspace", "w", "write", "ro", "rw", "home", "env", "memory", "cpus", "pids", "timeout", "tty", "policy", "violations", "allow-host", "net",
	"no-discover", "publish",
	// profiles, config, settings, masks (#18, #20)
	"profile", "no-profile", "settings", "tighten-settings", "mask", "protect", "quiet"}

func TestVersion(t *testing.T) {
	b := newBox(t)
	for _, arg := range []string{"version", "--version"} {
		r := b.sbx(opts{}, arg)
		if r.code != 0 || !regexp.MustCompile(`^sbx \S+\n$`).MatchString(r.stdout) || r.stderr != "" {
			t.Errorf("sbx %s: want exit 0 and one line \"sbx VERSION\"\n%v", arg, r)
		}
	}
}

func TestHelp(t *testing.T) {
	b := newBox(t)
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		r := b.sbx(opts{}, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "sbx run [flags] -- CMD [ARGS...]") || !strings.Contains(r.stdout, "sbx version") {
			t.Errorf("sbx %q: want exit 0 and the usage of run and version\n%v", args, r)
		}
	}
	var helps []string
	for _, args := range [][]string{{"run", "--help"}, {"run", "-h"}, {"help", "run"}} {
		r := b.sbx(opts{}, args...)
		if r.code != 0 || r.stderr != "" {
			t.Errorf("sbx %q: want exit 0, help on stdout\n%v", args, r)
		}
		helps = append(helps, r.stdout)
	}
	for i, h := range helps[1:] {
		if h != helps[0] {
			t.Errorf("help %d differs from sbx run --help:\n%s", i+1, h)
		}
	}
	documented := helpFlags(helps[0])
	want := slices.Sorted(slices.Values(runHelpFlags))
	if !slices.Equal(documented, want) {
		t.Errorf("flags in sbx run --help = %q, want %q", documented, want)
	}
	for _, word := range []string{"124", "125", "126", "127", "128+N", "read-only", "--write"} {
		if !strings.Contains(helps[0], word) {
			t.Errorf("sbx run --help does not mention %q", word)
		}
	}
}

// helpFlags returns the flag names (without dashes) of the Flags section of
// sbx run --help, sorted and without repeats.
func helpFlags(help string) []string {
	_, section, ok := strings.Cut(help, "\nFlags:\n")
	if !ok {
		return nil
	}
	section, _, _ = strings.Cut(section, "\n\n")
	re := regexp.MustCompile(`^  (?:-(\w), )?--([a-z][a-z-]*)`)
	var names []string
	for _, l := range strings.Split(section, "\n") {
		m := re.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if m[1] != "" {
			names = append(names, m[1])
		}
		names = append(names, m[2])
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// TestDocumentedFlagsParse checks that every documented flag is one the
// parser accepts (followed by --help, so nothing runs), and that an
// unknown one is refused.
func TestDocumentedFlagsParse(t *testing.T) {
	b := newBox(t)
	values := map[string][]string{
		"workspace": {b.ws}, "ro": {b.ws}, "rw": {b.ws}, "home": {"tmp"}, "env": {"A=B"},
		"memory": {"64m"}, "cpus": {"0.5"}, "pids": {"10"}, "timeout": {"1s"}, "tty": {"never"},
		"policy": {"auto"}, "violations": {filepath.Join(b.tempDir(), "v.jsonl")},
		"allow-host": {"api.example.com"}, "net": {"loopback"}, "publish": {"8080"},
		"profile": {"claude"}, "settings": {"s.json"}, "tighten-settings": {"s.json"}, "mask": {".env"}, "protect": {".env"},
	}
	for _, f := range runHelpFlags {
		dash := "--"
		if len(f) == 1 {
			dash = "-"
		}
		args := append(append([]string{"run", dash + f}, values[f]...), "--help")
		r := b.sbx(opts{}, args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "Usage: sbx run") {
			t.Errorf("sbx %q: flag not accepted\n%v", args, r)
		}
	}
	r := b.sbx(opts{}, "run", "--no-such-flag", "--help")
	if r.code != exitSbxError {
		t.Errorf("unknown flag: want 125\n%v", r)
	}
}

func TestExitStatus(t *testing.T) {
	b := newBox(t)
	writeFile(t, filepath.Join(b.ws, "notexec.sh"), "#!/bin/sh\necho ran\n", 0o644)
	writeFile(t, filepath.Join(b.ws, "exec.sh"), "#!/bin/sh\necho ran\n", 0o755)
	for _, c := range []struct {
		name   string
		argv   []string
		code   int
		stdout string
		stderr string
	}{
		{"success", []string{"true"}, 0, "", ""},
		{"status 7", []string{"sh", "-c", "exit 7"}, 7, "", ""},
		{"false", []string{"false"}, 1, "", ""},
		{"SIGTERM", []string{"sh", "-c", "kill -TERM $$"}, 128 + 15, "", ""},
		{"SIGKILL", []string{"sh", "-c", "kill -9 $$"}, 128 + 9, "", ""},
		{"SIGSEGV", []string{"sh", "-c", "kill -SEGV $$"}, 128 + 11, "", ""},
		{"executable script", []string{"./exec.sh"}, 0, "ran\n", ""},
		{"not executable", []string{"./notexec.sh"}, 126, "", "sbx: ./notexec.sh: permission denied\n"},
		{"directory", []string{"/usr"}, 126, "", "sbx: /usr: is a directory\n"},
		{"not found on PATH", []string{"nosuch-sbx-command"}, 127, "", "sbx: nosuch-sbx-command: command not found\n"},
		{"missing path", []string{"/nonexistent/sbx-cmd"}, 127, "", "sbx: /nonexistent/sbx-cmd: no such file or directory\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := b.in(t).run(append([]string{"--"}, c.argv...)...)
			if r.code != c.code || r.stdout != c.stdout || r.stderr != c.stderr {
				t.Errorf("sbx run -- %q: want exit %d, stdout %q, stderr %q\n%v", c.argv, c.code, c.stdout, c.stderr, r)
			}
		})
	}
	// The 126/127 conventions are the shell's: the same commands give the
	// same statuses on the host.
	t.Run("host control", func(t *testing.T) {
		t.Parallel()
		for cmd, code := range map[string]int{"./notexec.sh": 126, "nosuch-sbx-command": 127, "./exec.sh": 0} {
			if r := b.in(t).host(opts{}, "sh", "-c", cmd); r.code != code {
				t.Errorf("host sh -c %s: want %d\n%v", cmd, code, r)
			}
		}
	})
}

func TestTimeout(t *testing.T) {
	b := newBox(t)
	for _, argv := range [][]string{
		{"sleep", "30"},
		// A background child does not keep the sandbox alive.
		{"sh", "-c", "sleep 31 & sleep 32; wait"},
	} {
		r := b.run(append([]string{"--timeout", "1s", "--"}, argv...)...)
		if r.code != 124 || r.stderr != "sbx: timed out after 1s: killed the sandbox\n" {
			t.Errorf("--timeout 1s %q: want 124 and the timeout line\n%v", argv, r)
		}
		if r.elapsed < time.Second || r.elapsed > 15*time.Second {
			t.Errorf("--timeout 1s %q took %v: the sandbox was not killed at the timeout", argv, r.elapsed)
		}
	}
	// Control: a program that ends before the timeout keeps its status.
	if r := b.run("--timeout", "10s", "--", "sh", "-c", "exit 3"); r.code != 3 || r.stderr != "" {
		t.Errorf("--timeout 10s, exit 3: want 3\n%v", r)
	}
}

// TestSetupErrors covers sbx's own failures: status 125, one "sbx: " line
// naming what failed, nothing run and nothing created on disk.
// TestSetupErrorLeavesNoViolationsFile: a run refused during setup removes
// the --violations file it created (bad input changes nothing on disk),
// keeps one that was there, and a run that starts creates it.
func TestSetupErrorLeavesNoViolationsFile(t *testing.T) {
	b := newBox(t)
	dir := b.tempDir()
	for _, bad := range [][]string{{"--home", "/nonexistent/sbx-home"}, {"--ro", "/nonexistent/sbx-ro"}} {
		v := filepath.Join(dir, "new.jsonl")
		r := b.run(append(append([]string{"--violations", v}, bad...), "--", "true")...)
		if r.code != exitSbxError {
			t.Fatalf("%q: got %v, want exit 125", bad, r)
		}
		if _, err := os.Stat(v); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%q: refused run left %s behind (stat: %v)", bad, v, err)
		}
	}
	kept := filepath.Join(dir, "kept.jsonl")
	writeFile(t, kept, "", 0o600)
	chownToUser(t, kept)
	if r := b.run("--violations", kept, "--home", "/nonexistent/sbx-home", "--", "true"); r.code != exitSbxError {
		t.Fatalf("got %v, want exit 125", r)
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("refused run removed the violations file that was there: %v", err)
	}
	v := filepath.Join(dir, "ran.jsonl")
	if r := b.run("--violations", v, "--", "true"); r.code != 0 {
		t.Fatalf("control run: %v", r)
	}
	if _, err := os.Stat(v); err != nil {
		t.Errorf("a run that started did not create its violations file: %v", err)
	}
}

func TestSetupErrors(t *testing.T) {
	b := newBox(t)
	for _, c := range []struct {
		name string
		args []string
		want string // in the error line
	}{
		{"unknown flag", []string{"run", "--bogus", "--", "true"}, "unknown flag --bogus"},
		{"bad --memory", []string{"run", "--memory", "lots", "--", "true"}, `--memory "lots"`},
		{"tiny --memory", []string{"run", "--memory", "1k", "--", "true"}, "below the 4 MiB minimum"},
		{"bad --cpus", []string{"run", "--cpus", "0", "--", "true"}, "--cpus"},
		{"bad --pids", []string{"run", "--pids", "-1", "--", "true"}, "--pids"},
		{"too few --pids", []string{"run", "--pids", "11", "--", "true"}, "--pids 11: want a count from 16 to 4194304"},
		{"too many --pids", []string{"run", "--pids", "99999999", "--", "true"}, "want a count from 16"},
		{"tiny --cpus", []string{"run", "--cpus", "0.001", "--", "true"}, "--cpus 0.001: want a number of cores from 0.01 to 1024"},
		{"bad --timeout", []string{"run", "--timeout", "soon", "--", "true"}, `--timeout: "soon" is not a duration (e.g. 10s, 2m)`},
		{"negative --timeout", []string{"run", "--timeout", "-1s", "--", "true"}, "--timeout"},
		{"bad --tty", []string{"run", "--tty", "sometimes", "--", "true"}, "--tty"},
		{"--tty always without a terminal", []string{"run", "--tty", "always", "--", "true"}, "terminal"},
		{"--ro missing", []string{"run", "--ro", "/nonexistent/sbx-ro", "--", "true"}, "--ro /nonexistent/sbx-ro: no such file or directory"},
		{"--rw missing", []string{"run", "--rw", "/nonexistent/sbx-rw", "--", "true"}, "--rw /nonexistent/sbx-rw: no such file or directory"},
		{"--workspace missing", []string{"run", "--workspace", "/nonexistent/sbx-ws", "--", "true"}, "workspace /nonexistent/sbx-ws: no such file or directory"},
		{"--workspace /", []string{"run", "--workspace", "/", "--", "true"}, "workspace /"},
		{"--home missing", []string{"run", "--home", "/nonexistent/sbx-home", "--", "true"}, "/nonexistent/sbx-home"},
		{"bad --policy", []string{"run", "--policy", "magic", "--", "true"}, "--policy"},
		{"--violations unwritable", []string{"run", "--violations", "/nonexistent/dir/v.jsonl", "--", "true"}, "--violations"},
		{"bad --env", []string{"run", "--env", "1BAD=x", "--", "true"}, `--env "1BAD=x"`},
		{"no command", []string{"run"}, "no command given"},
		{"no command after --", []string{"run", "--"}, "no command given"},
		{"flags but no command", []string{"run", "--write"}, "no command given"},
		{"unknown subcommand", []string{"frob"}, `unknown command "frob"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := b.in(t)
			data := b.tempDir()
			r := b.sbx(opts{env: []string{"XDG_DATA_HOME=" + data}}, c.args...)
			l := lines(r.stderr)
			if r.code != exitSbxError || r.stdout != "" || len(l) != 1 || !strings.HasPrefix(l[0], "sbx: ") || !strings.Contains(l[0], c.want) {
				t.Errorf("sbx %q: want exit 125, no stdout, one \"sbx: ...%s...\" line\n%v", c.args, c.want, r)
			}
			if len(r.ids) > 0 {
				t.Errorf("sbx %q: created sandbox %v despite bad input", c.args, r.ids)
			}
			if r.notes > 0 {
				t.Errorf("sbx %q: bad input printed the rlimit note besides its error", c.args)
			}
			if entries, _ := os.ReadDir(data); len(entries) > 0 {
				t.Errorf("sbx %q: bad input created %s/%s (bad input must change nothing on disk)", c.args, data, entries[0].Name())
			}
			if entries, _ := os.ReadDir(b.ws); len(entries) > 0 {
				t.Errorf("sbx %q: bad input created %s in the workspace", c.args, entries[0].Name())
			}
		})
	}
}
