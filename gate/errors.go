package gate

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/sbx-sandbox/sbx/internal/refuse"
)

// Exact messages of the confirmation rules. The write message is the Docker
// sandbox tool's, word for word; the shell one is its parallel.
const (
	MsgWriteNeedsConfirm = "Writable sandbox requires confirmWrite=true"
	MsgShellNeedsConfirm = "Shell wrapper requires confirmShell=true"
)

// RejectError is the error of every rule the gate enforces (see
// [refuse.Error]). A caller reports it as a result with status "rejected"
// and Error() as the message; nothing has been started or changed when it
// is returned. Field is the request key the rule is about; Err is
// ErrEscape for a path that leaves the workspace.
type RejectError = refuse.Error

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
