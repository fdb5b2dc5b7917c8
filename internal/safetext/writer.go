package safetext

import (
	"io"
	"strings"
)

// lineWriter escapes each Write as one line of sbx's; see LineWriter.
type lineWriter struct{ w io.Writer }

// LineWriter returns a writer for packages that write whole "sbx: ..."
// lines of their own (one line per Write, as fmt.Fprintf does) holding
// names a sandbox chose: each Write reaches w passed through [Escape],
// all but its final newline, so an embedded CR or LF cannot start a line
// of its own. It is Escape applied at the boundary of a package, not a
// second escaping.
func LineWriter(w io.Writer) io.Writer { return lineWriter{w} }

func (l lineWriter) Write(p []byte) (int, error) {
	s, nl := strings.CutSuffix(string(p), "\n")
	out := Escape(s)
	if nl {
		out += "\n"
	}
	if _, err := io.WriteString(l.w, out); err != nil {
		return 0, err
	}
	return len(p), nil
}
