package main

import (
	"errors"
	"flag"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// A command's "Flags:" section is rendered from the flag set it parses and
// its row of the command table: each flag's usage string is its help
// entry, so a flag cannot exist without its description, nor a description
// outlive its flag (the man page, the completions and "sbx features" read
// the same flag sets; docs_test.go checks that every flag is described).
//
// The usage string of a flag that takes an argument starts with the
// argument's placeholder in backquotes ("`DIR` directory to work in"), as
// flag.UnquoteUsage reads it; a flag shown with several arguments separates
// its entries with a newline ("`NAME` pass ...\n`NAME=VALUE` set ..."). A
// second name of a flag (-w for --write) is declared in the command's row
// (aliases) and listed with it ("-w, --write"); it is not registered on
// the flag set, so the parsed set names the flag by its long name.

const (
	flagIndent = 20 // column of a flag's text
	flagWidth  = 79 // right margin of the help text
)

// flagEntry is one line (or entry) of a Flags section.
type flagEntry struct {
	names []string // "w", "write"
	arg   string   // "DIR"; "" for a bool flag
	text  string
}

// dash returns a flag name as typed: "-w" for one letter, "--write" otherwise.
func dash(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// isHelpFlag reports whether name is -h or --help, which every command
// takes and no Flags section lists.
func isHelpFlag(name string) bool { return name == "h" || name == "help" }

// flagEntries returns fs's help entries, sorted by the flag's long name,
// each with its aliases (second name -> flag), and an error naming every
// flag that has no usage string and every alias of no flag.
func flagEntries(fs *flag.FlagSet, aliases map[string]string) ([]flagEntry, error) {
	var entries []flagEntry
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if f.Usage == "" {
			errs = append(errs, fmt.Errorf("flag %s has no usage text", dash(f.Name)))
			return
		}
		names := []string{f.Name}
		for short, long := range aliases {
			if long == f.Name {
				names = append(names, short)
			}
		}
		sort.Slice(names, func(i, j int) bool {
			if len(names[i]) != len(names[j]) {
				return len(names[i]) < len(names[j])
			}
			return names[i] < names[j]
		})
		for _, u := range strings.Split(f.Usage, "\n") {
			e := flagEntry{names: names, text: u}
			if rest, ok := strings.CutPrefix(u, "`"); ok {
				arg, text, found := strings.Cut(rest, "`")
				if !found {
					errs = append(errs, fmt.Errorf("flag %s: unterminated placeholder in its usage", dash(f.Name)))
				}
				e.arg, e.text = arg, strings.TrimSpace(text)
			}
			entries = append(entries, e)
		}
	})
	for short, long := range aliases {
		if fs.Lookup(long) == nil {
			errs = append(errs, fmt.Errorf("alias %s of %s: no such flag", dash(short), dash(long)))
		}
		if fs.Lookup(short) != nil {
			errs = append(errs, fmt.Errorf("alias %s is also a flag of its own", dash(short)))
		}
	}
	long := func(e flagEntry) string { return e.names[len(e.names)-1] }
	sort.SliceStable(entries, func(i, j int) bool { return long(entries[i]) < long(entries[j]) })
	return entries, errors.Join(errs...)
}

// flagHelp formats fs's flags as the "Flags:" section of a help text: each
// entry's names and placeholder at the left, its text wrapped at column 20
// (on the next line when the names are wider).
func flagHelp(fs *flag.FlagSet, aliases map[string]string) string {
	entries, err := flagEntries(fs, aliases)
	if err != nil {
		// A programming error that docs_test.go catches; still show what
		// there is.
		entries = append(entries, flagEntry{names: []string{"?"}, text: err.Error()})
	}
	var b strings.Builder
	b.WriteString("Flags:\n")
	for _, e := range entries {
		var head []string
		for _, n := range e.names {
			head = append(head, dash(n))
		}
		left := "  " + strings.Join(head, ", ")
		if e.arg != "" {
			left += " " + e.arg
		}
		lines := wrap(e.text, flagWidth-flagIndent)
		if len(left) > flagIndent-2 {
			b.WriteString(left + "\n")
		} else {
			b.WriteString(left + strings.Repeat(" ", flagIndent-len(left)) + lines[0] + "\n")
			lines = lines[1:]
		}
		for _, l := range lines {
			b.WriteString(strings.Repeat(" ", flagIndent) + l + "\n")
		}
	}
	return b.String()
}

// wrap breaks text into lines of at most width characters at spaces (a
// longer word gets a line of its own).
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		switch {
		case line == "":
			line = w
		case len(line)+1+len(w) <= width:
			line += " " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	return append(lines, line)
}

// parseFlags parses args against fs as package flag does (-name,
// --name, -name=value, --name value; a bool flag takes no separate
// value), stopping at the first argument that is no flag or after "--",
// so a program's command line is never read as sbx's flags. A second name
// in aliases sets its flag by the flag's own name. help reports -h or
// --help; err is a usage error in sbx's words: the flag as users type it,
// a "did you mean" for an unknown flag close to a real one, and what a bad
// value should look like (`--timeout: "10" is not a duration (e.g. 10s,
// 2m)`). fs may be nil (a command without flags).
func parseFlags(fs *flag.FlagSet, aliases map[string]string, args []string) (rest []string, help bool, err error) {
	if fs == nil {
		fs = flag.NewFlagSet("", flag.ContinueOnError)
	}
	for len(args) > 0 {
		arg := args[0]
		if len(arg) < 2 || arg[0] != '-' {
			break
		}
		args = args[1:]
		if arg == "--" {
			break
		}
		name := strings.TrimPrefix(arg[1:], "-")
		if name == "" || name[0] == '-' || name[0] == '=' {
			return nil, false, fmt.Errorf("bad flag syntax %q", arg)
		}
		name, value, hasValue := strings.Cut(name, "=")
		if isHelpFlag(name) {
			if !hasValue {
				value = "true"
			}
			on, err := strconv.ParseBool(value)
			if err != nil {
				return nil, help, fmt.Errorf("%s: %q is not true or false", dash(name), value)
			}
			help = help || on
			continue
		}
		if long, ok := aliases[name]; ok {
			name = long
		}
		f := fs.Lookup(name)
		if f == nil {
			if near := nearestFlag(fs, name); near != "" {
				return nil, help, fmt.Errorf("unknown flag %s (did you mean %s?)", dash(name), dash(near))
			}
			return nil, help, fmt.Errorf("unknown flag %s", dash(name))
		}
		if !hasValue {
			if flagKind(f) == "bool" {
				value = "true"
			} else if len(args) == 0 {
				if ex := flagExample(f); ex != "" {
					return nil, help, fmt.Errorf("%s needs a value (%s)", dash(name), ex)
				}
				return nil, help, fmt.Errorf("%s needs a value", dash(name))
			} else {
				value, args = args[0], args[1:]
			}
		}
		if err := fs.Set(name, value); err != nil {
			return nil, help, valueError(f, value, err)
		}
	}
	return args, help, nil
}

// valueError says why value is no value of f: for the kinds package flag
// parses, what the flag expects; otherwise the flag's own error.
func valueError(f *flag.Flag, value string, err error) error {
	var kind string
	switch flagKind(f) {
	case "duration":
		kind = "is not a duration"
	case "number":
		kind = "is not a number"
	case "int":
		kind = "is not a whole number"
	case "bool":
		kind = "is not true or false"
	default:
		return fmt.Errorf("%s: %q: %w", dash(f.Name), value, err)
	}
	if ex := flagExample(f); ex != "" {
		return fmt.Errorf("%s: %q %s (%s)", dash(f.Name), value, kind, ex)
	}
	return fmt.Errorf("%s: %q %s", dash(f.Name), value, kind)
}

// flagKind names the kind of f's value: "bool", "duration", "number",
// "int", "list" (a repeatable flag) or "string".
func flagKind(f *flag.Flag) string {
	if _, ok := f.Value.(*listFlag); ok {
		return "list"
	}
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return "bool"
	}
	if g, ok := f.Value.(flag.Getter); ok {
		switch g.Get().(type) {
		case time.Duration:
			return "duration"
		case float64:
			return "number"
		case int, int64, uint, uint64:
			return "int"
		}
	}
	return "string"
}

// flagExample says what a flag's value looks like: "e.g. 10s, 2m".
func flagExample(f *flag.Flag) string {
	switch flagKind(f) {
	case "duration":
		return "e.g. 10s, 2m"
	case "number":
		return "e.g. 1, 0.5"
	case "int":
		return "e.g. " + f.DefValue
	}
	return ""
}

// nearestFlag returns the registered flag closest to name: one typo away
// (two for names of 5 letters or more; a swap of two letters is one), or
// name is a prefix of it of at least 3 letters; "" if none is.
func nearestFlag(fs *flag.FlagSet, name string) string {
	name = strings.ToLower(name)
	limit := 1
	if len(name) >= 5 {
		limit = 2
	}
	best, bestDist := "", limit+1
	fs.VisitAll(func(f *flag.Flag) {
		if len(f.Name) == 1 {
			return
		}
		d := editDistance(name, f.Name)
		if len(name) >= 3 && strings.HasPrefix(f.Name, name) {
			d = min(d, limit) // a prefix: "--work" for --workspace
		}
		if d < bestDist {
			best, bestDist = f.Name, d
		}
	})
	return best
}

// editDistance is the optimal string alignment distance of a and b
// (insertions, deletions, substitutions and swaps of adjacent bytes).
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
