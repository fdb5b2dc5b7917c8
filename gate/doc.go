// Package gate is the unprivileged half of `sbx exec`: it decides whether a
// request to run one command may run, and it shapes what the command printed
// into the result a model gets back. It is the native equivalent of the
// Docker sandbox tool (@pi-harness/plugin-docker-sandbox) that harnesses give
// a model, with the same rules and limits; the runner package does the
// running, on the same sandbox as `sbx run`. Nothing here needs privileges or
// starts a process.
//
// # Requests
//
// A request is one JSON object (see Request and RequestSchema):
//
//	{"command": ["ls", "-la"], "workspace": "/abs/dir", "cwd": "sub",
//	 "write": false, "confirmWrite": false, "allowShell": false,
//	 "confirmShell": false, "timeoutMs": 120000}
//
// ParseRequest decodes it strictly (only known keys, each once, right types,
// no trailing data) and Request.Check applies the rules, returning the first
// broken one as a *RejectError whose message goes into a result with status
// "rejected"; nothing runs. The rules:
//
//   - command: a real array of 1..128 non-empty strings, each valid UTF-8,
//     without NUL and at most 16,384 bytes, at most 128 KiB in total (the sum
//     of the byte lengths);
//   - a shell as command[0] (IsShell: ash bash cmd csh dash fish ksh
//     powershell pwsh sh tcsh zsh, by base name, case-folded, ".exe"
//     stripped) only with allowShell and confirmShell;
//   - write only with confirmWrite ("Writable sandbox requires
//     confirmWrite=true"), allowShell only with confirmShell ("Shell wrapper
//     requires confirmShell=true");
//   - timeoutMs, if given, 1..120000: a request may ask for less time, never
//     more;
//   - the workspace jail: workspace an absolute path of an existing
//     directory; cwd relative to it, resolved lexically and then through
//     symbolic links, and never outside it (ResolveIn). Prefix siblings
//     (thread-12 for thread-1) are outside. An escape is "permission
//     denied", whether the outside path exists or not.
//
// ValidName checks names that become directories (run ids, scopes):
// ^[A-Za-z0-9._-]+$ and not "." or "..", rejected and never rewritten.
//
// # Limits
//
// The sandbox's limits are fixed, as in the container variant: MemoryBytes
// (512 MiB), CPUs (1), Pids (256), no network, the workspace read-only unless
// write and confirmWrite, MaxTimeout (120 s, then SIGKILL to the whole
// sandbox) and CleanupTimeout (10 s to confirm teardown, else a cleanup error
// in the result).
//
// # Output
//
// The runner streams stdout and stderr into one Tail each. A Tail sanitizes
// as it goes and keeps the last OutputBudget bytes of sanitized text, so
// memory stays bounded however much a command prints, and the escape and
// UTF-8 state is exact across the point where old text was dropped.
// ShapeTails (or Shape, for byte slices) joins them, stdout then stderr,
// concatenated and not interleaved; if the text exceeds OutputBudget (12,000
// bytes) it keeps the tail, whole characters only, after the line
// TruncationNotice, all within 12,000 bytes. Sanitizing strips terminal
// escape sequences (CSI, OSC, DCS, SOS, PM, APC, and two-character ESC
// sequences), folds CR LF and lone CR to LF, and replaces every other
// control character, every format character (bidi controls, zero-width
// characters, BOM), surrogate and ill-formed UTF-8 by U+FFFD; tab, LF, U+2028
// and U+2029 stay. Unlike the Docker tool, a CR is folded before controls are
// replaced, so CR LF gives "\n", not "\uFFFD\n".
//
// # Results
//
// Result is the JSON object `sbx exec` writes (ResultSchema), with status
// "exited", "timed_out", "failed", "rejected" or "cancelled" and the
// Violations the sandbox's tiers reported.
package gate
