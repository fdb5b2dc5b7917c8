package stage

import (
	"fmt"
	"github.com/sbx-sandbox/sbx/hostfs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/runid"
)

func TestPrepare(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(e *env) []string // creates the files, returns argv
		want   func(e *env) []string // the rewritten argv
		staged map[string]string     // run-dir path -> content
		warn   []string              // each must appear in the warnings
	}{
		{
			name:   "separate absolute",
			setup:  func(e *env) []string { return []string{"pi", "--extension", e.write("work/ext.mjs", "A")} },
			want:   func(e *env) []string { return []string{"pi", "--extension", inside("ext.mjs")} },
			staged: map[string]string{"ext.mjs": "A"},
		},
		{
			name:   "glued",
			setup:  func(e *env) []string { return []string{"pi", "--extension=" + e.write("allowed/ext.mjs", "A")} },
			want:   func(e *env) []string { return []string{"pi", "--extension=" + inside("ext.mjs")} },
			staged: map[string]string{"ext.mjs": "A"},
		},
		{
			name: "-e relative to the cwd",
			setup: func(e *env) []string {
				e.write("work/sub/x.ts", "X")
				return []string{"pi", "-e", "./sub/x.ts", "-e", "sub/x.ts"}
			},
			want:   func(e *env) []string { return []string{"pi", "-e", inside("x.ts"), "-e", inside("x.ts")} },
			staged: map[string]string{"x.ts": "X"},
		},
		{
			name: "tilde",
			setup: func(e *env) []string {
				e.write("home/.pi/agent/extensions/t.mjs", "T")
				return []string{"pi", "-e", "~/.pi/agent/extensions/t.mjs"}
			},
			want:   func(e *env) []string { return []string{"pi", "-e", inside("t.mjs")} },
			staged: map[string]string{"t.mjs": "T"},
		},
		{
			name: "repeated basenames get -N before the extension",
			setup: func(e *env) []string {
				return []string{"pi", "-e", e.write("allowed/a/x.mjs", "1"), "--extension", e.write("allowed/b/x.mjs", "2"),
					"-e", e.write("work/x.mjs", "3"), "-e", e.write("work/.env", "4"), "-e", e.write("allowed/c/.env", "5")}
			},
			want: func(e *env) []string {
				return []string{"pi", "-e", inside("x.mjs"), "--extension", inside("x-1.mjs"), "-e", inside("x-2.mjs"),
					"-e", inside(".env"), "-e", inside(".env-1")}
			},
			staged: map[string]string{"x.mjs": "1", "x-1.mjs": "2", "x-2.mjs": "3", ".env": "4", ".env-1": "5"},
		},
		{
			name: "nothing after -- but @file",
			setup: func(e *env) []string {
				e.write("work/a.mjs", "A")
				e.write("work/b.mjs", "B")
				e.write("work/n.md", "N")
				return []string{"pi", "-e", "a.mjs", "--", "-e", "b.mjs", "@n.md"}
			},
			want: func(e *env) []string {
				return []string{"pi", "-e", inside("a.mjs"), "--", "-e", "b.mjs", "@" + inside("n.md")}
			},
			staged: map[string]string{"a.mjs": "A", "n.md": "N"},
		},
		{
			name:   "@file before --",
			setup:  func(e *env) []string { e.write("work/n.md", "N"); return []string{"pi", "@n.md", "summarize"} },
			want:   func(e *env) []string { return []string{"pi", "@" + inside("n.md"), "summarize"} },
			staged: map[string]string{"n.md": "N"},
		},
		{
			name:  "missing file",
			setup: func(e *env) []string { return []string{"pi", "-e", filepath.Join(e.allowed, "nope.mjs")} },
			want:  func(e *env) []string { return []string{"pi", "-e", filepath.Join(e.allowed, "nope.mjs")} },
			warn:  []string{"sbx: not staging -e ", "nope.mjs: no such file or directory\n"},
		},
		{
			name:  "outside the roots",
			setup: func(e *env) []string { return []string{"pi", "--extension", e.write("outside/x.mjs", "X")} },
			want:  func(e *env) []string { return []string{"pi", "--extension", filepath.Join(e.outside, "x.mjs")} },
			warn:  []string{"outside/x.mjs: outside the allowed roots\n"},
		},
		{
			name: "symlink in a root to outside",
			setup: func(e *env) []string {
				link := filepath.Join(e.allowed, "link.mjs")
				if err := os.Symlink(e.write("outside/secret.mjs", "S"), link); err != nil {
					e.t.Fatal(err)
				}
				return []string{"pi", "-e", link}
			},
			want: func(e *env) []string { return []string{"pi", "-e", filepath.Join(e.allowed, "link.mjs")} },
			warn: []string{"link.mjs: outside the allowed roots"},
		},
		{
			name: "symlink within the roots keeps the name as written",
			setup: func(e *env) []string {
				link := filepath.Join(e.allowed, "link.mjs")
				if err := os.Symlink(e.write("work/real.js", "R"), link); err != nil {
					e.t.Fatal(err)
				}
				return []string{"pi", "-e", link}
			},
			want:   func(e *env) []string { return []string{"pi", "-e", inside("link.mjs")} },
			staged: map[string]string{"link.mjs": "R"},
		},
		{
			name: "exactly 8 MiB is staged, 8 MiB + 1 is not",
			setup: func(e *env) []string {
				ok, big := e.write("allowed/ok.bin", ""), e.write("allowed/big.bin", "")
				if err := os.Truncate(ok, MaxFileSize); err != nil {
					e.t.Fatal(err)
				}
				if err := os.Truncate(big, MaxFileSize+1); err != nil {
					e.t.Fatal(err)
				}
				return []string{"pi", "@" + ok, "@" + big}
			},
			want: func(e *env) []string {
				return []string{"pi", "@" + inside("ok.bin"), "@" + filepath.Join(e.allowed, "big.bin")}
			},
			staged: map[string]string{"ok.bin": strings.Repeat("\x00", MaxFileSize)},
			warn:   []string{"big.bin: larger than 8 MiB"},
		},
		{
			name: "the 16th file is staged, the 17th is not",
			setup: func(e *env) []string {
				argv := []string{"pi"}
				for i := 1; i <= 17; i++ {
					argv = append(argv, "-e", e.write(fmt.Sprintf("work/e%02d.mjs", i), fmt.Sprint(i)))
				}
				return argv
			},
			want: func(e *env) []string {
				argv := []string{"pi"}
				for i := 1; i <= 16; i++ {
					argv = append(argv, "-e", inside(fmt.Sprintf("e%02d.mjs", i)))
				}
				return append(argv, "-e", filepath.Join(e.cwd, "e17.mjs"))
			},
			staged: func() map[string]string {
				m := map[string]string{}
				for i := 1; i <= 16; i++ {
					m[fmt.Sprintf("e%02d.mjs", i)] = fmt.Sprint(i)
				}
				return m
			}(),
			warn: []string{"e17.mjs: 16 files are staged already (the per-run limit)"},
		},
		{
			name: "directory copied recursively",
			setup: func(e *env) []string {
				e.write("allowed/skill/SKILL.md", "S")
				e.write("allowed/skill/lib/run.sh", "R")
				return []string{"pi", "--skill", filepath.Join(e.allowed, "skill")}
			},
			want:   func(e *env) []string { return []string{"pi", "--skill", inside("skill")} },
			staged: map[string]string{"skill/SKILL.md": "S", "skill/lib/run.sh": "R"},
		},
		{
			name: "a directory counts its files",
			setup: func(e *env) []string {
				argv := []string{"pi"}
				for i := 1; i <= 15; i++ {
					argv = append(argv, "-e", e.write(fmt.Sprintf("work/e%02d.mjs", i), "x"))
				}
				e.write("allowed/theme/a.json", "a")
				e.write("allowed/theme/b.json", "b")
				return append(argv, "--theme", filepath.Join(e.allowed, "theme"))
			},
			want: func(e *env) []string {
				argv := []string{"pi"}
				for i := 1; i <= 15; i++ {
					argv = append(argv, "-e", inside(fmt.Sprintf("e%02d.mjs", i)))
				}
				return append(argv, "--theme", filepath.Join(e.allowed, "theme"))
			},
			staged: func() map[string]string {
				m := map[string]string{}
				for i := 1; i <= 15; i++ {
					m[fmt.Sprintf("e%02d.mjs", i)] = "x"
				}
				return m
			}(),
			warn: []string{"theme: more files than the 1 left of the per-run limit"},
		},
		{
			name: "directory with a symlink out of it",
			setup: func(e *env) []string {
				e.write("allowed/ext/index.ts", "I")
				if err := os.Symlink(e.write("outside/key", "K"), filepath.Join(e.allowed, "ext/key")); err != nil {
					e.t.Fatal(err)
				}
				return []string{"pi", "-e", filepath.Join(e.allowed, "ext")}
			},
			want: func(e *env) []string { return []string{"pi", "-e", filepath.Join(e.allowed, "ext")} },
			warn: []string{"symlink key leads out of the directory"},
		},
		{
			name: "directory with an inner symlink",
			setup: func(e *env) []string {
				e.write("allowed/ext/index.ts", "I")
				if err := os.Symlink("index.ts", filepath.Join(e.allowed, "ext/main.ts")); err != nil {
					e.t.Fatal(err)
				}
				return []string{"pi", "-e", filepath.Join(e.allowed, "ext")}
			},
			want:   func(e *env) []string { return []string{"pi", "-e", inside("ext")} },
			staged: map[string]string{"ext/index.ts": "I", "ext/main.ts": "I"},
		},
		{
			name: "directory with a FIFO",
			setup: func(e *env) []string {
				e.write("allowed/p/a.md", "A")
				if err := syscall.Mkfifo(filepath.Join(e.allowed, "p/fifo"), 0o600); err != nil {
					e.t.Fatal(err)
				}
				return []string{"pi", "--prompt-template", filepath.Join(e.allowed, "p")}
			},
			want: func(e *env) []string { return []string{"pi", "--prompt-template", filepath.Join(e.allowed, "p")} },
			warn: []string{"fifo is not a regular file or directory"},
		},
		{
			name: "a directory where a file is expected",
			setup: func(e *env) []string {
				e.mkdir("allowed/d")
				return []string{"pi", "@" + filepath.Join(e.allowed, "d")}
			},
			want: func(e *env) []string { return []string{"pi", "@" + filepath.Join(e.allowed, "d")} },
			warn: []string{"d: is a directory"},
		},
		{
			name: "a FIFO value",
			setup: func(e *env) []string {
				if err := syscall.Mkfifo(filepath.Join(e.allowed, "f"), 0o600); err != nil {
					e.t.Fatal(err)
				}
				return []string{"pi", "-e", filepath.Join(e.allowed, "f")}
			},
			want: func(e *env) []string { return []string{"pi", "-e", filepath.Join(e.allowed, "f")} },
			warn: []string{"f: not a regular file"},
		},
		{
			name: "session id and empty values are left alone silently",
			setup: func(e *env) []string {
				return []string{"pi", "--session", "abc123", "--fork", "0190", "-e", "", "--session="}
			},
			want: func(e *env) []string {
				return []string{"pi", "--session", "abc123", "--fork", "0190", "-e", "", "--session="}
			},
		},
		{
			name:   "session file gets a directory of its own",
			setup:  func(e *env) []string { return []string{"pi", "--session", e.write("allowed/s/x.jsonl", "{}\n")} },
			want:   func(e *env) []string { return []string{"pi", "--session", inside("session/x.jsonl")} },
			staged: map[string]string{"session/x.jsonl": "{}\n"},
		},
		{
			name: "session file named without .jsonl but with a slash",
			setup: func(e *env) []string {
				e.write("work/s/cur", "{}\n")
				return []string{"pi", "--fork", "./s/cur"}
			},
			want:   func(e *env) []string { return []string{"pi", "--fork", inside("fork/cur")} },
			staged: map[string]string{"fork/cur": "{}\n"},
		},
		{
			name:   "session that does not exist yet",
			setup:  func(e *env) []string { return []string{"pi", "--session", filepath.Join(e.allowed, "new.jsonl")} },
			want:   func(e *env) []string { return []string{"pi", "--session", inside("session/new.jsonl")} },
			staged: map[string]string{"session/": ""},
		},
		{
			// The directory is made on the host, as pi would outside.
			name: "new session whose parent is missing",
			setup: func(e *env) []string {
				return []string{"pi", "--session", filepath.Join(e.allowed, "no/new/new.jsonl")}
			},
			want:   func(e *env) []string { return []string{"pi", "--session", inside("session/new.jsonl")} },
			staged: map[string]string{"session/": ""},
		},
		{
			name:  "new session whose missing parent is outside the roots",
			setup: func(e *env) []string { return []string{"pi", "--session", filepath.Join(e.outside, "no/new.jsonl")} },
			want:  func(e *env) []string { return []string{"pi", "--session", filepath.Join(e.outside, "no/new.jsonl")} },
			warn:  []string{"new.jsonl: outside the allowed roots"},
		},
		{
			name: "new session with too many missing directories",
			setup: func(e *env) []string {
				return []string{"pi", "--session", filepath.Join(e.allowed, "1/2/3/4/5/6/7/8/9/new.jsonl")}
			},
			want: func(e *env) []string {
				return []string{"pi", "--session", filepath.Join(e.allowed, "1/2/3/4/5/6/7/8/9/new.jsonl")}
			},
			warn: []string{"new.jsonl: no such file or directory (more than 8 missing directories)"},
		},
		{
			name:  "new session outside the roots",
			setup: func(e *env) []string { return []string{"pi", "--session", filepath.Join(e.outside, "new.jsonl")} },
			want:  func(e *env) []string { return []string{"pi", "--session", filepath.Join(e.outside, "new.jsonl")} },
			warn:  []string{"new.jsonl: outside the allowed roots"},
		},
		{
			name: "append-system-prompt: text alone, files staged",
			setup: func(e *env) []string {
				return []string{"pi", "--append-system-prompt", "Always use TypeScript", "--append-system-prompt", e.write("work/p.md", "P"),
					"--append-system-prompt", e.write("outside/q.md", "Q")}
			},
			want: func(e *env) []string {
				return []string{"pi", "--append-system-prompt", "Always use TypeScript", "--append-system-prompt", inside("p.md"),
					"--append-system-prompt", filepath.Join(e.outside, "q.md")}
			},
			staged: map[string]string{"p.md": "P"},
			warn:   []string{"q.md: outside the allowed roots"},
		},
		{
			name: "export: input file and new output",
			setup: func(e *env) []string {
				return []string{"pi", "--export", e.write("allowed/s.jsonl", "S"), filepath.Join(e.allowed, "out.html")}
			},
			want:   func(e *env) []string { return []string{"pi", "--export", inside("s.jsonl"), inside("export/out.html")} },
			staged: map[string]string{"s.jsonl": "S", "export/": ""},
		},
		{
			name: "mcp-config glued",
			setup: func(e *env) []string {
				return []string{"pi", "--mode", "rpc", "--mcp-config=" + e.write("allowed/mcp.json", "{}")}
			},
			want:   func(e *env) []string { return []string{"pi", "--mode", "rpc", "--mcp-config=" + inside("mcp.json")} },
			staged: map[string]string{"mcp.json": "{}"},
		},
		{
			name:   "session-dir that does not exist yet",
			setup:  func(e *env) []string { return []string{"pi", "--session-dir", filepath.Join(e.allowed, "sessions")} },
			want:   func(e *env) []string { return []string{"pi", "--session-dir", inside("sessions")} },
			staged: map[string]string{"sessions/": ""},
		},
		{
			name: "claude: files staged, JSON text left alone",
			setup: func(e *env) []string {
				return []string{"claude", "--settings", `{"model":"x"}`, "--mcp-config", e.write("allowed/a.json", "a"), e.write("work/b.json", "b"),
					"--plugin-dir=" + filepath.Dir(e.write("allowed/plug/plugin.json", "p"))}
			},
			want: func(e *env) []string {
				return []string{"claude", "--settings", `{"model":"x"}`, "--mcp-config", inside("a.json"), inside("b.json"), "--plugin-dir=" + inside("plug")}
			},
			staged: map[string]string{"a.json": "a", "b.json": "b", "plug/plugin.json": "p"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			argv := tt.setup(e)
			p := e.prepare(argv...)
			if got, want := p.Argv(), tt.want(e); !reflect.DeepEqual(got, want) {
				t.Errorf("Argv:\n got %q\nwant %q", got, want)
			}
			warn := e.warnings.String()
			for _, w := range tt.warn {
				if !strings.Contains(warn, w) {
					t.Errorf("warnings %q lack %q", warn, w)
				}
			}
			if len(tt.warn) == 0 && warn != "" {
				t.Errorf("unexpected warnings: %q", warn)
			}
			for rel, content := range tt.staged {
				p := filepath.Join(e.runDir(), rel)
				if strings.HasSuffix(rel, "/") {
					if ents, err := os.ReadDir(p); err != nil || len(ents) != 0 {
						t.Errorf("staged dir %s: %v %v", rel, ents, err)
					}
					continue
				}
				if got := read(t, p); got != content {
					t.Errorf("staged %s: %d bytes, want %d", rel, len(got), len(content))
				}
				fi, _ := os.Stat(p)
				if fi.Mode().Perm() != 0o600 {
					t.Errorf("staged %s mode %v, want 0600", rel, fi.Mode().Perm())
				}
			}
			files := 0
			for _, r := range listTree(e.runDir()) {
				if fi, err := os.Lstat(filepath.Join(e.runDir(), r)); err == nil && !fi.IsDir() {
					files++
				}
			}
			want := 0
			for rel := range tt.staged {
				if !strings.HasSuffix(rel, "/") {
					want++
				}
			}
			if files != want {
				t.Errorf("run dir holds %d files %q, want %d", files, listTree(e.runDir()), want)
			}
			if len(tt.staged) > 0 {
				fi, err := os.Stat(e.runDir())
				if err != nil || fi.Mode().Perm() != 0o700 {
					t.Errorf("run dir: %v, mode %v; want 0700", err, fi.Mode().Perm())
				}
			}
			if err := p.Finish(); err != nil {
				t.Fatalf("Finish: %v", err)
			}
			if e.staged() {
				t.Errorf("run dir left after Finish: %q", listTree(e.runDir()))
			}
			if ents, _ := os.ReadDir(e.state); len(ents) != 0 {
				t.Errorf("state dir not empty after Finish: %v", ents)
			}
		})
	}
}

func TestNothingStagedCreatesNothing(t *testing.T) {
	for _, argv := range [][]string{
		{"pi", "--mode", "rpc", "-e", "/nonexistent.mjs", "--session", "abc"},
		{"codex", "--extension", "/tmp"},
		{"pi"},
		{},
	} {
		e := newEnv(t)
		p := e.prepare(argv...)
		if len(p.Argv()) != len(argv) || p.RunDir() != "" {
			t.Errorf("%q: argv %q, run dir %q", argv, p.Argv(), p.RunDir())
		}
		if ents, _ := os.ReadDir(e.sbxHome); len(ents) != 0 {
			t.Errorf("%q: sandbox home not empty: %v", argv, ents)
		}
		if exists(e.state) {
			t.Errorf("%q: state dir created", argv)
		}
		if err := p.Finish(); err != nil {
			t.Errorf("%q: Finish: %v", argv, err)
		}
	}
}

func TestUnknownAgentVerbatim(t *testing.T) {
	e := newEnv(t)
	f := e.write("work/ext.mjs", "A")
	argv := []string{"codex", "--extension", f, "-e", f, "@" + f, "--mcp-config=" + f}
	p := e.prepare(argv...)
	if !reflect.DeepEqual(p.Argv(), argv) || e.warnings.Len() != 0 {
		t.Errorf("codex argv changed: %q (warnings %q)", p.Argv(), e.warnings.String())
	}
}

func TestTildeWithoutHome(t *testing.T) {
	e := newEnv(t)
	o := e.opts()
	o.HostHome = ""
	p, err := Prepare([]string{"pi", "-e", "~/x.mjs", "--append-system-prompt", "~"}, o)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Argv(); got[2] != "~/x.mjs" || got[4] != "~" {
		t.Errorf("argv %q", got)
	}
	if w := e.warnings.String(); w != "sbx: not staging -e ~/x.mjs: no home directory to expand ~ with\n" {
		t.Errorf("warnings %q", w)
	}
}

func TestBadOptions(t *testing.T) {
	e := newEnv(t)
	f := e.write("work/ext.mjs", "A")
	for name, mod := range map[string]func(*Options){
		"relative cwd":          func(o *Options) { o.Cwd = "work" },
		"relative sandbox home": func(o *Options) { o.SandboxHome = "sbxhome" },
		"no inside home":        func(o *Options) { o.SandboxHomeInside = "" },
		"no state dir":          func(o *Options) { o.StateDir = "" },
		"relative host home":    func(o *Options) { o.HostHome = "home" },
		"run id with slash":     func(o *Options) { o.RunID = "a/b" },
		"run id dot-dot":        func(o *Options) { o.RunID = ".." },
		"run id with space":     func(o *Options) { o.RunID = "a b" },
		"state inside home":     func(o *Options) { o.StateDir = filepath.Join(o.SandboxHome, ".sbx-state") },
		"state inside via link": func(o *Options) {
			link := filepath.Join(e.base, "link")
			if err := os.Symlink(o.SandboxHome, link); err != nil {
				t.Fatal(err)
			}
			o.StateDir = filepath.Join(link, "state")
		},
	} {
		o := e.opts()
		mod(&o)
		if p, err := Prepare([]string{"pi", "-e", f}, o); err == nil {
			t.Errorf("%s: Prepare succeeded: %q", name, p.Argv())
		}
		if ents, _ := os.ReadDir(e.sbxHome); len(ents) != 0 || exists(e.state) {
			t.Errorf("%s: something was created", name)
		}
	}
}

func TestRunIDGenerated(t *testing.T) {
	e := newEnv(t)
	o := e.opts()
	o.RunID = ""
	p, err := Prepare([]string{"pi", "-e", e.write("work/a.mjs", "A")}, o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Finish()
	id := path.Base(p.Inside())
	if len(id) != 16 || !runid.Valid(id) || !strings.Contains(p.Argv()[2], "/.sbx-staging/"+id+"/a.mjs") {
		t.Errorf("run id %q, argv %q", id, p.Argv())
	}
}

func TestRunIDInUse(t *testing.T) {
	e := newEnv(t)
	f := e.write("work/a.mjs", "A")
	p := e.prepare("pi", "-e", f)
	defer p.Finish()
	if _, err := Prepare([]string{"pi", "-e", f}, e.opts()); err == nil || !strings.Contains(err.Error(), "already in use") {
		t.Fatalf("second Prepare with the same run id: %v", err)
	}
	if read(t, filepath.Join(e.runDir(), "a.mjs")) != "A" {
		t.Error("the first run's staging dir was disturbed")
	}
}

func TestPrepareFailureCleansUp(t *testing.T) {
	e := newEnv(t)
	o := e.opts()
	o.RunDir = filepath.Join(e.base, "missing-run-dir")
	_, err := Prepare([]string{"pi", "-e", e.write("work/a.mjs", "A")}, o)
	if err == nil || !strings.Contains(err.Error(), "run dir") {
		t.Fatalf("Prepare with a missing run dir: %v", err)
	}
	if ents, _ := os.ReadDir(e.state); len(ents) != 0 {
		t.Errorf("state dir left with %v", ents)
	}
}

func TestDefaultRoots(t *testing.T) {
	o := Options{Cwd: "/w", HostHome: "/h"}
	if got, want := DefaultRoots(Pi, o), []string{os.TempDir(), "/tmp", "/h/.pi/agent", "/w"}; !reflect.DeepEqual(got, want) {
		t.Errorf("pi default roots %q, want %q", got, want)
	}
	o.Env = func(k string) string {
		return map[string]string{"PI_CODING_AGENT_DIR": "~/cfg/pi-agent", "CLAUDE_CONFIG_DIR": "/c/claude"}[k]
	}
	if got := DefaultRoots(Pi, o)[2]; got != "/h/cfg/pi-agent" {
		t.Errorf("PI_CODING_AGENT_DIR root %q, want /h/cfg/pi-agent (the agent dir, not its parent)", got)
	}
	if got := DefaultRoots(Claude, o)[2]; got != "/c/claude" {
		t.Errorf("CLAUDE_CONFIG_DIR root %q", got)
	}
	o.Env = func(k string) string { return map[string]string{"PI_CODING_AGENT_DIR": "/etc/pi-agent"}[k] }
	if got := DefaultRoots(Pi, o)[2]; got != "/etc/pi-agent" {
		t.Errorf("PI_CODING_AGENT_DIR=/etc/pi-agent: root %q, want /etc/pi-agent", got)
	}
	o.HostHome, o.Env = "", nil
	if got := DefaultRoots(Pi, o); len(got) != 3 {
		t.Errorf("no home: %q", got)
	}
}

func TestResolveRoots(t *testing.T) {
	e := newEnv(t)
	link := filepath.Join(e.base, "rootlink")
	if err := os.Symlink(e.allowed, link); err != nil {
		t.Fatal(err)
	}
	roots, dropped := resolveRoots([]string{link, e.allowed, "/", filepath.Join(e.base, "missing"), "relative", ""})
	if !reflect.DeepEqual(roots, []string{e.allowed}) || !reflect.DeepEqual(dropped, []string{"/"}) {
		t.Errorf("roots %q dropped %q", roots, dropped)
	}
	for p, want := range map[string]bool{e.allowed: true, e.allowed + "/x": true, e.allowed + "-evil/x": false, e.base: false} {
		if under(p, roots) != want {
			t.Errorf("under(%s) = %v", p, !want)
		}
	}
}

func TestDefaultRootsInPrepare(t *testing.T) {
	// With Roots nil the agent's config tree is allowed: here a directory
	// outside /tmp would be needed to show the difference, so check that a
	// file under PI_CODING_AGENT_DIR's parent is staged and the root "/"
	// from a cwd of / is refused with a warning.
	e := newEnv(t)
	o := e.opts()
	o.Roots = nil
	o.Cwd = "/"
	o.Env = func(k string) string {
		if k == "PI_CODING_AGENT_DIR" {
			return filepath.Join(e.home, ".pi", "agent")
		}
		return ""
	}
	f := e.write("home/.pi/agent/extensions/x.mjs", "X")
	p, err := Prepare([]string{"pi", "-e", f}, o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Finish()
	if p.Argv()[2] != inside("x.mjs") {
		t.Errorf("argv %q", p.Argv())
	}
	if !strings.Contains(e.warnings.String(), "sbx: ignoring allowed root /: it resolves to /") {
		t.Errorf("warnings %q", e.warnings.String())
	}
}

// TestPiAgentDirIsTheRoot (issue 25): PI_CODING_AGENT_DIR makes the agent
// dir itself a root, never its parent (PI_CODING_AGENT_DIR=/etc/pi-agent
// must not open /etc), and a missing one makes no root at all. Outside
// /tmp (a root of its own), under /var/tmp.
func TestPiAgentDirIsTheRoot(t *testing.T) {
	base, err := os.MkdirTemp("/var/tmp", "sbx-stage-test-")
	if err != nil {
		t.Skipf("no /var/tmp outside the /tmp root: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if base, err = filepath.EvalSymlinks(base); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{os.TempDir(), "/tmp"} {
		if hostfs.Within(base, r) {
			t.Skipf("%s is under the root %s", base, r)
		}
	}
	write := func(rel string) string {
		p := filepath.Join(base, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("X"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	inAgent := write("etc/pi-agent/extensions/x.mjs")
	beside := write("etc/secret.mjs")
	e := newEnv(t)
	for _, c := range []struct {
		name, agentDir, arg string
		staged              bool
	}{
		{"in the agent dir", filepath.Join(base, "etc/pi-agent"), inAgent, true},
		{"beside the agent dir", filepath.Join(base, "etc/pi-agent"), beside, false},
		{"missing agent dir", filepath.Join(base, "etc/missing-agent"), beside, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.warnings.Reset()
			o := e.opts()
			o.Roots = nil
			o.Env = func(k string) string {
				if k == "PI_CODING_AGENT_DIR" {
					return c.agentDir
				}
				return ""
			}
			p, err := Prepare([]string{"pi", "-e", c.arg}, o)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Finish()
			if staged := p.Argv()[2] != c.arg; staged != c.staged {
				t.Errorf("argv %q: staged %v, want %v (warnings %q)", p.Argv(), staged, c.staged, e.warnings.String())
			}
			if !c.staged && !strings.Contains(e.warnings.String(), "sbx: not staging") {
				t.Errorf("no warning for the refused value: %q", e.warnings.String())
			}
		})
	}
}
