package stage

import "strings"

// ArgKind tells where a path value came from.
type ArgKind uint8

const (
	// FlagValue: the value of a path flag ("--flag value" or "--flag=value").
	FlagValue ArgKind = iota
	// AtFile: a positional "@path".
	AtFile
	// Output: the positional output path of Agent.OutputAfter.
	Output
)

// Arg is one path-carrying argument found by Scan.
type Arg struct {
	Index  int     // position in argv
	Kind   ArgKind //
	Flag   string  // the flag as written ("--extension", "-e"), "@" for AtFile, OutputAfter for Output
	Prefix string  // what precedes Value in argv[Index]: "", "--flag=" or "@"
	Value  string  // the path as written
	Spec   Flag    // how to stage it
}

// String renders the argument for messages: "--extension /x", "@/x".
func (a Arg) String() string {
	switch {
	case a.Kind == AtFile:
		return "@" + a.Value
	case a.Kind == Output:
		return a.Flag + " output " + a.Value
	case a.Prefix != "":
		return a.Prefix + a.Value
	}
	return a.Flag + " " + a.Value
}

// Scan finds the arguments of argv that carry host paths for the agent
// t.Lookup(argv[0]); it returns nil for programs not in the table. It stops
// at the first bare "--" except for "@path" positionals of agents with
// AtFiles. Scan never fails: an argument it does not understand is simply
// not a path.
func Scan(argv []string, t Table) []Arg {
	if len(argv) == 0 {
		return nil
	}
	ag := t.Lookup(argv[0])
	if ag == nil {
		return nil
	}
	var out []Arg
	firstMsg := -1
	outputOn := false
	i := 1
	for i < len(argv) {
		a := argv[i]
		if a == "--" {
			if ag.AtFiles {
				for j := i + 1; j < len(argv); j++ {
					if v, ok := strings.CutPrefix(argv[j], "@"); ok {
						out = append(out, Arg{Index: j, Kind: AtFile, Flag: "@", Prefix: "@", Value: v})
					}
				}
			}
			break
		}
		if v, ok := strings.CutPrefix(a, "@"); ok && ag.AtFiles {
			out = append(out, Arg{Index: i, Kind: AtFile, Flag: "@", Prefix: "@", Value: v})
			i++
			continue
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			if firstMsg < 0 {
				firstMsg = i
			}
			i++
			continue
		}
		name, value, glued := a, "", false
		if strings.HasPrefix(a, "--") {
			if k := strings.IndexByte(a, '='); k > 2 {
				name, value, glued = a[:k], a[k+1:], true
			}
		}
		if f, ok := ag.flag(name); ok {
			if glued {
				if f.Glued {
					out = append(out, Arg{Index: i, Kind: FlagValue, Flag: name, Prefix: name + "=", Value: value, Spec: f})
				}
				i++
				continue
			}
			if i+1 >= len(argv) || !f.Consume.takes(argv[i+1]) {
				i++
				continue
			}
			out = append(out, Arg{Index: i + 1, Kind: FlagValue, Flag: name, Value: argv[i+1], Spec: f})
			if name == ag.OutputAfter {
				outputOn = true
			}
			i += 2
			for f.Variadic && i < len(argv) && !strings.HasPrefix(argv[i], "-") {
				out = append(out, Arg{Index: i, Kind: FlagValue, Flag: name, Value: argv[i], Spec: f})
				i++
			}
			continue
		}
		c := Never
		if !glued {
			var known bool
			if c, known = ag.Values[name]; !known && strings.HasPrefix(name, "--") {
				c = ag.UnknownLong
			}
		}
		if i+1 < len(argv) && c.takes(argv[i+1]) {
			if c == Message && firstMsg < 0 {
				firstMsg = i + 1
			}
			i += 2
			continue
		}
		i++
	}
	if outputOn && firstMsg >= 0 {
		out = append(out, Arg{Index: firstMsg, Kind: Output, Flag: ag.OutputAfter, Value: argv[firstMsg], Spec: ag.OutputFlag})
	}
	return out
}

// Rewrite returns a copy of argv in which every argument found by Scan is
// replaced by resolve's result, keeping its form ("--flag=", "@"). resolve
// is called in argv order; it returns false to leave the argument as it is.
// The result always has len(argv) elements.
func Rewrite(argv []string, t Table, resolve func(Arg) (string, bool)) []string {
	out := append([]string(nil), argv...)
	args := Scan(argv, t)
	sortByIndex(args)
	for _, a := range args {
		if v, ok := resolve(a); ok {
			out[a.Index] = a.Prefix + v
		}
	}
	return out
}

// sortByIndex orders args by position (the output positional is found last
// but may sit anywhere); insertion sort, the slices are tiny.
func sortByIndex(args []Arg) {
	for i := 1; i < len(args); i++ {
		for j := i; j > 0 && args[j].Index < args[j-1].Index; j-- {
			args[j], args[j-1] = args[j-1], args[j]
		}
	}
}
