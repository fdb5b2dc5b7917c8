package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// runFlagNames returns the flags "sbx run" parses: those its flag set
// registers and the second names its table row declares.
func runFlagNames(t *testing.T) []string {
	t.Helper()
	c, ok := lookupCommand("run")
	if !ok {
		t.Fatal("no run in the command table")
	}
	fs, _ := c.flagSet()
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if len(names) < 10 {
		t.Fatalf("only %d flags registered by sbx run: %v", len(names), names)
	}
	for short := range c.aliases {
		names = append(names, short)
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
// described (collectDocs refuses otherwise), with the arguments from its
// usage and the aliases and value lists from the command table.
func TestDocsFlagHelp(t *testing.T) {
	doc, err := collectDocs()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]cmdDoc{}
	for _, c := range doc.Commands {
		byName[c.Name] = c
	}
	for _, name := range []string{"run", "exec", "doctor", "profile", "features", "version", "help"} {
		if _, ok := byName[name]; !ok {
			t.Errorf("command %s missing from the docs", name)
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
		{"policy", "TIER", "", "auto landlock bpf"},
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

// TestFlagDocsUndescribed: a flag without usage text, an alias of no flag
// and a completion of no flag are errors, so the table and the flags
// cannot drift apart.
func TestFlagDocsUndescribed(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.String("known", "", "`X` described")
	if _, err := flagDocs(fs, map[string]string{"k": "known"}, map[string]completion{"known": completeFile}); err != nil {
		t.Fatalf("described flag: %v", err)
	}
	for _, tc := range []struct {
		name     string
		setup    func(*flag.FlagSet)
		aliases  map[string]string
		complete map[string]completion
		want     string
	}{
		{"no usage", func(fs *flag.FlagSet) { fs.Bool("bare", false, "") }, nil, nil, "--bare has no usage text"},
		{"alias of nothing", nil, map[string]string{"x": "gone"}, nil, "alias -x of --gone: no such flag"},
		{"alias also a flag", func(fs *flag.FlagSet) { fs.Bool("y", false, "why") }, map[string]string{"y": "known"}, nil, "alias -y is also a flag"},
		{"completion of nothing", nil, nil, map[string]completion{"gone": completeDir}, "completion declared for --gone, no such flag"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.String("known", "", "`X` described")
		if tc.setup != nil {
			tc.setup(fs)
		}
		_, err := flagDocs(fs, tc.aliases, tc.complete)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
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
// help entry in its usage string, and every alias of the table names a
// flag, so the generated Flags section cannot leave one out.
func TestEveryFlagHasUsage(t *testing.T) {
	n := 0
	for _, c := range commands() {
		fs, act := c.flagSet()
		if fs == nil {
			continue
		}
		n++
		if act == nil {
			t.Errorf("sbx %s: its flags function returns no action", c.name)
		}
		if _, err := flagEntries(fs, c.aliases); err != nil {
			t.Errorf("sbx %s: %v", c.name, err)
		}
	}
	if n < 4 {
		t.Errorf("only %d commands with flags in the table", n)
	}
}

// TestFeaturesJSON: "sbx features --json" lists every run flag with its
// kind, default and usage, the aliases, the tiers and the version.
func TestFeaturesJSON(t *testing.T) {
	code, out, errText := sbxIn("features", "--json")
	if code != 0 {
		t.Fatalf("sbx features --json: exit %d: %s", code, errText)
	}
	var f features
	if err := json.Unmarshal([]byte(out), &f); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if f.Version != version || strings.Join(f.Policies, ",") != "auto,landlock,bpf" ||
		!slices.Contains(f.FileTiers, "landlock") || !slices.Contains(f.FileTiers, "bpf lsm") || !slices.Contains(f.NetTiers, "cgroup bpf") {
		t.Errorf("version %q policies %q file tiers %q net tiers %q", f.Version, f.Policies, f.FileTiers, f.NetTiers)
	}
	byName := map[string]featuresFlag{}
	var run featuresCommand
	for _, c := range f.Commands {
		if c.Name == "run" {
			run = c
		}
		if c.Name == docsCommand {
			t.Errorf("hidden command %s listed", c.Name)
		}
	}
	for _, fl := range run.Flags {
		byName[fl.Name] = fl
	}
	c, _ := lookupCommand("run")
	fs, _ := c.flagSet()
	fs.VisitAll(func(fl *flag.Flag) {
		got, ok := byName[fl.Name]
		if !ok {
			t.Errorf("run flag --%s missing from features", fl.Name)
			return
		}
		if got.Kind != flagKind(fl) || got.Default != fl.DefValue || got.Usage == "" {
			t.Errorf("run flag --%s: %+v", fl.Name, got)
		}
	})
	if len(byName) != len(runFlagNames(t))-len(c.aliases) {
		t.Errorf("features lists %d run flags, the flag set has %d", len(byName), len(runFlagNames(t))-len(c.aliases))
	}
	for _, tc := range []struct{ name, kind, def, arg, aliases string }{
		{"write", "bool", "false", "", "w"},
		{"timeout", "duration", "0s", "DUR", ""},
		{"env", "list", "", "NAME|NAME=VALUE", ""},
		{"pids", "int", "4096", "N", ""},
		{"tighten-settings", "list", "", "FILE", ""},
		{"quiet", "bool", "false", "", ""},
	} {
		got := byName[tc.name]
		if got.Kind != tc.kind || got.Default != tc.def || got.Arg != tc.arg || strings.Join(got.Aliases, ",") != tc.aliases {
			t.Errorf("--%s: %+v; want kind %s default %q arg %q aliases %q", tc.name, got, tc.kind, tc.def, tc.arg, tc.aliases)
		}
	}
	if !run.TakesCommand {
		t.Error("run does not take a command")
	}
	code, text, _ := sbxIn("features")
	if code != 0 || !strings.Contains(text, "--tighten-settings") || !strings.Contains(text, "version: "+version) {
		t.Errorf("sbx features: exit %d\n%s", code, text)
	}
}
