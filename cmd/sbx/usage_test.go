package main

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// updateGolden rewrites the golden files under testdata/help:
// go test -tags seccomp ./cmd/sbx -run 'TestHelpGolden' -update
var updateGolden = flag.Bool("update", false, "rewrite the golden files")

// sbxIn runs the CLI in process with no stdin.
func sbxIn(args ...string) (code int, stdout, stderr string) {
	var out, errb strings.Builder
	code = sbxMain(args, streams{out: &out, err: &errb})
	return code, out.String(), errb.String()
}

// TestUsageExitCodes: every usage error is 125 with one "sbx:" line (or
// the usage) on stderr and nothing on stdout; help is 0 on stdout. None of
// these starts a sandbox: each fails before runner.Run.
func TestUsageExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string // substring; "" wants an empty stderr
	}{
		{"bare sbx", nil, 125, "Usage:"},
		{"unknown command", []string{"frob"}, 125, `sbx: unknown command "frob"`},
		{"help", []string{"help"}, 0, ""},
		{"--help", []string{"--help"}, 0, ""},
		{"-h", []string{"-h"}, 0, ""},
		{"help run", []string{"help", "run"}, 0, ""},
		{"help version", []string{"help", "version"}, 0, ""},
		{"help unknown", []string{"help", "frob"}, 125, `sbx: help: unknown command "frob"`},
		{"run --help", []string{"run", "--help"}, 0, ""},
		{"exec --help", []string{"exec", "--help"}, 0, ""},
		{"run no command", []string{"run"}, 125, "sbx: run: no command given"},
		{"run unknown flag", []string{"run", "--frob", "--", "true"}, 125, "sbx: run: unknown flag --frob (see sbx run --help)\n"},
		{"run near miss", []string{"run", "--timout", "1s", "--", "true"}, 125, "sbx: run: unknown flag --timout (did you mean --timeout?) (see sbx run --help)\n"},
		{"run single-dash near miss", []string{"run", "-worksapce", "x", "--", "true"}, 125, "sbx: run: unknown flag --worksapce (did you mean --workspace?)"},
		{"run prefix", []string{"run", "--allow", "x", "--", "true"}, 125, "unknown flag --allow (did you mean --allow-host?)"},
		{"run timeout without unit", []string{"run", "--timeout", "10", "--", "true"}, 125, "sbx: run: --timeout: \"10\" is not a duration (e.g. 10s, 2m) (see sbx run --help)\n"},
		{"run -timeout form", []string{"run", "-timeout=x", "--", "true"}, 125, "sbx: run: --timeout: \"x\" is not a duration (e.g. 10s, 2m)"},
		{"run cpus", []string{"run", "--cpus", "one", "--", "true"}, 125, "sbx: run: --cpus: \"one\" is not a number (e.g. 1, 0.5)"},
		{"run pids", []string{"run", "--pids", "1.5", "--", "true"}, 125, "sbx: run: --pids: \"1.5\" is not a whole number (e.g. 4096)"},
		{"run bool", []string{"run", "--write=maybe", "--", "true"}, 125, "sbx: run: --write: \"maybe\" is not true or false"},
		{"run missing value", []string{"run", "--timeout"}, 125, "sbx: run: --timeout needs a value (e.g. 10s, 2m)"},
		{"run missing string value", []string{"run", "--workspace"}, 125, "sbx: run: --workspace needs a value (see"},
		{"exec unknown flag", []string{"exec", "--requst", "x"}, 125, "sbx: exec: unknown flag --requst (did you mean --request?)"},
		{"exec argument", []string{"exec", "ls"}, 125, "sbx: exec: unexpected argument"},
		{"run -w after the command", []string{"run", "--frob=1", "--", "-w"}, 125, "unknown flag --frob"},
		{"help after a bad flag", []string{"run", "--help", "--frob"}, 0, ""},
		{"help=false", []string{"run", "--help=false"}, 125, "sbx: run: no command given"},
		{"features --help", []string{"features", "--help"}, 0, ""},
		{"features argument", []string{"features", "x"}, 125, "sbx: features: unexpected argument"},
		{"help features", []string{"help", "features"}, 0, ""},
		{"hidden docs not in help", []string{"help", docsCommand}, 125, "unknown command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errText := sbxIn(tc.args...)
			if code != tc.code {
				t.Errorf("sbx %q: exit %d, want %d\nstderr: %s", tc.args, code, tc.code, errText)
			}
			if tc.stderr == "" && errText != "" || !strings.Contains(errText, tc.stderr) {
				t.Errorf("sbx %q: stderr %q, want %q in it", tc.args, errText, tc.stderr)
			}
			if tc.code != 0 && out != "" {
				t.Errorf("sbx %q: a usage error wrote to stdout: %q", tc.args, out)
			}
			if tc.code == 0 && out == "" {
				t.Errorf("sbx %q: help printed nothing on stdout", tc.args)
			}
		})
	}
}

// TestFlagError covers parseFlags's errors directly, including the texts
// no command line of sbx's reaches, and what it parses: an alias sets its
// flag by the flag's name, and parsing stops at the first argument that is
// no flag (the program's own, never read as sbx's).
func TestFlagError(t *testing.T) {
	newFS := func() *flag.FlagSet {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(&strings.Builder{})
		fs.Duration("timeout", 0, "`DUR` d")
		fs.Int64("pids", 256, "`N` n")
		fs.Bool("write", false, "w")
		fs.String("net", "loopback", "`MODE` m")
		fs.Float64("cpus", 1, "`N` c")
		return fs
	}
	aliases := map[string]string{"w": "write"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--timeout", "10"}, `--timeout: "10" is not a duration (e.g. 10s, 2m)`},
		{[]string{"--pids=x"}, `--pids: "x" is not a whole number (e.g. 256)`},
		{[]string{"--cpus=x"}, `--cpus: "x" is not a number (e.g. 1, 0.5)`},
		{[]string{"--nett", "x"}, `unknown flag --nett (did you mean --net?)`},
		{[]string{"--zzzzzz"}, `unknown flag --zzzzzz`},
		{[]string{"-x"}, `unknown flag -x`},
		{[]string{"--net"}, `--net needs a value`},
		{[]string{"--timeout"}, `--timeout needs a value (e.g. 10s, 2m)`},
		{[]string{"---net"}, `bad flag syntax "---net"`},
		{[]string{"-=x"}, `bad flag syntax "-=x"`},
		{[]string{"--write=2"}, `--write: "2" is not true or false`},
		{[]string{"-w=2"}, `--write: "2" is not true or false`},
	} {
		_, _, err := parseFlags(newFS(), aliases, tc.args)
		if err == nil {
			t.Fatalf("%q parsed", tc.args)
		}
		if got := err.Error(); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.args, got, tc.want)
		}
	}
	for _, tc := range []struct {
		args, rest []string
		set        string // the flags set, by name, in order
	}{
		{[]string{"-w", "--net", "none", "--", "-w", "--net"}, []string{"-w", "--net"}, "net write"},
		{[]string{"--net=host", "ls", "-w"}, []string{"ls", "-w"}, "net"},
		{[]string{"-timeout=1s", "-", "x"}, []string{"-", "x"}, "timeout"},
		{[]string{"--write", "false"}, []string{"false"}, "write"},
		{nil, nil, ""},
	} {
		fs := newFS()
		rest, help, err := parseFlags(fs, aliases, tc.args)
		var set []string
		fs.Visit(func(f *flag.Flag) { set = append(set, f.Name) })
		if err != nil || help || !slices.Equal(rest, tc.rest) || strings.Join(set, " ") != tc.set {
			t.Errorf("%q: rest %q help %v err %v set %q; want rest %q set %q", tc.args, rest, help, err, set, tc.rest, tc.set)
		}
	}
}

func TestNearestFlag(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	for _, n := range []string{"workspace", "write", "w", "ro", "rw", "timeout", "tty", "net"} {
		fs.Bool(n, false, "x")
	}
	for _, tc := range []struct{ in, want string }{
		{"timout", "timeout"}, {"writ", "write"}, {"WRITE", "write"}, {"work", "workspace"},
		{"r", "ro"}, {"frobnicate", ""}, {"nte", "net"}, {"tyy", "tty"}, {"frob", ""}, {"wx", ""},
	} {
		if got := nearestFlag(fs, tc.in); got != tc.want {
			t.Errorf("nearestFlag(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestFlagEntries: a flag without usage text is an error; entries keep
// the table's aliases and the usage's placeholders.
func TestFlagEntries(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	var w bool
	var d time.Duration
	fs.BoolVar(&w, "write", false, "make it writable")
	fs.DurationVar(&d, "timeout", 0, "`DUR` kill after DUR")
	got, err := flagEntries(fs, map[string]string{"w": "write"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || strings.Join(got[0].names, ",") != "timeout" || got[0].arg != "DUR" || got[0].text != "kill after DUR" ||
		strings.Join(got[1].names, ",") != "w,write" || got[1].arg != "" {
		t.Errorf("entries %+v", got)
	}
	fs.String("undocumented", "", "")
	if _, err := flagEntries(fs, nil); err == nil || !strings.Contains(err.Error(), "--undocumented has no usage text") {
		t.Errorf("undocumented flag: err %v", err)
	}
}

// TestHelpGolden: the help texts, as users see them, against
// testdata/help (rerun with -update after a deliberate change).
func TestHelpGolden(t *testing.T) {
	for _, tc := range []struct {
		file string
		args []string
	}{
		{"sbx.txt", []string{"--help"}},
		{"run.txt", []string{"run", "--help"}},
		{"exec.txt", []string{"exec", "--help"}},
		{"doctor.txt", []string{"doctor", "--help"}},
		{"features.txt", []string{"features", "--help"}},
	} {
		code, out, _ := sbxIn(tc.args...)
		if code != 0 {
			t.Fatalf("sbx %q: exit %d", tc.args, code)
		}
		// The one host-dependent line: run's default limits here.
		out = strings.Replace(out, hostDefaults(), "Default limits on this host: HOST-SIZED\n", 1)
		path := filepath.Join("testdata", "help", tc.file)
		if *updateGolden {
			if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if out != string(want) {
			t.Errorf("sbx %q differs from %s (rerun with -update if intended):\n%s", tc.args, path, out)
		}
		for i, l := range strings.Split(out, "\n") {
			if len(l) > 80 {
				t.Errorf("%s line %d is %d characters wide: %q", tc.file, i+1, len(l), l)
			}
		}
	}
}
