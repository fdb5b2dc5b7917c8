package gate

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseRequestAccepts(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Request
	}{
		{"minimal", `{"command":["ls"],"workspace":"/w"}`,
			Request{Command: []string{"ls"}, Workspace: "/w"}},
		{"all keys", `{"command":["ls","-la"],"workspace":"/w","cwd":"a/b","write":true,"confirmWrite":true,` +
			`"allowShell":true,"confirmShell":true,"timeoutMs":5000}`,
			Request{Command: []string{"ls", "-la"}, Workspace: "/w", Cwd: "a/b", Write: true, ConfirmWrite: true,
				AllowShell: true, ConfirmShell: true, TimeoutMs: 5000}},
		{"whitespace around", " \n\t{ \"command\" : [ \"ls\" ] , \"workspace\" : \"/w\" }\r\n ",
			Request{Command: []string{"ls"}, Workspace: "/w"}},
		{"key order free", `{"workspace":"/w","timeoutMs":1,"command":["a"]}`,
			Request{Command: []string{"a"}, Workspace: "/w", TimeoutMs: 1}},
		{"empty command array parses (Check refuses it)", `{"command":[],"workspace":"/w"}`,
			Request{Command: []string{}, Workspace: "/w"}},
		{"escapes decoded", `{"command":["\u00e9\n","\ud83d\ude42"],"workspace":"/w"}`,
			Request{Command: []string{"é\n", "🙂"}, Workspace: "/w"}},
		{"escaped key matches", `{"\u0063ommand":["a"],"workspace":"/w"}`,
			Request{Command: []string{"a"}, Workspace: "/w"}},
		{"timeout max", `{"command":["a"],"workspace":"/w","timeoutMs":120000}`,
			Request{Command: []string{"a"}, Workspace: "/w", TimeoutMs: 120000}},
		{"timeout 1.0 is an integer", `{"command":["a"],"workspace":"/w","timeoutMs":1.0}`,
			Request{Command: []string{"a"}, Workspace: "/w", TimeoutMs: 1}},
		{"timeout 1.2e3 is an integer", `{"command":["a"],"workspace":"/w","timeoutMs":1.2e3}`,
			Request{Command: []string{"a"}, Workspace: "/w", TimeoutMs: 1200}},
		{"timeout 12e4", `{"command":["a"],"workspace":"/w","timeoutMs":12E+4}`,
			Request{Command: []string{"a"}, Workspace: "/w", TimeoutMs: 120000}},
		{"timeout 5000e-3", `{"command":["a"],"workspace":"/w","timeoutMs":5000e-3}`,
			Request{Command: []string{"a"}, Workspace: "/w", TimeoutMs: 5}},
		{"false flags", `{"command":["a"],"workspace":"/w","write":false,"confirmWrite":false}`,
			Request{Command: []string{"a"}, Workspace: "/w"}},
		{"ro paths", `{"command":["a"],"workspace":"/w","ro":["/opt/agent","/home/u/.nvm/versions/node/v22"]}`,
			Request{Command: []string{"a"}, Workspace: "/w", ReadOnly: []string{"/opt/agent", "/home/u/.nvm/versions/node/v22"}}},
		{"ro empty", `{"command":["a"],"workspace":"/w","ro":[]}`,
			Request{Command: []string{"a"}, Workspace: "/w", ReadOnly: []string{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseRequest([]byte(tt.in))
			if err != nil {
				t.Fatalf("ParseRequest: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestParseRequestRejects(t *testing.T) {
	tests := []struct {
		name, in, field, msg string
	}{
		{"empty input", ``, "", "request is empty"},
		{"only space", " \n", "", "request is empty"},
		{"not JSON", `command`, "", "request is not valid JSON"},
		{"array", `[{"command":["a"]}]`, "", "request must be a JSON object, not an array"},
		{"string", `"x"`, "", "request must be a JSON object, not a string"},
		{"null", `null`, "", "request must be a JSON object, not null"},
		{"number", `12`, "", "request must be a JSON object, not a number"},
		{"unterminated", `{"command":["a"],"workspace":"/w"`, "", "request is not valid JSON"},
		{"trailing comma", `{"command":["a"],"workspace":"/w",}`, "", "request is not valid JSON"},
		{"trailing object", `{"command":["a"],"workspace":"/w"}{}`, "", "request has data after the JSON object (an object)"},
		{"trailing garbage", `{"command":["a"],"workspace":"/w"} x`, "", "request is not valid JSON"},
		{"trailing number", `{"command":["a"],"workspace":"/w"} 1`, "", "request has data after the JSON object (a number)"},
		{"unknown key", `{"command":["a"],"workspace":"/w","image":"x"}`, "image", `unknown key "image" in request`},
		{"ro a string", `{"command":["a"],"workspace":"/w","ro":"/x"}`, "ro", "ro must be an array of strings, not a string"},
		{"ro null", `{"command":["a"],"workspace":"/w","ro":null}`, "ro", "ro must be an array of strings, not null"},
		{"ro a number in it", `{"command":["a"],"workspace":"/w","ro":["/x",1]}`, "ro", "ro[1] must be a string, not a number"},
		{"case differs", `{"Command":["a"],"workspace":"/w"}`, "Command", `unknown key "Command" in request`},
		{"unknown key with object", `{"command":["a"],"workspace":"/w","x":{"y":1}}`, "x", `unknown key "x" in request`},
		{"duplicate command", `{"command":["a"],"command":["b"],"workspace":"/w"}`, "command", `duplicate key "command" in request`},
		{"duplicate write", `{"command":["a"],"workspace":"/w","write":false,"write":true}`, "write", `duplicate key "write" in request`},
		{"duplicate via escape", `{"command":["a"],"workspace":"/w","\u0077orkspace":"/x"}`, "workspace", `duplicate key "workspace" in request`},
		{"missing command", `{"workspace":"/w"}`, "command", `request is missing required key "command"`},
		{"missing workspace", `{"command":["a"]}`, "workspace", `request is missing required key "workspace"`},
		{"command string", `{"command":"ls -la","workspace":"/w"}`, "command", "command must be an array of strings, not a string"},
		{"command null", `{"command":null,"workspace":"/w"}`, "command", "command must be an array of strings, not null"},
		{"command object", `{"command":{"0":"ls"},"workspace":"/w"}`, "command", "command must be an array of strings, not an object"},
		{"command number element", `{"command":["ls",1],"workspace":"/w"}`, "command", "command[1] must be a string, not a number"},
		{"command null element", `{"command":[null],"workspace":"/w"}`, "command", "command[0] must be a string, not null"},
		{"command nested array", `{"command":[["ls"]],"workspace":"/w"}`, "command", "command[0] must be a string, not an array"},
		{"command nested object", `{"command":["ls",{}],"workspace":"/w"}`, "command", "command[1] must be a string, not an object"},
		{"command bool element", `{"command":[true],"workspace":"/w"}`, "command", "command[0] must be a string, not a boolean"},
		{"workspace number", `{"command":["a"],"workspace":1}`, "workspace", "workspace must be a string, not a number"},
		{"workspace null", `{"command":["a"],"workspace":null}`, "workspace", "workspace must be a string, not null"},
		{"workspace array", `{"command":["a"],"workspace":["/w"]}`, "workspace", "workspace must be a string, not an array"},
		{"cwd null", `{"command":["a"],"workspace":"/w","cwd":null}`, "cwd", "cwd must be a string, not null"},
		{"cwd object", `{"command":["a"],"workspace":"/w","cwd":{}}`, "cwd", "cwd must be a string, not an object"},
		{"write string", `{"command":["a"],"workspace":"/w","write":"true"}`, "write", "write must be a boolean, not a string"},
		{"write number", `{"command":["a"],"workspace":"/w","write":1}`, "write", "write must be a boolean, not a number"},
		{"write null", `{"command":["a"],"workspace":"/w","write":null}`, "write", "write must be a boolean, not null"},
		{"confirmWrite string", `{"command":["a"],"workspace":"/w","confirmWrite":"yes"}`, "confirmWrite", "confirmWrite must be a boolean, not a string"},
		{"allowShell null", `{"command":["a"],"workspace":"/w","allowShell":null}`, "allowShell", "allowShell must be a boolean, not null"},
		{"confirmShell array", `{"command":["a"],"workspace":"/w","confirmShell":[]}`, "confirmShell", "confirmShell must be a boolean, not an array"},
		{"timeout string", `{"command":["a"],"workspace":"/w","timeoutMs":"100"}`, "timeoutMs", "timeoutMs must be an integer, not a string"},
		{"timeout null", `{"command":["a"],"workspace":"/w","timeoutMs":null}`, "timeoutMs", "timeoutMs must be an integer, not null"},
		{"timeout zero", `{"command":["a"],"workspace":"/w","timeoutMs":0}`, "timeoutMs", "timeoutMs must be between 1 and 120000 (milliseconds), not 0"},
		{"timeout zero float", `{"command":["a"],"workspace":"/w","timeoutMs":0.0}`, "timeoutMs", "timeoutMs must be between 1 and 120000 (milliseconds), not 0.0"},
		{"timeout negative", `{"command":["a"],"workspace":"/w","timeoutMs":-1}`, "timeoutMs", "timeoutMs must be between 1 and 120000 (milliseconds), not -1"},
		{"timeout over", `{"command":["a"],"workspace":"/w","timeoutMs":120001}`, "timeoutMs", "timeoutMs must be between 1 and 120000 (milliseconds), not 120001"},
		{"timeout huge", `{"command":["a"],"workspace":"/w","timeoutMs":1e400}`, "timeoutMs", "timeoutMs must be between 1 and 120000 (milliseconds), not 1e400"},
		{"timeout huge exponent", `{"command":["a"],"workspace":"/w","timeoutMs":1e99999999999999999999}`, "timeoutMs", "must be between 1 and 120000"},
		{"timeout tiny exponent", `{"command":["a"],"workspace":"/w","timeoutMs":1e-99999999999999999999}`, "timeoutMs", "timeoutMs must be an integer"},
		{"timeout big integer", `{"command":["a"],"workspace":"/w","timeoutMs":99999999999999999999999}`, "timeoutMs", "must be between 1 and 120000"},
		{"timeout fraction", `{"command":["a"],"workspace":"/w","timeoutMs":1.5}`, "timeoutMs", "timeoutMs must be an integer, not 1.5"},
		{"timeout 120000.5", `{"command":["a"],"workspace":"/w","timeoutMs":120000.5}`, "timeoutMs", "timeoutMs must be an integer, not 120000.5"},
		{"timeout bool", `{"command":["a"],"workspace":"/w","timeoutMs":true}`, "timeoutMs", "timeoutMs must be an integer, not a boolean"},
		{"invalid UTF-8", "{\"command\":[\"\xff\"],\"workspace\":\"/w\"}", "", "request is not valid UTF-8"},
		{"lone high surrogate", `{"command":["\ud800"],"workspace":"/w"}`, "", "request contains an unpaired UTF-16 surrogate escape"},
		{"lone low surrogate", `{"command":["\udc00x"],"workspace":"/w"}`, "", "request contains an unpaired UTF-16 surrogate escape"},
		{"high then non-surrogate", `{"command":["\ud800\u0041"],"workspace":"/w"}`, "", "request contains an unpaired UTF-16 surrogate escape"},
		{"surrogate in key", `{"command":["a"],"workspace":"/w","\udfff":1}`, "", "request contains an unpaired UTF-16 surrogate escape"},
		{"BOM", "\ufeff{\"command\":[\"a\"],\"workspace\":\"/w\"}", "", "request is not valid JSON"},
		{"comment", `{"command":["a"],"workspace":"/w"} // hi`, "", "request is not valid JSON"},
		{"too large", `{"command":["a"],"workspace":"/w"}` + strings.Repeat(" ", MaxRequestBytes), "", "request is larger than 1048576 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseRequest([]byte(tt.in))
			if err == nil {
				t.Fatalf("ParseRequest accepted %q: %#v", tt.in, r)
			}
			var re *RejectError
			if !errors.As(err, &re) {
				t.Fatalf("error %v is %T, not *RejectError", err, err)
			}
			if re.Field != tt.field {
				t.Errorf("Field = %q, want %q", re.Field, tt.field)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not contain %q", err, tt.msg)
			}
			if !reflect.DeepEqual(r, Request{}) {
				t.Errorf("rejected request returned data: %#v", r)
			}
		})
	}
}

func TestParseRequestEscapedBackslashIsNotSurrogate(t *testing.T) {
	// `\\ud800` is a backslash followed by the text "ud800", not an escape.
	r, err := ParseRequest([]byte(`{"command":["\\ud800","\\\\"],"workspace":"/w"}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{`\ud800`, `\\`}; !reflect.DeepEqual(r.Command, want) {
		t.Fatalf("Command = %q, want %q", r.Command, want)
	}
}

func TestRequestMarshalRoundTrip(t *testing.T) {
	in := Request{Command: []string{"ls", "-la"}, Workspace: "/w", Cwd: "x", Write: true, ConfirmWrite: true, TimeoutMs: 10}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"command":["ls","-la"],"workspace":"/w","cwd":"x","write":true,"confirmWrite":true,"timeoutMs":10}`
	if string(data) != want {
		t.Fatalf("Marshal = %s, want %s", data, want)
	}
	out, err := ParseRequest(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip: got %#v, want %#v", out, in)
	}
}

func TestClassifyNumber(t *testing.T) {
	tests := []struct {
		lit  string
		v    int64
		kind int
	}{
		{"0", 0, numInt}, {"-0", 0, numInt}, {"0.000", 0, numInt}, {"0e99999999999999999999", 0, numInt},
		{"1", 1, numInt}, {"-7", -7, numInt}, {"10", 10, numInt}, {"100.00", 100, numInt},
		{"1e0", 1, numInt}, {"1E+2", 100, numInt}, {"1500e-3", 1, numFraction}, {"1000e-3", 1, numInt},
		{"0.5e1", 5, numInt}, {"0.05e1", 0, numFraction}, {"120000", 120000, numInt},
		{"999999999999999999", 999999999999999999, numInt}, {"1000000000000000000", 0, numBig},
		{"1e18", 0, numBig}, {"1e17", 100000000000000000, numInt}, {"-1e30", 0, numBig},
		{"1.5", 0, numFraction}, {"1e-1", 0, numFraction}, {"1e-9999999999999999", 0, numFraction},
		{"12.3400e2", 1234, numInt}, {"12.3450e2", 0, numFraction},
	}
	for _, tt := range tests {
		v, kind := classifyNumber(tt.lit)
		if kind != tt.kind || (kind == numInt && v != tt.v) {
			t.Errorf("classifyNumber(%q) = %d, %d; want %d, %d", tt.lit, v, kind, tt.v, tt.kind)
		}
	}
}
