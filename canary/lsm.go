package canary

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// LSM proves the BPF LSM file tier holds for the calling process: path
// names a file that the process may read by its mode and mount (access(2)
// says so, and file_open is not consulted for that) but that the sandbox's
// file policy does not allow, so opening it must fail with EACCES. The
// shim passes its own binary, /.sbx/sbx, which no policy lists. Call it
// before Landlock is applied (Landlock would refuse the open as well and
// so prove nothing about this tier); an error means the run must not start.
func LSM(path string) error {
	if err := unix.Faccessat(unix.AT_FDCWD, path, unix.R_OK, unix.AT_EACCESS); err != nil {
		return fmt.Errorf("file canary (BPF LSM): %s must be readable by mode for the proof: %w", path, err)
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err == nil {
		unix.Close(fd)
		return fmt.Errorf("file canary (BPF LSM): opening %s succeeded: the BPF LSM tier is not enforced for this process", path)
	}
	if !errors.Is(err, unix.EACCES) {
		return fmt.Errorf("file canary (BPF LSM): opening %s failed with %w, want EACCES from the BPF LSM tier", path, err)
	}
	return nil
}
