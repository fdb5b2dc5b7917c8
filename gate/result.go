package gate

import (
	"bytes"
	"encoding/json"
	"time"
)

// Status is how a run ended.
type Status string

// The statuses of a Result.
const (
	// StatusExited: the command ran and exited; ExitCode holds its status
	// (128+N when it was killed by signal N).
	StatusExited Status = "exited"
	// StatusTimedOut: the deadline passed and the sandbox was killed.
	StatusTimedOut Status = "timed_out"
	// StatusFailed: the sandbox could not be set up or run; Error says why.
	StatusFailed Status = "failed"
	// StatusRejected: the gate refused the request and nothing ran; Error
	// holds the RejectError's message.
	StatusRejected Status = "rejected"
	// StatusCancelled: the caller cancelled the run (SIGINT/SIGTERM to
	// `sbx exec`, or its context) and the sandbox was killed.
	StatusCancelled Status = "cancelled"
)

// Result is the one JSON object `sbx exec` writes. Marshaled, it always has
// the keys status, exitCode, output, truncated, violations (an array, maybe
// empty) and durationMs; the others only when set.
type Result struct {
	Status Status `json:"status"`
	// ExitCode is the exit status when Status is StatusExited, and nil
	// (JSON null) otherwise.
	ExitCode *int `json:"exitCode"`
	// Output is the shaped output (see Shape): stdout then stderr,
	// sanitized, at most OutputBudget bytes.
	Output string `json:"output"`
	// Truncated reports that Output is a tail with the truncation notice.
	Truncated bool `json:"truncated"`
	// Violations are the operations the sandbox denied, oldest first, at
	// most MaxViolations of them.
	Violations []Violation `json:"violations"`
	// ViolationsDropped counts the violations left out past MaxViolations.
	ViolationsDropped int `json:"violationsDropped,omitempty"`
	// DurationMs is the wall time of the run, from start to exit, in
	// milliseconds; 0 when nothing ran.
	DurationMs int64 `json:"durationMs"`
	// Error explains a rejected or failed run, or what else went wrong.
	Error string `json:"error,omitempty"`
	// CleanupError reports that teardown could not confirm the sandbox gone
	// within CleanupTimeout, or failed. It is never left out when set,
	// whatever the status.
	CleanupError string `json:"cleanupError,omitempty"`
	// CopyBackError reports that staged files (a "stage" request) could
	// not all be copied back to the host; they stay in the sandbox home
	// for a later retry.
	CopyBackError string `json:"copyBackError,omitempty"`
}

// MarshalJSON writes Violations as [] rather than null when it is empty.
// It leaves <, > and & as they are (the program's output is not HTML);
// an encoder that escapes HTML escapes them in what MarshalJSON returns.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result // same fields, no methods: no recursion
	p := plain(r)
	if p.Violations == nil {
		p.Violations = []Violation{}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Rejected returns the result of a request the gate refused: status
// "rejected" and err's message.
func Rejected(err error) Result {
	return Result{Status: StatusRejected, Error: err.Error(), Violations: []Violation{}}
}

// Violation is one operation a sandbox tier denied.
type Violation struct {
	// Time is when the tier saw the operation.
	Time time.Time `json:"time"`
	// Pid is the process id the tier reported.
	Pid int `json:"pid"`
	// Comm is the process's command name (at most 16 bytes in the kernel).
	Comm string `json:"comm"`
	// Op is the operation, e.g. "open", "connect", "socket", "bind".
	Op string `json:"op"`
	// Target is what the operation was aimed at: a path, an address:port.
	Target string `json:"target"`
	// Errno is the error the operation got, by name, e.g. "EACCES".
	Errno string `json:"errno"`
	// Tier is the layer that denied it, e.g. "bpf", "seccomp", "landlock",
	// "proxy".
	Tier string `json:"tier"`
	// Reason says why, when the tier gives one (the egress proxy: "not
	// allowed", "resolves to loopback address 127.0.0.1").
	Reason string `json:"reason,omitempty"`
}

// maxViolationText bounds each text field of a sanitized Violation.
const maxViolationText = 4096

// Sanitized returns v with every text field sanitized like command output
// (see Sanitize) and cut to at most 4096 bytes on a character boundary. The
// strings come from the sandboxed program (a file name, a process name) and
// must not carry terminal escapes into a result.
func (v Violation) Sanitized() Violation {
	v.Comm = sanitizeLimit(v.Comm)
	v.Op = sanitizeLimit(v.Op)
	v.Target = sanitizeLimit(v.Target)
	v.Errno = sanitizeLimit(v.Errno)
	v.Tier = sanitizeLimit(v.Tier)
	v.Reason = sanitizeLimit(v.Reason)
	return v
}

func sanitizeLimit(s string) string {
	if len(s) > 4*maxViolationText { // bound the work; the text is cut below anyway
		s = s[:4*maxViolationText]
	}
	out := Sanitize([]byte(s))
	if len(out) > maxViolationText {
		i := maxViolationText
		for i > 0 && !isRuneStart(out[i]) {
			i--
		}
		out = out[:i]
	}
	return out
}
