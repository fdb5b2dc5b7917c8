package gate

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

const noticeLine = TruncationNotice + "\n"

// checkShape checks the invariants of every shaped output against the
// whole sanitized text full.
func checkShape(t *testing.T, out string, truncated bool, full string) {
	t.Helper()
	checkClean(t, out)
	if len(out) > OutputBudget {
		t.Fatalf("output is %d bytes, over the budget", len(out))
	}
	if truncated != (len(full) > OutputBudget) {
		t.Fatalf("truncated = %v for %d sanitized bytes", truncated, len(full))
	}
	if !truncated {
		if out != full {
			t.Fatalf("untruncated output differs from the sanitized text")
		}
		return
	}
	tail, ok := strings.CutPrefix(out, noticeLine)
	if !ok {
		t.Fatalf("truncated output does not start with the notice: %.60q", out)
	}
	if !strings.HasSuffix(full, tail) {
		t.Fatalf("truncated output is not a tail of the text")
	}
	if room := OutputBudget - len(noticeLine); len(tail) <= room-utf8.UTFMax {
		t.Fatalf("tail is %d bytes; it should fill %d to within a character", len(tail), room)
	}
}

func TestShapeBudget(t *testing.T) {
	x := func(n int) string { return strings.Repeat("x", n) }
	tests := []struct {
		name           string
		stdout, stderr string
		truncated      bool
	}{
		{"empty", "", "", false},
		{"small", "out\n", "err\n", false},
		{"11999", x(11999), "", false},
		{"exactly 12000", x(12000), "", false},
		{"12001", x(12001), "", true},
		{"split 6000 + 6000", x(6000), x(6000), false},
		{"split 6000 + 6001", x(6000), x(6001), true},
		{"stderr only 12000", "", x(12000), false},
		{"stderr only 12001", "", x(12001), true},
		{"stderr over alone", x(100), x(20000), true},
		{"huge stdout, small stderr", x(1 << 20), "the error\n", true},
		// The budget is counted after sanitizing.
		{"4000 NULs are 12000 bytes", strings.Repeat("\x00", 4000), "", false},
		{"4001 NULs are 12003 bytes", strings.Repeat("\x00", 4001), "", true},
		{"escapes do not count", strings.Repeat("\x1b[0m", 10000) + x(12000), "", false},
		{"CRLF counts once", strings.Repeat("a\r\n", 6000), "", false},
		{"CRLF over", strings.Repeat("a\r\n", 6001), "", true},
		{"pending byte at end counts", x(11998) + "\xe2\x82", "", true},
		{"pending byte at end fits", x(11997) + "\xe2\x82", "", false},
		{"invalid bytes expand", x(11000) + strings.Repeat("\xff", 334), "", true},
		{"invalid bytes fit", x(11000) + strings.Repeat("\xff", 333), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, truncated := Shape([]byte(tt.stdout), []byte(tt.stderr))
			if truncated != tt.truncated {
				t.Fatalf("truncated = %v, want %v", truncated, tt.truncated)
			}
			checkShape(t, out, truncated, Sanitize([]byte(tt.stdout))+Sanitize([]byte(tt.stderr)))
		})
	}
}

func TestShapeOrderAndNotice(t *testing.T) {
	out, truncated := Shape([]byte("OUT"), []byte("ERR"))
	if out != "OUTERR" || truncated {
		t.Errorf("Shape = %q, %v; want stdout then stderr, concatenated", out, truncated)
	}
	out, _ = Shape([]byte(strings.Repeat("o", 20000)), []byte("ERR"))
	want := noticeLine + strings.Repeat("o", OutputBudget-len(noticeLine)-3) + "ERR"
	if out != want {
		t.Errorf("truncated Shape = %.80q...%q, want the notice line then the tail", out, out[len(out)-10:])
	}
	if len(out) != OutputBudget {
		t.Errorf("len = %d, want exactly %d", len(out), OutputBudget)
	}
	if TruncationNotice != "[Output truncated: showing tail only.]" {
		t.Errorf("TruncationNotice = %q", TruncationNotice)
	}
	// Each stream is sanitized on its own: an escape left open in stdout
	// does not swallow stderr, and a CR ending stdout does not pair with
	// an LF starting stderr.
	out, _ = Shape([]byte("a\x1b]0;open"), []byte("err"))
	if out != "aerr" {
		t.Errorf("Shape = %q, want %q", out, "aerr")
	}
	out, _ = Shape([]byte("a\r"), []byte("\nb"))
	if out != "a\n\nb" {
		t.Errorf("Shape = %q, want %q", out, "a\n\nb")
	}
}

// TestShapeMultibyteCut puts every kind of character across the cut.
func TestShapeMultibyteCut(t *testing.T) {
	for _, ch := range []string{"é", "€", "🙂", fffd} {
		for pad := 0; pad < 8; pad++ {
			body := strings.Repeat(ch, OutputBudget/len(ch)+1)
			in := strings.Repeat("x", pad) + body
			out, truncated := Shape([]byte(in), nil)
			checkShape(t, out, truncated, in)
			if truncated {
				tail := strings.TrimPrefix(out, noticeLine)
				if strings.Trim(tail, ch) != "" {
					t.Errorf("%q pad %d: tail holds a split character", ch, pad)
				}
			}
		}
	}
	// Invalid bytes at the front of the tail are sanitized before the cut,
	// so a cut never creates a U+FFFD that could push past the budget.
	in := append(bytes.Repeat([]byte("\xff"), 5000), bytes.Repeat([]byte("€"), 4000)...)
	out, truncated := Shape(in, nil)
	checkShape(t, out, truncated, Sanitize(in))
}

func TestShapeTailsNilAndReuse(t *testing.T) {
	if out, tr := ShapeTails(nil, nil); out != "" || tr {
		t.Errorf("ShapeTails(nil, nil) = %q, %v", out, tr)
	}
	o := NewTail(0)
	o.Write([]byte("a\xe2\x82"))
	if out, _ := ShapeTails(o, nil); out != "a"+fffd {
		t.Errorf("mid-character ShapeTails = %+q, want a U+FFFD for the open sequence", out)
	}
	o.Write([]byte("\xac\r"))
	if out, _ := ShapeTails(o, nil); out != "a€\n" {
		t.Errorf("after completing = %+q, want %+q (ShapeTails must not end the stream)", out, "a€\n")
	}
	o.Write([]byte("\nb"))
	if out, _ := ShapeTails(o, nil); out != "a€\nb" {
		t.Errorf("CR LF across writes = %+q, want %+q", out, "a€\nb")
	}
	if o.Total() != 7 {
		t.Errorf("Total = %d, want 7", o.Total())
	}
}
