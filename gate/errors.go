package gate

import (
	"errors"
	"fmt"
	"io/fs"
)

// Exact messages of the confirmation rules. The write message is the Docker
// sandbox tool's, word for word; the shell one is its parallel.
const (
	MsgWriteNeedsConfirm = "Writable sandbox requires confirmWrite=true"
	MsgShellNeedsConfirm = "Shell wrapper requires confirmShell=true"
)

// RejectError is the error of every rule the gate enforces. A caller reports
// it as a result with status "rejected" and Error() as the message; nothing
// has been started or changed when it is returned.
type RejectError struct {
	// Field is the request key the rule is about ("command", "workspace",
	// "cwd", "write", "allowShell", "timeoutMs", "name", or the unknown or
	// duplicate key itself); empty for the request as a whole.
	Field string
	// Reason is the complete, human-readable message. Error returns it
	// verbatim, so it can be shown or compared as is.
	Reason string
	// Err is the underlying cause when there is one: ErrEscape for a path
	// that leaves the workspace, fs.ErrNotExist for a missing directory, or
	// the file system error met while resolving.
	Err error
}

// Error returns Reason.
func (e *RejectError) Error() string { return e.Reason }

// Unwrap returns Err.
func (e *RejectError) Unwrap() error { return e.Err }

// ErrEscape is wrapped by the RejectError of any path that leaves the
// workspace, lexically or through a symbolic link. It also matches
// fs.ErrPermission: an escape is reported as "permission denied" and never as
// "does not exist", so a request cannot probe what exists outside.
var ErrEscape error = escapeError{}

type escapeError struct{}

func (escapeError) Error() string        { return "path escapes workspace: permission denied" }
func (escapeError) Is(target error) bool { return target == fs.ErrPermission }

func reject(field, format string, args ...any) *RejectError {
	return &RejectError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

func rejectErr(field string, cause error, format string, args ...any) *RejectError {
	return &RejectError{Field: field, Reason: fmt.Sprintf(format, args...), Err: cause}
}

// IsRejected reports whether err (or an error it wraps) is a *RejectError.
func IsRejected(err error) bool {
	var re *RejectError
	return errors.As(err, &re)
}
