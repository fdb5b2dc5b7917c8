// Package safetext makes text that came from a sandbox safe to print on
// the user's terminal as part of sbx's own lines.
//
// A sandboxed program chooses the names it looks up, the paths it opens,
// its comm and the hosts it dials; sbx reports them. Printed raw, an ESC
// could recolour or rewrite the terminal, a CR or LF could start a line
// that looks like sbx's own ("sbx: ..."), and a bidi override could make
// a name read backwards. [Escape] turns each such character into a
// visible escape, so the line shows what was there and cannot be mistaken
// for something else.
package safetext

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape returns s with every character that is not safe on a terminal
// written as a visible escape:
//
//   - a backslash as \\ (so that an escape in the output is always one sbx
//     wrote);
//   - C0 controls (U+0000-U+001F, tab, CR and LF included) and DEL as \xHH;
//   - C1 controls (U+0080-U+009F) as \u0085;
//   - format characters (category Cf: the bidi controls U+200E, U+200F,
//     U+061C, U+202A-U+202E, U+2066-U+2069, zero-width characters, the
//     BOM) and the line and paragraph separators U+2028 and U+2029 as
//     \u202e;
//   - each byte of invalid UTF-8 as \xHH.
//
// Everything else, printable ASCII and other printable Unicode, is kept.
// Escape(s) == s exactly when s needs no escaping.
func Escape(s string) string {
	i := strings.IndexFunc(s, unsafeRune)
	if i < 0 && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && n <= 1:
			writeByte(&b, s[0])
		case r == '\\':
			b.WriteString(`\\`)
		case r < 0x20 || r == 0x7f:
			writeByte(&b, byte(r))
		case unsafeRune(r):
			b.WriteString(`\u`)
			h := strconv.FormatUint(uint64(r), 16)
			b.WriteString(strings.Repeat("0", max(0, 4-len(h))))
			b.WriteString(h)
		default:
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}

// writeByte writes c as \xHH.
func writeByte(b *strings.Builder, c byte) {
	const hex = "0123456789abcdef"
	b.WriteString(`\x`)
	b.WriteByte(hex[c>>4])
	b.WriteByte(hex[c&0xf])
}

// unsafeRune reports whether r is escaped by Escape (invalid UTF-8 aside).
func unsafeRune(r rune) bool {
	switch {
	case r == '\\', r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r < 0x7f:
		return false
	case r == 0x2028, r == 0x2029:
		return true
	}
	return unicode.Is(unicode.Cf, r)
}
