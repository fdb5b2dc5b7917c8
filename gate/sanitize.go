package gate

import (
	"unicode"
	"unicode/utf8"
)

// The sanitizer turns raw program output into text that is safe to show:
// valid UTF-8 with no terminal escape sequence, no control character but tab
// and newline, and no format character. It is a streaming state machine, so
// a Tail can sanitize as the bytes arrive and keep only sanitized text; a
// sequence (escape or UTF-8) split across writes is handled exactly as if it
// came in one piece.
//
// The stages, per input byte:
//
//  1. UTF-8 decoding as the WHATWG Encoding Standard specifies it: every
//     maximal ill-formed subsequence (an invalid byte, a truncated sequence,
//     an overlong form, an encoded surrogate, a value past U+10FFFF) becomes
//     one U+FFFD.
//  2. Escape sequences (ECMA-48) are removed whole: CSI (ESC [ params
//     intermediates final), OSC (ESC ]), DCS (ESC P), SOS (ESC X), PM (ESC ^)
//     and APC (ESC _) strings up to BEL or ST (ESC \), and the short forms
//     ESC intermediates* final (ESC 7, ESC c, ESC ( B ...). A byte that
//     cannot continue a CSI or short sequence ends it and is then treated as
//     text; inside a string everything up to the terminator is dropped (CAN
//     or SUB cancel the string). An unterminated sequence at the end of the
//     stream is dropped.
//  3. Line endings: CR LF becomes LF, and a lone CR becomes LF. This comes
//     before stage 4, so CR never becomes U+FFFD.
//  4. Every other C0 control, DEL, C1 control (U+0080..U+009F), format
//     character (category Cf: bidi controls, zero-width characters, the BOM,
//     soft hyphen, tags) and surrogate becomes U+FFFD. Tab and LF are kept,
//     and so are U+2028 and U+2029 (they are not controls).
//
// The zero sanitizer is ready to use.
type sanitizer struct {
	// UTF-8 decoder state.
	need, seen int  // continuation bytes needed and seen so far
	cp         rune // code point being assembled
	lo, hi     byte // range of the next continuation byte

	esc    escState
	lastCR bool // the previous character was a CR (already written as LF)
}

type escState uint8

const (
	escNone      escState = iota // text
	escStart                     // after ESC
	escInter                     // after ESC and intermediate bytes
	escCSI                       // inside ESC [
	escString                    // inside an OSC, DCS, SOS, PM or APC string
	escStringEsc                 // after ESC inside a string
)

// invalid stands for an ill-formed UTF-8 subsequence.
const invalid rune = -1

var replacement = []byte(string(utf8.RuneError))

// feed appends the sanitized form of p to dst. Its output is at most
// 3*len(p)+3 bytes (each byte yields at most one U+FFFD, plus one for a
// sequence pending from before).
func (s *sanitizer) feed(dst, p []byte) []byte {
	for i := 0; i < len(p); {
		b := p[i]
		if s.need == 0 {
			if b >= 0x20 && b < 0x7f && s.esc == escNone {
				// Fast path: a run of printable ASCII is copied as is.
				j := i + 1
				for j < len(p) && p[j] >= 0x20 && p[j] < 0x7f {
					j++
				}
				dst = append(dst, p[i:j]...)
				s.lastCR = false
				i = j
				continue
			}
			i++
			s.lo, s.hi = 0x80, 0xBF
			switch {
			case b < 0x80:
				dst = s.char(dst, rune(b))
			case b >= 0xC2 && b <= 0xDF:
				s.need, s.cp = 1, rune(b&0x1F)
			case b >= 0xE0 && b <= 0xEF:
				if b == 0xE0 {
					s.lo = 0xA0 // no overlong forms
				} else if b == 0xED {
					s.hi = 0x9F // no surrogates
				}
				s.need, s.cp = 2, rune(b&0x0F)
			case b >= 0xF0 && b <= 0xF4:
				if b == 0xF0 {
					s.lo = 0x90 // no overlong forms
				} else if b == 0xF4 {
					s.hi = 0x8F // nothing past U+10FFFF
				}
				s.need, s.cp = 3, rune(b&0x07)
			default:
				dst = s.char(dst, invalid)
			}
			continue
		}
		if b < s.lo || b > s.hi {
			// The sequence is cut short: one U+FFFD for it, then b starts over.
			s.resetUTF8()
			dst = s.char(dst, invalid)
			continue
		}
		i++
		s.lo, s.hi = 0x80, 0xBF
		s.cp = s.cp<<6 | rune(b&0x3F)
		s.seen++
		if s.seen == s.need {
			r := s.cp
			s.resetUTF8()
			dst = s.char(dst, r)
		}
	}
	return dst
}

// finish appends what the end of the stream produces: U+FFFD for a
// truncated UTF-8 sequence (unless inside an escape string). An unfinished
// escape sequence produces nothing.
func (s *sanitizer) finish(dst []byte) []byte {
	if s.need > 0 {
		s.resetUTF8()
		dst = s.char(dst, invalid)
	}
	s.esc = escNone
	return dst
}

func (s *sanitizer) resetUTF8() {
	s.need, s.seen, s.cp = 0, 0, 0
	s.lo, s.hi = 0x80, 0xBF
}

// char runs one decoded character (or invalid) through stages 2 to 4.
func (s *sanitizer) char(dst []byte, r rune) []byte {
	switch s.esc {
	case escNone:
		return s.text(dst, r)
	case escStart:
		switch {
		case r == '[':
			s.esc = escCSI
		case r == ']' || r == 'P' || r == 'X' || r == '^' || r == '_':
			s.esc = escString
		case r >= 0x20 && r <= 0x2F:
			s.esc = escInter
		case r >= 0x30 && r <= 0x7E:
			s.esc = escNone // a two-character sequence: ESC 7, ESC c, ESC = ...
		case r == 0x1B:
			// ESC ESC: the first is dropped, the second starts over.
		default:
			s.esc = escNone
			return s.text(dst, r)
		}
	case escInter:
		switch {
		case r >= 0x20 && r <= 0x2F:
		case r >= 0x30 && r <= 0x7E:
			s.esc = escNone
		case r == 0x1B:
			s.esc = escStart
		default:
			s.esc = escNone
			return s.text(dst, r)
		}
	case escCSI:
		switch {
		case r >= 0x20 && r <= 0x3F: // parameter and intermediate bytes
		case r >= 0x40 && r <= 0x7E: // final byte
			s.esc = escNone
		case r == 0x1B:
			s.esc = escStart
		default:
			s.esc = escNone
			return s.text(dst, r)
		}
	case escString:
		switch r {
		case 0x07, 0x9C, 0x18, 0x1A: // BEL, ST (C1), CAN, SUB
			s.esc = escNone
		case 0x1B:
			s.esc = escStringEsc
		}
	case escStringEsc:
		if r == '\\' { // ST
			s.esc = escNone
			return dst
		}
		// ESC inside a string ends it and starts a new sequence.
		s.esc = escStart
		return s.char(dst, r)
	}
	return dst
}

// text handles a character outside escape sequences (stages 3 and 4).
func (s *sanitizer) text(dst []byte, r rune) []byte {
	switch r {
	case '\n':
		if s.lastCR {
			s.lastCR = false // the CR of this CR LF was already written as LF
			return dst
		}
		return append(dst, '\n')
	case '\r':
		s.lastCR = true
		return append(dst, '\n')
	}
	s.lastCR = false
	switch {
	case r == '\t':
		return append(dst, '\t')
	case r == 0x1B:
		s.esc = escStart
		return dst
	case r < 0x20 || r == 0x7F || (r >= 0x80 && r <= 0x9F):
		return append(dst, replacement...)
	case r < 0x80:
		return append(dst, byte(r))
	case r >= 0xD800 && r <= 0xDFFF, unicode.Is(unicode.Cf, r):
		return append(dst, replacement...)
	}
	return utf8.AppendRune(dst, r)
}

// Sanitize returns the sanitized form of p, with no length limit: valid
// UTF-8 with escape sequences removed, CR LF and CR turned into LF, and every
// control but tab and LF, every format character, surrogate and ill-formed
// sequence replaced by U+FFFD. Shape and Tail use the same rules.
func Sanitize(p []byte) string {
	var s sanitizer
	out := s.feed(make([]byte, 0, len(p)), p)
	return string(s.finish(out))
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
