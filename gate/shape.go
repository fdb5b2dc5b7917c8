package gate

import "strings"

// TruncationNotice starts Output when it is only the tail of what the
// command printed. Shape puts a newline after it, so the tail starts on a
// line of its own.
const TruncationNotice = "[Output truncated: showing tail only.]"

// Shape builds a Result's Output from a command's stdout and stderr: each
// stream is sanitized on its own (see Sanitize), then the two are
// concatenated, stdout first, with nothing added between them (streams are
// not interleaved by time). If the text is at most OutputBudget bytes it is
// returned whole and truncated is false. Otherwise truncated is true and the
// output is TruncationNotice, "\n", and then the longest tail of the text
// that keeps the whole within OutputBudget bytes without splitting a
// character.
//
// Shape needs the whole streams in memory; to bound memory while a command
// runs, stream its output into Tails and call ShapeTails.
func Shape(stdout, stderr []byte) (output string, truncated bool) {
	o, e := NewTail(OutputBudget), NewTail(OutputBudget)
	_, _ = o.Write(stdout) // a Tail never fails a write
	_, _ = e.Write(stderr)
	return ShapeTails(o, e)
}

// ShapeTails is Shape for streams collected by Tails (a nil Tail is an
// empty stream). It does not end the streams: writing may go on and
// ShapeTails be called again. The result equals Shape of everything written
// so far, provided both Tails keep at least OutputBudget bytes.
func ShapeTails(stdout, stderr *Tail) (output string, truncated bool) {
	a, ta, da := stdout.snapshot()
	b, tb, db := stderr.snapshot()
	if !da && !db && ta+tb <= OutputBudget {
		return string(a) + string(b), false
	}
	room := OutputBudget - len(TruncationNotice) - 1
	text := append(a, b...)
	cut := max(len(text)-room, 0)
	for cut < len(text) && !isRuneStart(text[cut]) {
		cut++ // text is valid UTF-8, so this stops at a character
	}
	var sb strings.Builder
	sb.Grow(len(TruncationNotice) + 1 + len(text) - cut)
	sb.WriteString(TruncationNotice)
	sb.WriteByte('\n')
	sb.Write(text[cut:])
	return sb.String(), true
}
