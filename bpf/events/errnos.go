package events

import "golang.org/x/sys/unix"

// The errno bits do not depend on the architecture (Linux's errno values are
// the same on every one sbx builds for), so they live outside the per-arch
// syscall tables: TracesSeccomp uses them on every GOARCH.

// Errno bits of traceSys.errs.
const (
	bitEPERM  = 1 << unix.EPERM
	bitEACCES = 1 << unix.EACCES
	bitEXDEV  = 1 << unix.EXDEV
	bitEROFS  = 1 << unix.EROFS
	// fsErrs are the refusals of a file operation: Landlock's EACCES (and
	// EXDEV for a link or rename across its rules), the read-only mounts'
	// EROFS.
	fsErrs = bitEACCES | bitEXDEV | bitEROFS
)
