package main

import (
	"errors"
	"flag"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"
)

// A command's "Flags:" section is generated from the flag set it parses:
// each flag's usage string is its help entry, so a flag cannot exist without
// its description, nor a description outlive its flag (docs.go reads the
// same text for the man page and the completions; docs_test.go checks that
// every registered flag is described).
//
// The usage string of a flag that takes an argument starts with the
// argument's placeholder in backquotes ("`DIR` directory to work in"); a
// flag shown with several arguments separates its entries with a newline
// ("`NAME` pass ...\n`NAME=VALUE` set ..."). A second name of the same flag
// (-w for --write, registered on the same variable) has an empty usage
// string and is listed with it ("-w, --write").

// helpFlagNames are the -h/--help every command takes; no help text lists them.
var helpFlagNames = map[string]bool{"help": true, "h": true}

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

// sameValue reports whether two flags set the same variable (one flag, two
// names).
func sameValue(a, b flag.Value) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.Kind() == reflect.Pointer && vb.Kind() == reflect.Pointer && va.Type() == vb.Type() && va.Pointer() == vb.Pointer()
}

// flagEntries returns fs's help entries, sorted by the flag's long name,
// and an error naming every flag that has no usage string (and is no second
// name of one that has).
func flagEntries(fs *flag.FlagSet) ([]flagEntry, error) {
	var all []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if !helpFlagNames[f.Name] {
			all = append(all, f)
		}
	})
	var entries []flagEntry
	var errs []error
	for _, f := range all {
		if f.Usage == "" {
			continue // a second name: listed with its flag, or reported below
		}
		names := []string{f.Name}
		for _, g := range all {
			if g != f && g.Usage == "" && sameValue(f.Value, g.Value) {
				names = append(names, g.Name)
			}
		}
		sort.Slice(names, func(i, j int) bool { return len(names[i]) < len(names[j]) })
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
	}
	for _, g := range all {
		if g.Usage != "" {
			continue
		}
		alias := false
		for _, f := range all {
			alias = alias || (f.Usage != "" && sameValue(f.Value, g.Value))
		}
		if !alias {
			errs = append(errs, fmt.Errorf("flag %s has no usage text", dash(g.Name)))
		}
	}
	long := func(e flagEntry) string { return e.names[len(e.names)-1] }
	sort.SliceStable(entries, func(i, j int) bool { return long(entries[i]) < long(entries[j]) })
	return entries, errors.Join(errs...)
}

// flagHelp formats fs's flags as the "Flags:" section of a help text: each
// entry's names and placeholder at the left, its text wrapped at column 20
// (on the next line when the names are wider).
func flagHelp(fs *flag.FlagSet) string {
	entries, err := flagEntries(fs)
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

// The errors of package flag, whose texts are fixed (flag.go).
var (
	reUndefined = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)
	reNeedsArg  = regexp.MustCompile(`^flag needs an argument: -+(.*)$`)
	reInvalid   = regexp.MustCompile(`^invalid (?:boolean )?value "((?:[^"\\]|\\.)*)" for (?:flag )?-+([^:]*): (.*)$`)
	reBadSyntax = regexp.MustCompile(`^bad flag syntax: (.*)$`)
)

// flagError rewrites an error of fs.Parse into sbx's form: flags with the
// dashes users type (--timeout, -w), a "did you mean" for an unknown flag
// close to a real one, and for a bad value what the flag expects
// (`--timeout: "10" is not a duration (e.g. 10s, 2m)`).
func flagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if m := reUndefined.FindStringSubmatch(msg); m != nil {
		if near := nearestFlag(fs, m[1]); near != "" {
			return fmt.Errorf("unknown flag %s (did you mean %s?)", dash(m[1]), dash(near))
		}
		return fmt.Errorf("unknown flag %s", dash(m[1]))
	}
	if m := reNeedsArg.FindStringSubmatch(msg); m != nil {
		if ex := flagExample(fs.Lookup(m[1])); ex != "" {
			return fmt.Errorf("%s needs a value (%s)", dash(m[1]), ex)
		}
		return fmt.Errorf("%s needs a value", dash(m[1]))
	}
	if m := reInvalid.FindStringSubmatch(msg); m != nil {
		name, value := m[2], m[1]
		f := fs.Lookup(name)
		var kind string
		if f != nil {
			if g, ok := f.Value.(flag.Getter); ok {
				switch g.Get().(type) {
				case time.Duration:
					kind = "is not a duration"
				case float64:
					kind = "is not a number"
				case int, int64, uint, uint64:
					kind = "is not a whole number"
				case bool:
					kind = "is not true or false"
				}
			}
		}
		if kind == "" {
			return fmt.Errorf("%s: %q: %s", dash(name), value, m[3])
		}
		if ex := flagExample(f); ex != "" {
			return fmt.Errorf("%s: %q %s (%s)", dash(name), value, kind, ex)
		}
		return fmt.Errorf("%s: %q %s", dash(name), value, kind)
	}
	if m := reBadSyntax.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("bad flag syntax %q", m[1])
	}
	return err
}

// flagExample says what a flag's value looks like: "e.g. 10s, 2m".
func flagExample(f *flag.Flag) string {
	if f == nil {
		return ""
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return ""
	}
	switch g.Get().(type) {
	case time.Duration:
		return "e.g. 10s, 2m"
	case float64:
		return "e.g. 1, 0.5"
	case int, int64, uint, uint64:
		return "e.g. " + f.DefValue
	case bool:
		return ""
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
		if len(f.Name) == 1 || helpFlagNames[f.Name] {
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

// parseCommand registers -h and --help on fs, parses the command's args
// and prints usage(fs) for a help request. done says the command ends
// here, with code: 0 after the help, 125 for a usage error (said on stderr
// in sbx's form, with a pointer to the help).
func parseCommand(s streams, name string, fs *flag.FlagSet, args []string, usage func(*flag.FlagSet) string) (code int, done bool) {
	var help bool
	fs.BoolVar(&help, "help", false, "")
	fs.BoolVar(&help, "h", false, "")
	err := fs.Parse(args)
	if help || errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(s.out, usage(fs))
		return 0, true
	}
	if err != nil {
		return fail(s, fmt.Errorf("%s: %w (see sbx %s --help)", name, flagError(fs, err), name)), true
	}
	return 0, false
}
