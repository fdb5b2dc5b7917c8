// Package stage makes host paths on an agent's command line usable inside
// the sandbox, and brings back what the agent wrote to them.
//
// Harnesses start agents with host paths as arguments:
//
//	pi --mode rpc --extension /tmp/x/ext.mjs --session ~/.pi/agent/sessions/--w--/s.jsonl
//
// Inside the sandbox the host home, /root, /var, /run and the host /tmp are
// invisible (/tmp is a private tmpfs), so those paths do not exist there.
// HOME inside is the same path as the user's host home, backed by a separate
// host directory, the sandbox home.
//
// # Mechanism
//
// Prepare looks argv[0]'s lowercased basename up in a Table of agents
// (DefaultTable: pi and Claude Code; any other program is passed through
// verbatim). Scan, a pure function, finds the arguments carrying host paths:
// "--flag value" and "--flag=value" (rewritten back glued), repeated flags,
// pi's positional "@file" (also after "--"), and pi's "--export FILE OUT"
// output. It knows every flag of the agent that takes a value, so a value is
// never taken for a positional. Scanning stops at the first bare "--".
//
// Each value is resolved: "~" and "~/" expanded with the host home, relative
// paths joined to the caller's cwd, symlinks evaluated. It must then be an
// existing regular file (or a directory, for the flags taking one) and pass,
// in this order: at most MaxFileSize (8 MiB) per file, under an allowed root,
// fewer than MaxFiles (16) files staged in the run (a directory counts its
// files). The allowed roots are os.TempDir(), /tmp, the agent's config tree
// (pi: PI_CODING_AGENT_DIR itself, default ~/.pi/agent; claude:
// CLAUDE_CONFIG_DIR, default ~/.claude) and the cwd, each resolved and
// dropped when missing; a match
// is the root itself or below root+"/". "/" is never a root. A symlink in
// /tmp pointing outside the roots is therefore not staged. A value that fails
// is left as it is, with "sbx: not staging --flag value: reason" on the
// warning writer, which keeps the agent's own failure mode; text-or-file
// values (pi's --append-system-prompt, claude's --settings) that are not
// files are left alone silently.
//
// A value that passes is copied into the run's own directory, Options.RunDir
// (directories 0700, files 0600; nothing is written when nothing is staged),
// and the argument is rewritten to <HOME inside>/.sbx-staging/<run-id>/...,
// where the caller binds RunDir for this run alone. The run dir lies outside
// the sandbox home: a concurrent run of the same workspace shares the home,
// and must neither read another run's staged session nor rewrite or delete
// it. Repeated
// basenames get "-N" before the extension (a.mjs, a-1.mjs), since agents
// dispatch on it. Directories are copied recursively; a symlink inside is
// copied as the file it names if that stays inside the tree, and anything
// else (a symlink out, a FIFO, a device) refuses the whole directory. Source
// files are opened with openat2(RESOLVE_NO_SYMLINKS) and O_NOFOLLOW, so a
// path component swapped for a symlink after resolution fails the copy.
//
// # Copy-back
//
// Session-like values come back when the run ends (Plan.Finish): pi's
// --session and --fork files, --session-dir contents and the --export output.
// A session file is staged in a directory of its own (.../session/s.jsonl);
// only that file comes back, never other files the sandbox writes beside it
// (a run without --write could otherwise plant an .envrc or a Makefile in
// its read-only workspace); a --session-dir brings back only session files
// (*.jsonl). Values that may not exist yet (a new --session path, a
// --session-dir, the export output) are staged as empty placeholders when
// their parent directory exists under an allowed root; a missing parent (an
// orchestrator's new session directory) is created first, as the user, at
// most 8 levels, only when its nearest existing ancestor lies in an allowed
// root, and from that root's descriptor downward (never above it, never
// through a symlink).
//
// # The host side is a deputy
//
// sbx may run as root (under sudo) while the paths it stages from and copies
// back to lie in trees the sandbox can write. So every file operation here
// runs with the invoking user's identity (Options.Cred, hostfs.Cred.Do):
// what the user could not read is not staged, where the user could not write
// nothing is written, and what is created is the user's. Every path is
// opened from a directory fd downward without following any symlink
// (hostfs.Dir), and copy-back writes only into the directory recorded at
// staging (device and inode): a directory swapped for a symlink or another
// directory during the run is refused, and the sandbox's version stays in
// the run dir for a retry. While staging, a symlink inside a tree a sandbox can
// write (Options.Writable) that leads out of it is not followed. Copy-back
// is bounded: MaxCopyBackFile per file, MaxCopyBackRun per run; a failure
// is retried by later runs at most maxAttempts times in all (at once given
// up when no retry can help: a replaced directory), then given up: the
// session files the sandbox wrote are kept, as the user, in
// ~/.local/share/sbx/kept/<run-id>/, named in one line.
//
// Copy-back goes to the resolved host path (the container variant wrote to
// the raw argument, so "~/..." and relative sessions went astray). A staged
// file whose content hash is the one recorded at staging is not copied: the
// host file is not touched. Otherwise the host file is replaced atomically (a
// temp file beside it, fsync, rename, fsync of the directory), keeping its
// mode and, when sbx runs as root, its owner, but only if its size, mtime and
// hash are still those recorded at staging. If the host file changed during
// the run (or was removed, or a new file's name appeared), both are kept: the
// sandbox's version is written beside as <name>.sbx-conflict-<run-id><ext>
// and a warning says so. Deletions inside the sandbox never propagate. Only
// regular files come back; symlinks or special files the sandbox leaves in
// the staging dir are ignored with a warning, and a symlink planted by the
// sandbox can neither be read through nor deleted through. Other staged values
// (extensions, skills, ...) are inputs and never written back.
//
// # Surviving a killed sbx
//
// Before the program starts, Prepare writes a manifest (what to copy back
// where, with the recorded states) and holds an flock on a lock file, both
// in Options.StateDir. The state dir must be invisible inside the sandbox: a
// manifest names the host paths copy-back writes to, so the sandbox must not
// be able to forge one (this is why it does not live in the staging dir).
// The kernel drops the lock when sbx dies, even by SIGKILL. Recover, run by
// the next sbx run, finishes every run whose lock it can take
// and skips the others, which are alive. Finish and Recover are idempotent:
// a copy-back interrupted half-way is completed without false conflicts. If
// a copy-back fails, the staging dir and manifest stay for a later attempt.
//
// # Limits
//
//   - File contents are not rewritten: an mcp.json or settings file naming
//     host paths still names them inside the sandbox.
//   - Caps: 8 MiB per file, 16 files per run. A session file or session dir
//     over the caps is not staged (the agent then fails as it would have).
//   - pi's --fork writes the new session into the session dir: with a staged
//     --session-dir it comes back, otherwise it stays in the sandbox home's pi
//     store. The --fork source itself is only read (its copy-back is a no-op
//     unless pi changes it).
//   - pi's built-in flags know only "--flag value"; the glued form is staged
//     for harnesses and extension flags (--mcp-config) that accept it.
//   - Values after "--" are not staged, except pi's "@file"; an export output
//     given after "--" is not staged either.
//   - argv[0] must be the agent itself ("node cli.js ..." is not recognised).
//   - Claude Code's --add-dir grants a live directory and is not staged; its
//     variadic --mcp-config values are taken only after the separate form.
//   - Copy-back checks the host file and then renames over it; a host write
//     landing between the two is lost (the window is a few syscalls).
//   - Finish must run after the sandboxed program and all its processes are
//     gone, or it may copy a half-written file.
package stage
