package gate

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

const fffd = "\ufffd"

func TestSanitize(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"empty", "", ""},
		{"plain", "hello, world\n", "hello, world\n"},
		{"tab and newline kept", "a\tb\nc", "a\tb\nc"},
		// Line endings: folded before controls are replaced, so never U+FFFD.
		{"CRLF", "a\r\nb\r\n", "a\nb\n"},
		{"lone CR", "a\rb", "a\nb"},
		{"CR at end", "a\r", "a\n"},
		{"CR CR LF", "a\r\r\nb", "a\n\nb"},
		{"LF CR", "a\n\rb", "a\n\nb"},
		{"CRLF CRLF", "\r\n\r\n", "\n\n"},
		{"CR LF LF", "\r\n\n", "\n\n"},
		{"progress bar", "10%\r20%\r100%\r\n", "10%\n20%\n100%\n"},
		// Controls.
		{"NUL", "a\x00b", "a" + fffd + "b"},
		{"BEL BS VT FF", "\x07\x08\x0b\x0c", strings.Repeat(fffd, 4)},
		{"DEL", "a\x7fb", "a" + fffd + "b"},
		{"C1 as UTF-8", "\u0080\u0085\u009b31m\u009f", fffd + fffd + fffd + "31m" + fffd},
		{"C1 as raw byte", "\x9b31m", fffd + "31m"},
		{"CAN SUB outside escapes", "\x18\x1a", fffd + fffd},
		// Format characters (Cf).
		{"soft hyphen", "a\u00adb", "a" + fffd + "b"},
		{"bidi override", "abc\u202edcba\u202c", "abc" + fffd + "dcba" + fffd},
		{"bidi isolates", "\u2066x\u2069\u2067\u2068", fffd + "x" + fffd + fffd + fffd},
		{"marks", "\u200e\u200f\u061c", fffd + fffd + fffd},
		{"zero width", "a\u200bb\u200cc\u200dd\u2060e", "a" + fffd + "b" + fffd + "c" + fffd + "d" + fffd + "e"},
		{"BOM", "\ufeffx", fffd + "x"},
		{"interlinear", "\ufff9\ufffa\ufffb", fffd + fffd + fffd},
		{"tags", "\U000e0001\U000e0041", fffd + fffd},
		// Kept.
		{"line and paragraph separators", "a\u2028b\u2029c", "a\u2028b\u2029c"},
		{"unicode text", "héllo 世界 🙂 e\u0301 \ue000 \ufffd", "héllo 世界 🙂 e\u0301 \ue000 \ufffd"},
		{"noncharacter", "\uffff", "\uffff"},
		// Ill-formed UTF-8: one U+FFFD per maximal ill-formed subsequence.
		{"invalid byte", "a\xffb", "a" + fffd + "b"},
		{"truncated 2-byte at end", "a\xc3", "a" + fffd},
		{"truncated 2-byte", "\xc3x", fffd + "x"},
		{"truncated 3-byte", "\xe2\x82x", fffd + "x"},
		{"truncated 4-byte at end", "\xf0\x9f\x99", fffd},
		{"complete 4-byte", "\xf0\x9f\x99\x82", "🙂"},
		{"overlong", "\xc0\xaf\xe0\x80\xaf", strings.Repeat(fffd, 5)},
		{"encoded surrogate", "\xed\xa0\x80", strings.Repeat(fffd, 3)},
		{"past U+10FFFF", "\xf4\x90\x80\x80", strings.Repeat(fffd, 4)},
		{"lone continuation", "\x80\xbf", fffd + fffd},
		{"lead then lead", "\xe2\xe2\x82\xac", fffd + "€"},
		{"lead then CR", "\xc3\r\n", fffd + "\n"},
		{"lead then ESC", "\xc3\x1b[1mx", fffd + "x"},
		// Escape sequences.
		{"SGR", "\x1b[1;31mred\x1b[0m", "red"},
		{"cursor and erase", "\x1b[?25l\x1b[2J\x1b[H\x1b[K", ""},
		{"CSI with intermediate", "\x1b[1 qx", "x"},
		{"CSI cut by LF", "\x1b[31\nx", "\nx"},
		{"CSI cut by NUL", "\x1b[31\x00x", fffd + "x"},
		{"CSI cut by non-ASCII", "\x1b[31éx", "éx"},
		{"CSI cut by ESC", "\x1b[31\x1b[1mx", "x"},
		{"OSC BEL", "\x1b]0;title\x07x", "x"},
		{"OSC ST", "\x1b]0;title\x1b\\x", "x"},
		{"OSC 8 hyperlink", "\x1b]8;;http://a/\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"OSC C1 ST", "\x1b]0;t\u009cx", "x"},
		{"OSC swallows newlines", "\x1b]0;a\nb\x07x", "x"},
		{"OSC with UTF-8 and junk", "\x1b]0;é\xff\x00\x07x", "x"},
		{"OSC cancelled", "\x1b]0;abc\x18x\x1b]0;d\x1ay", "xy"},
		{"OSC cut by new escape", "\x1b]0;abc\x1b[31mx", "x"},
		{"OSC unterminated", "before\x1b]0;never ends\nhidden", "before"},
		{"DCS", "\x1bPq#0;2;0;0;0\x1b\\x", "x"},
		{"SOS PM APC", "\x1bXs\x1b\\a\x1b^p\x1b\\b\x1b_a\x1b\\c", "abc"},
		{"charset", "\x1b(Bx\x1b)0y", "xy"},
		{"two-char", "\x1b7a\x1b8b\x1bc\x1b=\x1b>\x1bMc", "abc"},
		{"ESC # 8", "\x1b#8x", "x"},
		{"ESC ESC", "\x1b\x1b[31mx", "x"},
		{"ESC at end", "x\x1b", "x"},
		{"ESC intermediates at end", "x\x1b(", "x"},
		{"CSI at end", "x\x1b[31", "x"},
		{"ESC LF", "\x1b\nx", "\nx"},
		{"ESC DEL", "\x1b\x7fx", fffd + "x"},
		{"ESC invalid byte", "\x1b\xffx", fffd + "x"},
		{"ESC CR LF", "\x1b\r\nx", "\nx"},
		{"escape between CR and LF", "a\r\x1b[Kb\r\n", "a\nb\n"},
		{"CR escape LF are not adjacent", "a\r\x1b[K\n", "a\n\n"},
		{"escape before CRLF", "\x1b[31m\r\n", "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Sanitize([]byte(tt.in)); got != tt.want {
				t.Errorf("Sanitize(%+q) = %+q, want %+q", tt.in, got, tt.want)
			}
			// Streaming: byte by byte through a Tail gives the same.
			tail := NewTail(0)
			for i := 0; i < len(tt.in); i++ {
				tail.Write([]byte{tt.in[i]})
			}
			if got, _ := ShapeTails(tail, nil); got != tt.want {
				t.Errorf("byte-wise Tail(%+q) = %+q, want %+q", tt.in, got, tt.want)
			}
		})
	}
}

// TestSanitizeEveryControl checks each C0, DEL and C1 control on its own.
func TestSanitizeEveryControl(t *testing.T) {
	for r := rune(0); r < 0xA0; r++ {
		if r >= 0x20 && r < 0x7F {
			continue
		}
		in := "a" + string(r) + "b"
		var want string
		switch r {
		case '\t':
			want = in
		case '\n', '\r':
			want = "a\nb"
		case 0x1B:
			want = "a" // ESC b is a two-character sequence
		default:
			want = "a" + fffd + "b"
		}
		if got := Sanitize([]byte(in)); got != want {
			t.Errorf("U+%04X: Sanitize = %+q, want %+q", r, got, want)
		}
	}
}

// TestSanitizeEveryFormatChar checks every Cf character against the rule.
func TestSanitizeEveryFormatChar(t *testing.T) {
	n := 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !unicode.Is(unicode.Cf, r) {
			continue
		}
		n++
		if got := Sanitize([]byte(string(r))); got != fffd {
			t.Errorf("U+%04X (Cf): Sanitize = %+q, want U+FFFD", r, got)
		}
	}
	if n < 150 {
		t.Errorf("only %d Cf characters: the table is wrong", n)
	}
}

// TestSanitizeOutputClean checks, over every code point, that what comes
// out is clean: valid UTF-8 without controls (but tab, LF), format or
// surrogate characters.
func TestSanitizeOutputClean(t *testing.T) {
	var b []byte
	for r := rune(0); r <= unicode.MaxRune; r++ {
		b = utf8.AppendRune(b, r)
	}
	for i := 0; i < 256; i++ {
		b = append(b, byte(i), 'x', byte(i), byte(255-i))
	}
	checkClean(t, Sanitize(b))
}

func checkClean(t *testing.T, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Fatalf("output is not valid UTF-8")
	}
	for i, r := range s {
		if r == '\t' || r == '\n' {
			continue
		}
		if unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Cs, r) {
			t.Fatalf("output has U+%04X at byte %d", r, i)
		}
	}
}

func TestSanitizeIdempotent(t *testing.T) {
	for _, in := range []string{"a\r\nb\x1b[1mc\x00\xff\u202e", "\x1b]0;x\x07\r\r\n"} {
		once := Sanitize([]byte(in))
		if twice := Sanitize([]byte(once)); twice != once {
			t.Errorf("Sanitize not idempotent on %+q: %+q then %+q", in, once, twice)
		}
	}
}

// TestSanitizeGolden runs testdata/sanitize/*.in through Sanitize, Shape and
// a byte-wise Tail and compares with the .golden files (-update rewrites
// them; review the diff).
func TestSanitizeGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/sanitize/*.in")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no golden inputs under testdata/sanitize")
	}
	for _, in := range files {
		name := strings.TrimSuffix(filepath.Base(in), ".in")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := Shape(data, nil)
			if s := Sanitize(data); len(s) <= OutputBudget && s != got {
				t.Fatalf("Shape and Sanitize differ on an input within budget")
			}
			tail := NewTail(0)
			for i := range data {
				tail.Write(data[i : i+1])
			}
			if streamed, _ := ShapeTails(tail, nil); streamed != got {
				t.Fatalf("byte-wise Tail differs from Shape")
			}
			checkClean(t, got)
			golden := strings.TrimSuffix(in, ".in") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestSanitizeGolden -update)", err)
			}
			if !bytes.Equal([]byte(got), want) {
				t.Errorf("%s: got\n%+q\nwant\n%+q", name, got, want)
			}
		})
	}
}
