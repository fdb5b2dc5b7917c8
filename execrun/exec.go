package execrun

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	"github.com/sbx-sandbox/sbx/gate"
	"github.com/sbx-sandbox/sbx/internal/refuse"
	"github.com/sbx-sandbox/sbx/invoker"
	"github.com/sbx-sandbox/sbx/runner"
	"github.com/sbx-sandbox/sbx/sandbox"
)

// ExecOptions are the host-side settings of [Exec]; the request itself
// cannot change them.
type ExecOptions struct {
	// StateDir as in runner.Options.
	StateDir string
	// HostEnv as in runner.Options.
	HostEnv []string
	// Log receives sbx's own messages (housekeeping of earlier runs,
	// warnings; os.Stderr if nil), never mixed into the result's output.
	Log io.Writer
	// ReadOnlyRoots are the directories a request's ro paths must lie in
	// (sbx exec --ro-root); none: a request may name no ro path.
	ReadOnlyRoots []string
	// AllowStage lets a request ask for staging (sbx exec --allow-stage).
	AllowStage bool
}

// Exec runs one sandbox-tool request (see package gate) with the fixed
// limits of the container variant: 512 MiB, 1 CPU, 256 PIDs, no network, a
// throwaway home, the workspace read-only unless write and confirmWrite, and
// at most 120 s. A rejected request starts nothing. Cancelling ctx kills the
// sandbox and yields status "cancelled". The output is stdout then stderr,
// shaped by gate.ShapeTails.
func Exec(ctx context.Context, req gate.Request, eo ExecOptions) gate.Result {
	// The request's paths (workspace, cwd, ro) are resolved with the
	// invoking user's rights: under sudo, root's would confirm or resolve
	// paths the user may not even look up. Run holds them again, as the
	// user, by descriptor.
	cred := invoker.Cred()
	var checked gate.Checked
	err := cred.Do(func() error {
		var err error
		checked, err = req.CheckIn(gate.Scope{ReadOnlyRoots: eo.ReadOnlyRoots, Stage: eo.AllowStage, Cred: cred})
		return err
	})
	if err != nil {
		return gate.Rejected(err)
	}
	stdout, stderr := gate.NewTail(gate.OutputBudget), gate.NewTail(gate.OutputBudget)
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return failed(err, 0)
	}
	defer devnull.Close()
	o := runner.Options{
		Args:      checked.Request.Command,
		Workspace: checked.Root,
		Write:     checked.Writable,
		// The request's ro paths, inside the harness's roots, checked
		// again as host paths.
		RequestReadOnly: checked.ReadOnly,
		Cwd:             checked.Dir,
		Home:            runner.HomeTmp,
		Net:             runner.NetNone, // the tool's contract: no network at all
		HostEnv:         eo.HostEnv,
		Limits: sandbox.Limits{
			MemoryBytes: gate.MemoryBytes,
			CPUs:        gate.CPUs,
			Pids:        gate.Pids,
		},
		Timeout:  checked.Timeout,
		Stdin:    devnull,
		Stdout:   stdout,
		Stderr:   stderr,
		Log:      eo.Log,
		StateDir: eo.StateDir,
		NoStage:  !checked.Request.Stage || !eo.AllowStage,
		// The denials go to the result, not to Log.
		DenialsInResult: true,
		// A request names what it needs (ro): nothing is shown unasked.
		NoDiscover: true,
	}
	var out gate.Result
	start := time.Now()
	res, err := runner.Run(ctx, o)
	if isRefused(err) {
		return gate.Rejected(err) // a host path refused: nothing started
	}
	out.Violations = make([]gate.Violation, len(res.Violations))
	for i, v := range res.Violations {
		out.Violations[i] = gate.Violation(v)
	}
	out.ViolationsDropped = res.ViolationsDropped
	out.DurationMs = time.Since(start).Milliseconds()
	out.Output, out.Truncated = gate.ShapeTails(stdout, stderr)
	if res.CleanupErr != nil {
		out.CleanupError = res.CleanupErr.Error()
	}
	if res.CopyBackErr != nil {
		out.CopyBackError = res.CopyBackErr.Error()
	}
	var cleanup *runner.CleanupError
	switch {
	case err != nil && !errors.As(err, &cleanup):
		out.Status = gate.StatusFailed
		out.Error = err.Error()
	case res.Cancelled:
		out.Status = gate.StatusCancelled
	case res.TimedOut:
		out.Status = gate.StatusTimedOut
		out.Error = "timed out after " + checked.Timeout.String() + ": the sandbox was killed"
	default:
		code := res.ExitCode
		out.Status = gate.StatusExited
		out.ExitCode = &code
		if res.OOM {
			out.Error = "out of memory: the command was killed at the 512 MiB limit"
		}
	}
	return out
}

func failed(err error, ms int64) gate.Result {
	return gate.Result{Status: gate.StatusFailed, Error: err.Error(), DurationMs: ms}
}

// isRefused reports whether err is an input refused before anything
// started (a host path that could hand the sandbox the host).
func isRefused(err error) bool {
	var re *refuse.Error
	return errors.As(err, &re)
}
