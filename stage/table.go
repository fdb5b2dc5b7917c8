package stage

import (
	"path/filepath"
	"strings"
)

// Consume says whether a flag written as "--flag value" takes the next
// argument as its value. Knowing this for every flag of an agent, not only
// the path flags, is what tells a flag's value from a positional argument
// (pi's "@file" and messages).
type Consume uint8

const (
	// Never: the flag is a switch; the next argument is parsed on its own.
	Never Consume = iota
	// Always: the next argument is the value, whatever it looks like.
	Always
	// UnlessDash: the next argument is the value unless it starts with "-".
	UnlessDash
	// UnlessDashOrAt: the next argument is the value unless it starts with
	// "-" or "@" (pi's rule for flags registered by extensions).
	UnlessDashOrAt
	// Message: the next argument is a positional message rather than a value,
	// and is not parsed as a flag, unless it starts with "@" or with a single
	// "-" (pi's -p/--print).
	Message
)

// takes reports whether next is taken by a flag with consume mode c. A bare
// "--" is never taken: scanning always stops there, which is conservative
// when an agent would have read it as a value.
func (c Consume) takes(next string) bool {
	if next == "--" {
		return false
	}
	switch c {
	case Always:
		return true
	case UnlessDash:
		return !strings.HasPrefix(next, "-")
	case UnlessDashOrAt:
		return !strings.HasPrefix(next, "-") && !strings.HasPrefix(next, "@")
	case Message:
		return !strings.HasPrefix(next, "@") &&
			(!strings.HasPrefix(next, "-") || strings.HasPrefix(next, "---"))
	}
	return false
}

// Flag describes one flag whose value is a host path.
type Flag struct {
	// Names holds the spellings, e.g. "--extension" and "-e".
	Names []string
	// Consume is how the separate form takes its value.
	Consume Consume
	// Glued accepts "--flag=value" too; it is rewritten back glued.
	Glued bool
	// Variadic takes the following arguments, up to the next one starting
	// with "-", as further values (commander's "<values...>").
	Variadic bool
	// Dirs lets the value be a directory; it is copied recursively.
	Dirs bool
	// Text: the value is text unless it names an existing file, so a value
	// that is not a file is left alone without a warning.
	Text bool
	// SessionRef: pi's "<path|id>": a path only if it holds "/" or ends in
	// ".jsonl"; anything else is a session id and is left alone.
	SessionRef bool
	// CopyBack: what the sandbox writes there is copied back to the host
	// when the run ends (see Plan.Finish).
	CopyBack bool
	// Create: the path may not exist yet (the agent creates it). It is
	// staged as an empty placeholder when its parent directory exists under
	// an allowed root; only meaningful with CopyBack.
	Create bool
}

// Agent is the staging table entry of one agent program.
type Agent struct {
	// Name is the lowercased basename of argv[0] the entry applies to.
	Name string
	// Flags are the flags carrying host paths.
	Flags []Flag
	// Values lists the agent's other flags that take a value, so that the
	// value is not mistaken for a positional argument.
	Values map[string]Consume
	// UnknownLong is how an unlisted "--flag" takes a value.
	UnknownLong Consume
	// AtFiles: a positional "@path" names a file the agent reads, also
	// after a bare "--".
	AtFiles bool
	// OutputAfter names a flag (pi's "--export") whose presence makes the
	// first positional message an output path, staged with OutputFlag.
	OutputAfter string
	OutputFlag  Flag
	// ConfigRoot returns the agent's configuration tree on the host (an
	// allowed root), or "" if there is none. env looks up the host
	// environment; home is the invoking user's host home.
	ConfigRoot func(env func(string) string, home string) string
}

func (a *Agent) flag(name string) (Flag, bool) {
	for _, f := range a.Flags {
		for _, n := range f.Names {
			if n == name {
				return f, true
			}
		}
	}
	return Flag{}, false
}

// consumes is one group of Agent.Values: the flags taking values the same way.
type consumes struct {
	how   Consume
	flags []string
}

func consumeMap(groups ...consumes) map[string]Consume {
	m := map[string]Consume{}
	for _, g := range groups {
		for _, name := range g.flags {
			m[name] = g.how
		}
	}
	return m
}

// Table maps the lowercased basename of argv[0] to its agent. Adding an
// agent is one entry.
type Table map[string]*Agent

// Lookup returns the agent for argv0, or nil when the program is not in the
// table (its arguments are then passed through verbatim).
func (t Table) Lookup(argv0 string) *Agent {
	if argv0 == "" {
		return nil
	}
	return t[strings.ToLower(filepath.Base(argv0))]
}

// DefaultTable is the table Prepare uses when Options.Table is nil.
var DefaultTable = Table{
	"pi":     Pi,
	"claude": Claude,
}

// Pi is the entry for the pi coding agent (npm @earendil-works/pi-coding-agent).
//
// Source: packages/coding-agent/src/cli/args.ts of github.com/earendil-works/pi
// (parseArgs and printHelp). Its built-in flags take the next argument
// unconditionally and know only the separate form; an unknown "--name=value"
// or "--name value" (value not starting with "-" or "@") goes to extension
// flags, which is how an orchestrator's --mcp-config arrives. After a bare
// "--" every argument is a message, except "@path", still read as a file.
// "--export FILE [OUT]" reads the session FILE and writes HTML to the first
// message OUT. "--fork" reads its session and writes the new one into the
// session dir, never into the file it was given (SessionManager.forkFrom).
var Pi = &Agent{
	Name: "pi",
	Flags: []Flag{
		{Names: []string{"--extension", "-e"}, Consume: Always, Glued: true, Dirs: true},
		{Names: []string{"--skill"}, Consume: Always, Glued: true, Dirs: true},
		{Names: []string{"--prompt-template"}, Consume: Always, Glued: true, Dirs: true},
		{Names: []string{"--theme"}, Consume: Always, Glued: true, Dirs: true},
		{Names: []string{"--append-system-prompt"}, Consume: Always, Glued: true, Text: true},
		{Names: []string{"--session"}, Consume: Always, Glued: true, SessionRef: true, CopyBack: true, Create: true},
		{Names: []string{"--fork"}, Consume: Always, Glued: true, SessionRef: true, CopyBack: true},
		{Names: []string{"--session-dir"}, Consume: Always, Glued: true, Dirs: true, CopyBack: true, Create: true},
		{Names: []string{"--export"}, Consume: Always, Glued: true},
		{Names: []string{"--mcp-config"}, Consume: UnlessDashOrAt, Glued: true},
	},
	Values: consumeMap(
		consumes{Always, []string{"--mode", "--provider", "--model", "--api-key", "--system-prompt",
			"--session-id", "--name", "-n", "--models", "--tools", "-t", "--exclude-tools", "-xt",
			"--thinking"}},
		consumes{UnlessDash, []string{"--use-theme", "--tui-mode"}},
		consumes{UnlessDashOrAt, []string{"--list-models"}},
		consumes{Message, []string{"--print", "-p"}},
		// Switches, listed so that they are not taken for extension flags.
		consumes{Never, []string{"--help", "-h", "--version", "-v", "--continue", "-c", "--resume",
			"-r", "--no-session", "--no-tools", "-nt", "--no-builtin-tools", "-nbt",
			"--no-extensions", "-ne", "--no-skills", "-ns", "--no-prompt-templates", "-np",
			"--no-themes", "--no-context-files", "-nc", "--verbose", "--approve", "-a",
			"--no-approve", "-na", "--offline"}},
	),
	UnknownLong: UnlessDashOrAt,
	AtFiles:     true,
	OutputAfter: "--export",
	OutputFlag:  Flag{CopyBack: true, Create: true},
	ConfigRoot: func(env func(string) string, home string) string {
		dir := env("PI_CODING_AGENT_DIR")
		if dir == "" {
			if home == "" {
				return ""
			}
			dir = filepath.Join(home, ".pi", "agent")
		}
		// The agent dir itself (its sessions, extensions, themes), never
		// its parent: PI_CODING_AGENT_DIR=/etc/pi-agent must not make
		// /etc a root. A missing one is no root (resolveRoots).
		return expandHome(dir, home)
	},
}

// Claude is the entry for Claude Code (npm @anthropic-ai/claude-code).
//
// Source: the CLI reference, code.claude.com/docs/en/cli-reference:
// --mcp-config "Load MCP servers from JSON files or strings
// (space-separated)", --settings "Path to a settings JSON file or a JSON
// string", --system-prompt-file and --append-system-prompt-file "Load ...
// from a file", --plugin-dir "Load plugins from directories for this
// session only". The CLI parses with commander, which accepts "--flag=value"
// and stops at "--". --add-dir is deliberately absent: it grants access to a
// live directory, which a copy cannot stand in for. Only the flags are
// staged; claude's positionals are prompts, never paths.
var Claude = &Agent{
	Name: "claude",
	Flags: []Flag{
		{Names: []string{"--mcp-config"}, Consume: UnlessDash, Glued: true, Variadic: true, Text: true},
		{Names: []string{"--settings"}, Consume: Always, Glued: true, Text: true},
		{Names: []string{"--system-prompt-file"}, Consume: Always, Glued: true},
		{Names: []string{"--append-system-prompt-file"}, Consume: Always, Glued: true},
		{Names: []string{"--plugin-dir"}, Consume: Always, Glued: true, Dirs: true},
	},
	ConfigRoot: func(env func(string) string, home string) string {
		dir := env("CLAUDE_CONFIG_DIR")
		if dir == "" {
			if home == "" {
				return ""
			}
			dir = filepath.Join(home, ".claude")
		}
		return expandHome(dir, home)
	},
}
