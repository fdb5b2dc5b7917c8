package safetext

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", ""},
		{"example.com", "example.com"},
		{"/home/u/some file", "/home/u/some file"},
		{"ünïcødé 名前", "ünïcødé 名前"},
		{`a\b`, `a\\b`},
		{"\x1b[31mred", `\x1b[31mred`},
		{"bell\a", `bell\x07`},
		{"a\r\nsbx: fake", `a\x0d\x0asbx: fake`},
		{"tab\there", `tab\x09here`},
		{"del\x7f", `del\x7f`},
		{"c1\u0085\u009b\u0080\u009f", `c1\u0085\u009b\u0080\u009f`},
		{"evil\u202egnp.exe", `evil\u202egnp.exe`},
		{"\u202a\u202b\u202c\u202d", `\u202a\u202b\u202c\u202d`},
		{"\u2066\u2067\u2068\u2069", `\u2066\u2067\u2068\u2069`},
		{"\u200e\u200f\u061c", `\u200e\u200f\u061c`},
		{"zw\u200bj\ufeff", `zw\u200bj\ufeff`},
		{"ls\u2028ps\u2029", `ls\u2028ps\u2029`},
		{"bad\xff\xfe", `bad\xff\xfe`},
		{"cut\xe2\x80", `cut\xe2\x80`},
		{"raw c1 byte \x9b", `raw c1 byte \x9b`},
	}
	for _, c := range cases {
		if got := Escape(c.in); got != c.want {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestEscapeEveryC0 checks each C0 control and DEL on its own, amid text.
func TestEscapeEveryC0(t *testing.T) {
	for c := 0; c < 0x20; c++ {
		in := "a" + string(rune(c)) + "b"
		want := fmt.Sprintf(`a\x%02xb`, c)
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestEscapeOutputIsSafe: whatever goes in, what comes out is valid UTF-8
// with no control or format character.
func TestEscapeOutputIsSafe(t *testing.T) {
	var in strings.Builder
	for c := 0; c < 0x100; c++ {
		in.WriteByte(byte(c))
	}
	for r := rune(0x80); r < 0x3000; r++ {
		in.WriteRune(r)
	}
	in.WriteRune(0xfeff)
	out := Escape(in.String())
	if !utf8.ValidString(out) {
		t.Fatal("output is not valid UTF-8")
	}
	for _, r := range out {
		if r != '\\' && unsafeRune(r) {
			t.Fatalf("output holds %U", r)
		}
	}
}

func FuzzEscape(f *testing.F) {
	f.Add("a\x1b]0;title\a\u202e")
	f.Fuzz(func(t *testing.T, s string) {
		out := Escape(s)
		if !utf8.ValidString(out) {
			t.Fatalf("Escape(%q) is not valid UTF-8", s)
		}
		for _, r := range out {
			if r != '\\' && unsafeRune(r) {
				t.Fatalf("Escape(%q) holds %U", s, r)
			}
		}
	})
}

// TestLineWriter: each write is one line, escaped but for its final
// newline.
func TestLineWriter(t *testing.T) {
	var b strings.Builder
	w := LineWriter(&b)
	fmt.Fprintf(w, "sbx: %s: ignoring %s\n", "--session s.jsonl", "x\x1b[2K\rsbx: fake\n")
	fmt.Fprintf(w, "no newline \u202e")
	want := `sbx: --session s.jsonl: ignoring x\x1b[2K\x0dsbx: fake\x0a` + "\n" + `no newline \u202e`
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
