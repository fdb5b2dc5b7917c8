package main

import (
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

// sbxMain runs the CLI and returns the process's exit status.
func sbxMain(args []string, s streams) int {
	if len(args) == 0 {
		// A usage error like any other (125), with the usage to fix it.
		fmt.Fprint(s.err, usage())
		return exitSbxError
	}
	switch args[0] {
	case "version", "--version", "-version":
		fmt.Fprintf(s.out, "sbx %s\n", version)
		return 0
	case "help", "-h", "--help", "-help":
		if len(args) > 1 {
			c, ok := lookupCommand(args[1])
			if !ok || c.hidden {
				fmt.Fprintf(s.err, "sbx: help: unknown command %q (see sbx --help)\n", args[1])
				return exitSbxError
			}
			fs, _ := c.flagSet()
			fmt.Fprint(s.out, c.usageText(fs))
			return 0
		}
		fmt.Fprint(s.out, usage())
		return 0
	}
	c, ok := lookupCommand(args[0])
	if !ok || c.flags == nil {
		fmt.Fprintf(s.err, "sbx: unknown command %q (see sbx --help)\n", args[0])
		return exitSbxError
	}
	return c.execute(args[1:], s)
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
