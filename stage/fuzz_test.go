package stage

import (
	"strings"
	"testing"
)

// FuzzRewrite checks the argv rewriter's invariants on arbitrary argv
// (arguments separated by NUL): it never panics, the result has the input's
// length, argv[0] is kept, nothing after the first bare "--" changes except
// "@path" arguments (which stay "@..."), and programs not in the table are
// passed through verbatim.
func FuzzRewrite(f *testing.F) {
	for _, s := range []string{
		"pi\x00--extension\x00/tmp/a.mjs",
		"pi\x00-e=x\x00--\x00@f\x00-e\x00y",
		"pi\x00--export\x00s.jsonl\x00out.html",
		"claude\x00--mcp-config\x00a\x00b\x00--\x00--settings\x00c",
		"codex\x00--extension\x00/tmp/a",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		argv := strings.Split(s, "\x00")
		calls := 0
		out := Rewrite(argv, DefaultTable, func(a Arg) (string, bool) {
			calls++
			if a.Index <= 0 || a.Index >= len(argv) {
				t.Fatalf("Arg index %d out of range for %q", a.Index, argv)
			}
			if !strings.HasSuffix(argv[a.Index], a.Value) || !strings.HasPrefix(argv[a.Index], a.Prefix) {
				t.Fatalf("Arg %+v does not match argv[%d] = %q", a, a.Index, argv[a.Index])
			}
			return "/staged/" + a.Value, true
		})
		if len(out) != len(argv) {
			t.Fatalf("len %d, want %d", len(out), len(argv))
		}
		if out[0] != argv[0] {
			t.Fatalf("argv[0] changed: %q -> %q", argv[0], out[0])
		}
		if DefaultTable.Lookup(argv[0]) == nil && calls > 0 {
			t.Fatalf("unknown program %q got %d rewrites", argv[0], calls)
		}
		dash := -1
		for i, a := range argv {
			if i > 0 && a == "--" {
				dash = i
				break
			}
		}
		if dash < 0 {
			return
		}
		for i := dash; i < len(argv); i++ {
			if out[i] == argv[i] {
				continue
			}
			if i == dash || !strings.HasPrefix(argv[i], "@") || !strings.HasPrefix(out[i], "@") {
				t.Fatalf("argument %d after -- rewritten: %q -> %q (argv %q)", i, argv[i], out[i], argv)
			}
		}
	})
}
