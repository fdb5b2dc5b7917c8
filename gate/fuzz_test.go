package gate

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// FuzzParseRequest: the parser never panics, every error is a
// *RejectError, an accepted request survives a JSON round trip, and what the
// gate accepts (short of the disk) the published schema accepts too.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"command":["ls","-la"],"workspace":"/abs/dir","write":false,"confirmWrite":false,"timeoutMs":120000}`,
		`{"command":["bash","-c","x"],"workspace":"/w","allowShell":true,"confirmShell":true,"cwd":"a/b"}`,
		`{"command":["a"],"command":["b"],"workspace":"/w"}`,
		`{"command":["\ud83d\ude42\u0000"],"workspace":"/w","timeoutMs":1.2e3}`,
		`{"command":[],"workspace":"/w","x":{"y":[1,2,{"z":null}]}}`,
		`[1,2,3]`, `{"command":["a"],"workspace":"/w"} {}`, ``, `{`, `{"command":["\ud800"]}`,
	} {
		f.Add([]byte(s))
	}
	sch, _ := schemas(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseRequest(data)
		if err != nil {
			var re *RejectError
			if !errors.As(err, &re) || re.Reason == "" {
				t.Fatalf("error %v (%T) is not a RejectError with a reason", err, err)
			}
			if !reflect.DeepEqual(r, Request{}) {
				t.Fatalf("rejected request returned data")
			}
			return
		}
		out, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseRequest(out)
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("round trip of %s: %#v, %v", out, again, err)
		}
		if r.CheckStatic() == nil {
			if err := schemaAccepts(sch, data); err != nil {
				t.Fatalf("gate accepts but schema rejects %q: %v", data, err)
			}
		}
	})
}

// FuzzShape: shaping never panics, its output is clean valid UTF-8 within
// the budget, truncated exactly when the sanitized text exceeds it, the tail
// is a true tail that fills the budget, and cutting the stream into writes
// changes nothing.
func FuzzShape(f *testing.F) {
	f.Add([]byte("hello\r\nworld\x1b[31m!\x1b[0m"), []byte("err\n"), uint16(3))
	f.Add([]byte(strings.Repeat("€", 4001)), []byte{}, uint16(1))
	f.Add([]byte("\x1b]0;"+strings.Repeat("t", 13000)+"\x07end"), []byte("\xe2\x82"), uint16(5))
	f.Add([]byte(strings.Repeat("\x00", 4001)), []byte("\r"), uint16(0))
	f.Fuzz(func(t *testing.T, stdout, stderr []byte, split uint16) {
		out, truncated := Shape(stdout, stderr)
		checkShape(t, out, truncated, Sanitize(stdout)+Sanitize(stderr))

		o, e := NewTail(0), NewTail(0)
		cut := min(int(split), len(stdout))
		o.Write(stdout[:cut])
		o.Write(stdout[cut:])
		for i := range stderr {
			e.Write(stderr[i : i+1])
		}
		if got, tr := ShapeTails(o, e); got != out || tr != truncated {
			t.Fatalf("streamed shape differs")
		}
		if s := Sanitize(stdout); Sanitize([]byte(s)) != s {
			t.Fatalf("Sanitize is not idempotent")
		}
	})
}
