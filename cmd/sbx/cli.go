package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/safetext"
)

// Exit statuses of sbx's own, as container runtimes use them.
const (
	exitSbxError = 125 // sbx failed; the program did not run (or was killed)
)

// streams are the CLI's standard streams, swappable for in-process tests.
type streams struct {
	in       *os.File
	out, err io.Writer
}

func stdStreams() streams { return streams{in: os.Stdin, out: os.Stdout, err: os.Stderr} }

const usage = `sbx runs a program in a sandbox that the kernel enforces: it sees the host's
system directories read-only, its workspace (read-only unless --write), a
private home and /tmp, and nothing else; no network beyond its own loopback
unless allowed (--allow-host), no capabilities, a seccomp filter and memory,
CPU and process limits. No daemon, no image.

Usage:
  sbx run [flags] -- CMD [ARGS...]   run CMD in a new sandbox
  sbx exec [--request FILE]          run one JSON request, print a JSON result
  sbx doctor                         check what this host can enforce
  sbx profile list|show NAME         print the profiles sbx run applies
  sbx version                        print the version
  sbx help [COMMAND]                 show help

Run "sbx run --help" for the flags of run.

Exit status of sbx's own: 125 when the command line is wrong (no command,
an unknown command or flag, a bad value) or sbx failed; "sbx help" and
--help exit 0. "sbx run" exits with the program's status otherwise.
`

// sbxMain runs the CLI and returns the process's exit status.
func sbxMain(args []string, s streams) int {
	if len(args) == 0 {
		// A usage error like any other (125), with the usage to fix it.
		fmt.Fprint(s.err, usage)
		return exitSbxError
	}
	switch args[0] {
	case "run":
		return cmdRun(args[1:], s)
	case "exec":
		return cmdExec(args[1:], s)
	case "doctor":
		return cmdDoctor(args[1:], s)
	case "profile":
		return cmdProfile(args[1:], s)
	case docsCommand:
		return cmdDocs(args[1:], s)
	case "version", "--version", "-version":
		fmt.Fprintf(s.out, "sbx %s\n", version)
		return 0
	case "help", "-h", "--help", "-help":
		if len(args) > 1 {
			switch args[1] {
			case "run":
				return cmdRun([]string{"--help"}, s)
			case "exec":
				return cmdExec([]string{"--help"}, s)
			case "doctor":
				return cmdDoctor([]string{"--help"}, s)
			case "profile":
				return cmdProfile([]string{"--help"}, s)
			case "version", "help":
			default:
				fmt.Fprintf(s.err, "sbx: help: unknown command %q (see sbx --help)\n", args[1])
				return exitSbxError
			}
		}
		fmt.Fprint(s.out, usage)
		return 0
	default:
		fmt.Fprintf(s.err, "sbx: unknown command %q (see sbx --help)\n", args[0])
		return exitSbxError
	}
}

// fail prints err as one sbx line and returns the sbx error status.
func fail(s streams, err error) int {
	msg := strings.TrimPrefix(err.Error(), "sbx: ")
	// One line, whatever the input quoted in it: control and bidi
	// characters (a newline in an argument, escapes, names a sandbox
	// wrote) are shown escaped.
	fmt.Fprintf(s.err, "sbx: %s\n", safetext.Escape(msg))
	return exitSbxError
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// newFlagSet returns a flag set that reports errors through sbx's channel
// instead of printing and exiting.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if flagSetCreated != nil {
		flagSetCreated(fs)
	}
	return fs
}
