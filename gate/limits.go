package gate

import "time"

// Fixed limits of one sandboxed command. They match the Docker sandbox tool
// that sbx replaces; a request can lower the timeout but cannot raise any of
// them.
const (
	// MemoryBytes is the memory limit of the whole sandbox (512 MiB).
	MemoryBytes = 512 << 20

	// CPUs is the CPU quota of the sandbox, in whole CPUs.
	CPUs = 1

	// Pids is the maximum number of tasks (processes and threads) in the
	// sandbox.
	Pids = 256

	// MaxTimeout is the longest a command may run; it is also the default.
	// When it expires the whole sandbox is killed (SIGKILL).
	MaxTimeout = 120 * time.Second

	// MaxTimeoutMs is MaxTimeout in milliseconds, the unit of
	// Request.TimeoutMs.
	MaxTimeoutMs = 120000

	// CleanupTimeout is how long teardown may take to confirm that the
	// sandbox is gone (cgroup empty and removed) before the result reports a
	// cleanup error. It is in addition to the run's own deadline.
	CleanupTimeout = 10 * time.Second

	// OutputBudget is the maximum size, in UTF-8 bytes, of Result.Output,
	// truncation notice included. Output of exactly OutputBudget bytes is not
	// truncated.
	OutputBudget = 12000

	// MaxArgs is the maximum number of elements of Request.Command.
	MaxArgs = 128

	// MaxReadOnly is the maximum number of Request.ReadOnly paths.
	MaxReadOnly = 16

	// MaxArgBytes is the maximum length of one element of Request.Command,
	// in UTF-8 bytes.
	MaxArgBytes = 16384

	// MaxCommandBytes is the maximum total length of Request.Command: the sum
	// of the byte lengths of its elements, with no separators or terminators
	// counted (128 KiB).
	MaxCommandBytes = 128 << 10

	// MaxRequestBytes is the largest JSON request ParseRequest reads (1 MiB).
	// It leaves room for a maximal command written entirely in \u escapes.
	// Callers reading a request from a stream should read at most
	// MaxRequestBytes+1 bytes and pass them all, so that an oversized request
	// is rejected rather than cut.
	MaxRequestBytes = 1 << 20

	// MaxNameBytes is the longest name ValidName accepts (NAME_MAX).
	MaxNameBytes = 255

	// MaxViolations is the largest number of violations a Result should
	// carry; the runner counts the rest in Result.ViolationsDropped.
	MaxViolations = 256

	// MaxSymlinks is how many symbolic links resolving a path inside the
	// workspace may follow (Linux's MAXSYMLINKS).
	MaxSymlinks = 40
)
