package stage

import (
	"reflect"
	"strings"
	"testing"
)

// mark is a resolver that rewrites every value to "<value>" so a test sees
// exactly which arguments Scan picked and in which form.
func mark(a Arg) (string, bool) { return "<" + a.Value + ">", true }

func TestRewrite(t *testing.T) {
	tests := []struct {
		name string
		in   string // arguments separated by " | "
		want string
	}{
		{"separate", "pi | --extension | /tmp/a.mjs", "pi | --extension | </tmp/a.mjs>"},
		{"glued", "pi | --extension=/tmp/a.mjs", "pi | --extension=</tmp/a.mjs>"},
		{"glued empty", "pi | --extension=", "pi | --extension=<>"},
		{"short -e", "pi | -e | a.mjs", "pi | -e | <a.mjs>"},
		{"repeated", "pi | -e | a | --extension | b | -e=c", "pi | -e | <a> | --extension | <b> | -e=c"},
		{"every pi flag",
			"pi | --skill | s | --prompt-template | p | --theme | t | --append-system-prompt | f | --session | x.jsonl | --fork | y | --session-dir | d | --export | e.jsonl",
			"pi | --skill | <s> | --prompt-template | <p> | --theme | <t> | --append-system-prompt | <f> | --session | <x.jsonl> | --fork | <y> | --session-dir | <d> | --export | <e.jsonl>"},
		{"mcp-config separate", "pi | --mcp-config | m.json", "pi | --mcp-config | <m.json>"},
		{"mcp-config glued", "pi | --mcp-config=m.json", "pi | --mcp-config=<m.json>"},
		{"mcp-config not before a flag", "pi | --mcp-config | --verbose", "pi | --mcp-config | --verbose"},
		{"mcp-config not before @", "pi | --mcp-config | @f", "pi | --mcp-config | @<f>"},
		{"missing value at end", "pi | --extension", "pi | --extension"},
		{"built-in takes a dash value", "pi | --extension | -x", "pi | --extension | <-x>"},
		{"stop at --", "pi | -e | a | -- | -e | b | --session | c", "pi | -e | <a> | -- | -e | b | --session | c"},
		{"@file before --", "pi | @a.md | hi", "pi | @<a.md> | hi"},
		{"@file after --", "pi | -- | @a.md | -e | b", "pi | -- | @<a.md> | -e | b"},
		{"@ alone", "pi | @", "pi | @<>"},
		{"-- as a flag value stops too", "pi | --system-prompt | -- | -e | a", "pi | --system-prompt | -- | -e | a"},
		{"value flag hides @", "pi | --model | @x | --system-prompt | @y", "pi | --model | @x | --system-prompt | @y"},
		{"unknown flag takes a value", "pi | --plan | @x", "pi | --plan | @<x>"},
		{"unknown flag value is not @file", "pi | --ext-flag | value | @x", "pi | --ext-flag | value | @<x>"},
		{"export output positional", "pi | --export | s.jsonl | out.html", "pi | --export | <s.jsonl> | <out.html>"},
		{"export output is the first message", "pi | hello | --export | s.jsonl | out.html", "pi | <hello> | --export | <s.jsonl> | out.html"},
		{"export output after a value flag", "pi | --model | m | --export | s | o", "pi | --model | m | --export | <s> | <o>"},
		{"export output via -p", "pi | -p | o.html | --export | s", "pi | -p | <o.html> | --export | <s>"},
		{"export output after --", "pi | --export | s | -- | o", "pi | --export | <s> | -- | o"},
		{"no export, no output", "pi | out.html", "pi | out.html"},
		{"argv0 path and case", "/usr/local/bin/PI | -e | a", "/usr/local/bin/PI | -e | <a>"},
		{"unknown agent verbatim", "codex | --extension | /tmp/a | @b | -c | x", "codex | --extension | /tmp/a | @b | -c | x"},
		{"node wrapper verbatim", "node | /usr/lib/pi/cli.js | -e | a", "node | /usr/lib/pi/cli.js | -e | a"},
		{"claude flags", "claude | --settings | s.json | --plugin-dir=d | --system-prompt-file | p | --append-system-prompt-file | q",
			"claude | --settings | <s.json> | --plugin-dir=<d> | --system-prompt-file | <p> | --append-system-prompt-file | <q>"},
		{"claude variadic mcp-config", "claude | --mcp-config | a.json | b.json | -p | hi", "claude | --mcp-config | <a.json> | <b.json> | -p | hi"},
		{"claude has no @file", "claude | @a.md", "claude | @a.md"},
		{"claude stops at --", "claude | -- | --settings | s", "claude | -- | --settings | s"},
		{"only argv0", "pi", "pi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := strings.Split(tt.in, " | ")
			got := strings.Join(Rewrite(in, DefaultTable, mark), " | ")
			if got != tt.want {
				t.Errorf("Rewrite(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestRewriteEmptyAndNoop(t *testing.T) {
	if got := Rewrite(nil, DefaultTable, mark); len(got) != 0 {
		t.Errorf("Rewrite(nil) = %q", got)
	}
	in := []string{"pi", "-e", "a"}
	got := Rewrite(in, DefaultTable, func(Arg) (string, bool) { return "x", false })
	if !reflect.DeepEqual(got, in) {
		t.Errorf("declined rewrite changed argv: %q", got)
	}
	got[1] = "changed"
	if in[1] != "-e" {
		t.Error("Rewrite aliases its input")
	}
}

func TestScanKinds(t *testing.T) {
	args := Scan([]string{"pi", "@a", "--export", "s", "o", "--mcp-config=m"}, DefaultTable)
	var got []string
	for _, a := range args {
		got = append(got, a.String())
	}
	want := []string{"@a", "--export s", "--mcp-config=m", "--export output o"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Scan strings = %q, want %q", got, want)
	}
	if args[3].Kind != Output || !args[3].Spec.CopyBack || args[0].Kind != AtFile {
		t.Errorf("kinds: %+v", args)
	}
}

func TestLookup(t *testing.T) {
	for argv0, want := range map[string]string{"pi": "pi", "/opt/Pi": "pi", "claude": "claude", "": "", "pip": "", "/": ""} {
		got := ""
		if ag := DefaultTable.Lookup(argv0); ag != nil {
			got = ag.Name
		}
		if got != want {
			t.Errorf("Lookup(%q) = %q, want %q", argv0, got, want)
		}
	}
}
