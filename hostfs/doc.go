// Package hostfs is how sbx touches host files on paths a sandbox can
// change: staging, copy-back, crash recovery and home creation. Code that
// runs as root on such a path is a deputy: a program inside the sandbox
// that swaps a directory for a symlink, or plants a file, must not be able
// to make sbx read or write anything the invoking user could not.
//
// Two mechanisms, used together:
//
//   - [Cred.Do] runs a function with the invoking user's file-system
//     identity (fsuid, fsgid and supplementary groups) on an OS thread of
//     its own. When the fsuid leaves 0 the kernel clears the file
//     capabilities (CAP_DAC_OVERRIDE, CAP_CHOWN, CAP_FOWNER, ...) of that
//     thread, so every open, mkdir and rename is checked as the user's
//     would be, and what it creates belongs to the user. The thread is
//     never handed back to the Go scheduler: the goroutine exits while
//     locked to it, which makes the runtime end the thread, so no other
//     goroutine ever runs with the switched identity. (Threads the runtime
//     creates meanwhile are cloned from its template thread, not from a
//     locked one.) Rootless sbx already is the user: Do just calls the
//     function.
//   - [Dir] is a directory opened by file descriptor, whose methods resolve
//     names with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|
//     RESOLVE_NO_MAGICLINKS|RESOLVE_NO_XDEV): no symlink in any component
//     is followed, nothing outside the directory is reached, no mount is
//     crossed. [OpenDir] opens an absolute path the same way from "/" and,
//     given the [FileID] recorded earlier, refuses a directory that is not
//     the one recorded ([ErrReplaced]).
//
// Kernels without openat2 (before 5.6) are served by a walk that opens one
// component at a time with O_NOFOLLOW; sbx needs 5.10 or later anyway.
package hostfs
