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
//
// A run has three steps. The options are resolved against the host into a
// plan: checked host paths, the tier decision ([policy.Decide] over the
// probe of package hostcheck, the same decision sbx doctor prints), and
// the complete [sandbox.Spec], validated once by [sandbox.Create] and not
// changed after. The plan is a list of parts (the network wall, the
// denial tracer, the BPF LSM file tier, the terminal, the sandbox itself,
// the network services, and the run's housekeeping), each with
// prepare (before the sandbox exists), attach (before the program
// starts), started (the shim runs, the program held) and close; they run
// in order and close in reverse on every path, so the teardown order is
// the list (see parts.go), not the placement of defers.
//
// Host paths are used by what they are, not by their name (see
// mountsrc.go): each path a run mounts is resolved once, as the invoking
// user, into a descriptor opened without following any symlink, checked
// on that descriptor and held for the run; once libcontainer has set up
// the mounts, and before the program starts, every bind's destination is
// looked up inside the sandbox without following symlinks and must be the
// file that was checked, every mask must show the mask, or the run ends
// (exit 125). That check after the mount was chosen over binding from the
// descriptor because libcontainer takes sources as paths and runc init
// resolves them in a mount namespace of its own, where a descriptor of
// the host's namespace cannot be bound.
//
// runner keeps the lifecycle; the concerns it calls live in packages of
// their own, which never import runner: [invoker] (whom sbx acts for),
// [discover] (a command the sandbox would not find), [protect] (protected
// entries and masks), [mountsrc] (the in-root check of held mounts),
// [netsvc] (the network services) and [report] (the denials). sbx exec's
// glue, which speaks package gate's protocol, is package execrun.
package runner
