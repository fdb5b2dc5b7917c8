// Package runner runs one program in one sandbox, from request to result:
// it prepares the sandbox's home and state, builds the [sandbox.Spec],
// starts the sandbox, connects the program's terminal or pipes, forwards
// signals, enforces the timeout, waits, and always tears everything down.
//
// The status of the run follows the conventions of container runtimes: the
// program's own exit code, 128+N when it died of signal N, [ExitTimeout] when
// the timeout killed it. Errors returned by [Run] are sbx's own failures (a
// protection that could not be put in place, bad options); the program has
// then not run, or has been killed.
package runner
