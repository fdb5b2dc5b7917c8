package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runFlagNames returns the flags "sbx run" really registers, captured from
// its flag set the way the generator captures them.
func runFlagNames(t *testing.T) []string {
	t.Helper()
	var sets []*flag.FlagSet
	flagSetCreated = func(fs *flag.FlagSet) { sets = append(sets, fs) }
	defer func() { flagSetCreated = nil }()
	if code := cmdRun([]string{"--help"}, streams{out: io.Discard, err: io.Discard}); code != 0 {
		t.Fatalf("sbx run --help: exit status %d", code)
	}
	if len(sets) != 1 {
		t.Fatalf("sbx run --help made %d flag sets, want 1", len(sets))
	}
	var names []string
	sets[0].VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if len(names) < 10 {
		t.Fatalf("only %d flags captured from sbx run: %v", len(names), names)
	}
	return names
}

// generate runs the hidden "sbx __docs FORMAT" in process.
func generate(t *testing.T, format string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := sbxMain([]string{docsCommand, format}, streams{out: &out, err: &errb}); code != 0 {
		t.Fatalf("sbx %s %s: exit status %d: %s", docsCommand, format, code, errb.String())
	}
	return out.String()
}

// TestDocsCoverRunFlags: every flag "sbx run" registers appears in the man
// page and in the three completions, in each one's own syntax.
func TestDocsCoverRunFlags(t *testing.T) {
	man, bash, zsh, fish := generate(t, "man"), generate(t, "bash"), generate(t, "zsh"), generate(t, "fish")
	for _, name := range runFlagNames(t) {
		dash := "--" + name
		if len(name) == 1 {
			dash = "-" + name
		}
		checks := []struct{ doc, text, want string }{
			{"man page", man, `\fB` + strings.ReplaceAll(dash, "-", `\-`) + `\fR`},
			{"bash completion", bash, dash},
			{"zsh completion", zsh, "'" + dash + "["},
			{"fish completion", fish, map[bool]string{true: " -s " + name + " ", false: " -l " + name + " "}[len(name) == 1]},
		}
		for _, c := range checks {
			if c.doc == "zsh completion" && !strings.Contains(c.text, c.want) {
				c.want = "'*" + dash + "[" // repeatable
			}
			if !strings.Contains(c.text, c.want) {
				t.Errorf("%s lacks run flag %s (looked for %q)", c.doc, dash, c.want)
			}
		}
	}
}

// TestDocsFlagHelp: every flag of every command with a flag set is
// described in that command's --help (collectDocs refuses otherwise), and
// the parser reads arguments, aliases and value lists from it.
func TestDocsFlagHelp(t *testing.T) {
	doc, err := collectDocs()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]cmdDoc{}
	for _, c := range doc.Commands {
		byName[c.Name] = c
	}
	for _, name := range []string{"run", "exec", "doctor", "version", "help"} {
		if _, ok := byName[name]; !ok {
			t.Errorf("command %s missing from the docs (usage parse)", name)
		}
	}
	if !byName["run"].TakesCommand || byName["exec"].TakesCommand {
		t.Errorf("TakesCommand: run %v, exec %v; want true, false", byName["run"].TakesCommand, byName["exec"].TakesCommand)
	}
	flags := map[string]flagDoc{}
	for _, f := range byName["run"].Flags {
		flags[f.Name] = f
	}
	for _, tc := range []struct{ name, arg, alias, values string }{
		{"workspace", "DIR", "", ""},
		{"write", "", "w", ""},
		{"w", "", "write", ""},
		{"env", "NAME|NAME=VALUE", "", ""},
		{"tty", "MODE", "", "auto always never"},
		{"allow-host", "HOST[:PORT]", "", ""},
		{"publish", "[ADDR:]PORT[:SANDBOX_PORT]", "", ""},
		{"violations", "FILE", "", ""},
	} {
		f, ok := flags[tc.name]
		if !ok {
			t.Errorf("run flag %s not in the docs", tc.name)
			continue
		}
		if f.Arg != tc.arg || f.Alias != tc.alias || strings.Join(f.Values, " ") != tc.values || f.Text == "" {
			t.Errorf("run flag %s: arg %q alias %q values %q text %q; want %q %q %q and a text", tc.name, f.Arg, f.Alias, f.Values, f.Text, tc.arg, tc.alias, tc.values)
		}
	}
	var names []string
	for _, f := range byName["doctor"].Flags {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, " "); got != "apparmor-profile h help policy" {
		t.Errorf("doctor flags %q; want those of its flag set: apparmor-profile h help policy", got)
	}
}

// TestParseFlagHelpUndescribed: a flag set with a flag its help text does
// not describe is an error, so help text and flags cannot drift apart.
func TestParseFlagHelpUndescribed(t *testing.T) {
	help := parseFlagHelp("Flags:\n  --known X   described\n")
	if _, ok := help["known"]; !ok {
		t.Fatalf("--known not parsed: %+v", help)
	}
	if _, ok := help["unknown"]; ok {
		t.Fatal("--unknown parsed from nowhere")
	}
}

// TestCompletionsParse: the generated scripts are valid in their shells
// (each shell is needed only for its own script).
func TestCompletionsParse(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ shell, format string }{{"bash", "bash"}, {"zsh", "zsh"}, {"fish", "fish"}} {
		sh, err := exec.LookPath(tc.shell)
		if err != nil {
			t.Logf("%s not installed: its completion's syntax is not checked", tc.shell)
			continue
		}
		path := filepath.Join(dir, "sbx."+tc.format)
		if err := os.WriteFile(path, []byte(generate(t, tc.format)), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(sh, "-n", path).CombinedOutput(); err != nil {
			t.Errorf("%s -n %s: %v\n%s", tc.shell, path, err, out)
		}
	}
}

// TestManPageRenders: man(1) formats the page without warnings (when man
// is installed).
func TestManPageRenders(t *testing.T) {
	if _, err := exec.LookPath("man"); err != nil {
		t.Skip("man not installed")
	}
	path := filepath.Join(t.TempDir(), "sbx.1")
	if err := os.WriteFile(path, []byte(generate(t, "man")), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("man", "--warnings", "-l", path)
	cmd.Env = append(os.Environ(), "MANWIDTH=80", "MANPAGER=cat", "PAGER=cat")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("man -l: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--workspace") {
		t.Errorf("rendered page lacks --workspace:\n%s", out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "warning:") {
			t.Errorf("man warns: %s", line)
		}
	}
}

// TestEveryFlagHasUsage: every flag each command registers carries its
// help entry in its usage string (a second name such as -w shares its
// flag's), so the generated Flags section cannot leave one out.
func TestEveryFlagHasUsage(t *testing.T) {
	for _, name := range []string{"run", "exec", "doctor"} {
		var sets []*flag.FlagSet
		flagSetCreated = func(fs *flag.FlagSet) { sets = append(sets, fs) }
		code := sbxMain([]string{"help", name}, streams{out: io.Discard, err: io.Discard})
		flagSetCreated = nil
		if code != 0 || len(sets) != 1 {
			t.Fatalf("sbx help %s: exit %d, %d flag sets", name, code, len(sets))
		}
		if _, err := flagEntries(sets[0]); err != nil {
			t.Errorf("sbx %s: %v", name, err)
		}
	}
}
