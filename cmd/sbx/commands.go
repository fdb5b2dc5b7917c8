package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// command is one row of the CLI's table. The top-level usage, each
// command's --help, the man page, the shell completions and "sbx features"
// are all rendered from these rows and the flag sets their flags functions
// build; nothing reads a help text back.
type command struct {
	name     string
	synopsis string // "sbx run [flags] -- CMD [ARGS...]"
	summary  string // "run CMD in a new sandbox", the usage's and man page's line
	// head and tail are the --help text before and after the generated
	// Flags section; tail is a function for text that depends on the host
	// (run's default limits). A command without head prints the top-level
	// usage for --help.
	head string
	tail func() string
	// flags registers the command's flags on fs and returns what the
	// command does with them once parsed (its arguments after the flags).
	// nil: the command takes no flags and is handled by sbxMain itself.
	flags func(fs *flag.FlagSet) action
	// aliases are second names of flags: "w" for "write".
	aliases map[string]string
	// complete says what a flag's argument is, for the completions and
	// "sbx features" (a flag absent here takes free text).
	complete map[string]completion
	// takesCommand: the arguments after "--" are a program's command line.
	takesCommand bool
	hidden       bool // not in the usage, the man page nor the completions
}

// action runs a command whose flags are parsed; args are the arguments
// after the flags.
type action func(args []string, s streams) int

// completion is what a flag's argument names.
type completion struct {
	kind   string   // "dir", "file" or "" (free text, or one of values)
	values []string // the accepted values, when they are a fixed list
}

var (
	completeDir  = completion{kind: "dir"}
	completeFile = completion{kind: "file"}
)

func oneOf(values ...string) completion { return completion{values: values} }

// commands is the CLI's table, in the order the usage lists them.
func commands() []command {
	return []command{
		{
			name: "run", synopsis: "sbx run [flags] -- CMD [ARGS...]", summary: "run CMD in a new sandbox",
			head: runUsageHead, tail: runUsageTailText, flags: runFlags, takesCommand: true,
			aliases: map[string]string{"w": "write"},
			complete: map[string]completion{
				"workspace": completeDir, "home": completeDir,
				"ro": completeFile, "rw": completeFile, "mask": completeFile, "protect": completeFile,
				"violations": completeFile, "settings": completeFile, "tighten-settings": completeFile,
				"tty": oneOf("auto", "always", "never"), "policy": oneOf("auto", "landlock", "bpf"),
				"net": oneOf("loopback", "none", "host"),
			},
		},
		{
			name: "exec", synopsis: "sbx exec [--request FILE]", summary: "run one JSON request, print a JSON result",
			head: execUsageText, flags: execFlags,
			complete: map[string]completion{"request": completeFile, "ro-root": completeDir},
		},
		{
			name: "doctor", synopsis: "sbx doctor", summary: "check what this host can enforce",
			head: doctorUsageText, flags: doctorFlags,
			complete: map[string]completion{"policy": oneOf("auto", "landlock", "bpf")},
		},
		{
			name: "profile", synopsis: "sbx profile list|show NAME", summary: "print the profiles sbx run applies",
			head: profileUsage, flags: profileCmdFlags,
		},
		{
			name: "features", synopsis: "sbx features [--json]", summary: "list this build's flags and tiers",
			head: featuresUsage, flags: featuresFlags,
		},
		{name: "version", synopsis: "sbx version", summary: "print the version"},
		{name: "help", synopsis: "sbx help [COMMAND]", summary: "show help"},
		{name: docsCommand, synopsis: "sbx " + docsCommand + " man|bash|zsh|fish", hidden: true, flags: docsFlags},
	}
}

// lookupCommand returns the row named name.
func lookupCommand(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// flagSet builds c's flag set (nil for a command without flags) and the
// action bound to it.
func (c command) flagSet() (*flag.FlagSet, action) {
	if c.flags == nil {
		return nil, nil
	}
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs, c.flags(fs)
}

// usageText renders c's --help: its head, the Flags section, its tail.
func (c command) usageText(fs *flag.FlagSet) string {
	if c.head == "" {
		return usage()
	}
	text := c.head
	if fs != nil && hasFlags(fs) {
		text += "\n" + flagHelp(fs, c.aliases)
	}
	if c.tail != nil {
		text += "\n" + c.tail()
	}
	return text
}

// hasFlags reports whether fs has any flag.
func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// execute parses args against c's flags and runs c: 0 after --help, 125
// for a usage error (said on stderr in sbx's form, with a pointer to the
// help).
func (c command) execute(args []string, s streams) int {
	fs, act := c.flagSet()
	rest, help, err := parseFlags(fs, c.aliases, args)
	if help {
		fmt.Fprint(s.out, c.usageText(fs))
		return 0
	}
	if err != nil {
		return fail(s, fmt.Errorf("%s: %w (see sbx %s --help)", c.name, err, c.name))
	}
	return act(rest, s)
}

const usageIntro = `sbx runs a program in a sandbox that the kernel enforces: it sees the host's
system directories read-only, its workspace (read-only unless --write), a
private home and /tmp, and nothing else; no network beyond its own loopback
unless allowed (--allow-host), no capabilities, a seccomp filter and memory,
CPU and process limits. No daemon, no image.
`

const usageOutro = `Run "sbx run --help" for the flags of run.

Exit status of sbx's own: 125 when the command line is wrong (no command,
an unknown command or flag, a bad value) or sbx failed; "sbx help" and
--help exit 0. "sbx run" exits with the program's status otherwise.
`

// usage is the top-level help: the intro, the table's visible commands,
// and the exit statuses.
func usage() string {
	var b strings.Builder
	b.WriteString(usageIntro + "\nUsage:\n")
	for _, c := range commands() {
		if !c.hidden {
			fmt.Fprintf(&b, "  %-35s%s\n", c.synopsis, c.summary)
		}
	}
	b.WriteString("\n" + usageOutro)
	return b.String()
}
