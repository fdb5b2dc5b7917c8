// Package sandbox turns a [Spec] (what one sbx run may see and use) into a
// libcontainer configuration and runs it.
//
// The sandbox is built from the host itself, not from an image: an empty,
// read-only root directory receives read-only bind mounts of the host's system
// directories (/usr, /etc, /opt and the /bin, /sbin, /lib* trees, recreated as
// symlinks where the host has merged them into /usr), a fresh /proc for its own
// PID namespace, a minimal /dev, a size-capped tmpfs at /tmp, a writable home
// that is not the host home, and the workspace at its own absolute host path
// (read-only unless [Spec.Write]). Everything else on the host (/root, /home,
// /var, /run and every daemon socket under them) is simply not there.
//
// The program runs in new mount, PID, IPC, UTS, network (loopback only) and
// cgroup namespaces, with no capabilities, no_new_privs, a seccomp filter
// ([Seccomp]) and cgroup limits on memory, CPU and PIDs. Its PID 1 is sbx's own
// shim ([RunShim]), which forwards signals, reaps orphans and reports the
// program's status, so that a program started as PID 1 still dies of SIGINT
// and nothing can outlive it.
//
// The binary that uses this package must call [Init] first thing in main: the
// libcontainer bootstrap re-executes the binary with the argument "init", and
// the shim runs it again as [ShimPath] inside the sandbox.
package sandbox
