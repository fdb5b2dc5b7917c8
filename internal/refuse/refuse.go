// Package refuse holds the error of an input sbx refuses before anything is
// started or changed: a request field the gate rejects, a host path that
// could hand the sandbox the host. sbx run exits 125 with it, sbx exec
// answers with status "rejected". gate.RejectError is this type.
package refuse

// Error is the error of every rule that refuses an input. A caller reports
// it as a result with status "rejected" and Error() as the message; nothing
// has been started or changed when it is returned.
type Error struct {
	// Field is the input the rule is about: a request key ("command",
	// "workspace", "cwd", "write", "allowShell", "timeoutMs", "name", or
	// the unknown or duplicate key itself), a flag ("--rw"), "config" or
	// "settings"; empty for the request as a whole.
	Field string
	// Reason is the complete, human-readable message. Error returns it
	// verbatim, so it can be shown or compared as is.
	Reason string
	// Err is the underlying cause when there is one: gate.ErrEscape for a
	// path that leaves the workspace, fs.ErrNotExist for a missing
	// directory, or the file system error met while resolving.
	Err error
}

// Error returns Reason.
func (e *Error) Error() string { return e.Reason }

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }
