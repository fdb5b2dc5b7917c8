package lsm

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/bpf"
)

// ErrRefused is wrapped by errors that mean the kernel refuses to load
// BPF LSM programs (EPERM at load, before verification), for example under
// a hypervisor or lockdown policy that forbids them.
var ErrRefused = errors.New("BPF LSM programs refused by this kernel (EPERM at load)")

// ErrInactive is wrapped by errors that mean BPF LSM programs load and
// attach but are never run, because "bpf" is not in the kernel's active LSM
// list. The fix is booting with lsm=<the current list>,bpf.
var ErrInactive = errors.New("BPF LSM is not active")

// lsmListPath lists the active LSMs (securityfs).
const lsmListPath = "/sys/kernel/security/lsm"

// Supported tells whether this host can enforce the BPF LSM tier: nil if
// the programs a run loads all load (the verifier accepts the whole set
// on this kernel) and an LSM program attaches and runs. Otherwise the
// error says why and wraps [ErrInactive] (bpf missing from the active LSM
// list; the message gives the lsm= boot parameter to use), [ErrRefused]
// (EPERM at load) or [bpf.ErrNotSupported] (no BPF LSM in this kernel, or
// a kernel older than the set needs: the message names the floor). It
// needs root and changes nothing that outlives the call: only the probe
// program is attached, and every object is closed before it returns.
func Supported() error {
	if err := checkLSMList(); err != nil {
		return err
	}
	if err := bpf.PrepareLoad(); err != nil {
		return err
	}
	spec, err := loadLsm()
	if err != nil {
		return err
	}
	// The whole set, as [LSM.load] loads it: a kernel that verifies the
	// small probe but not the real programs (a helper it lacks) must not
	// be reported as able to run them.
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		return belowFloor(loadError(err))
	}
	defer coll.Close()
	prog, probe := coll.Programs[lsmProgSbxProbeFileOpen], coll.Maps[lsmMapSbxLsmProbe]
	if err := probe.Put(uint32(0), uint64(os.Getpid())); err != nil {
		return fmt.Errorf("probe bpf lsm: %w", err)
	}
	ln, err := link.AttachLSM(link.LSMOptions{Program: prog})
	if err != nil {
		return fmt.Errorf("attach probe: %w", loadError(err))
	}
	defer ln.Close()
	f, err := os.Open("/proc/self/stat")
	if err != nil {
		return fmt.Errorf("probe bpf lsm: %w", err)
	}
	f.Close()
	var hits uint64
	if err := probe.Lookup(uint32(1), &hits); err != nil {
		return fmt.Errorf("probe bpf lsm: %w", err)
	}
	if hits == 0 {
		return fmt.Errorf("%w: an lsm/file_open program attached but never ran (%s unreadable; boot with lsm=...,bpf)", ErrInactive, lsmListPath)
	}
	return nil
}

// belowFloor puts the kernel's age first when a load failed on a kernel
// older than the programs need (see [bpf.MinLSM]): the verifier's own
// words ("unknown func ...") do not say that.
func belowFloor(err error) error { return belowFloorOn(err, bpf.RunningKernel()) }

// belowFloorOn is [belowFloor] on kernel k.
func belowFloorOn(err error, k bpf.KernelVersion) error {
	if ferr := bpf.MinLSM.Below("BPF LSM tier", k); ferr != nil {
		return fmt.Errorf("%w (load: %v)", ferr, err)
	}
	return err
}

// checkLSMList fails with [ErrInactive] when the active LSM list is
// readable and lacks bpf. An unreadable list (securityfs not mounted) is
// not an error: the caller then proves activity by running a program.
func checkLSMList() error {
	b, err := os.ReadFile(lsmListPath)
	if err != nil {
		return nil
	}
	return lsmListError(strings.TrimSpace(string(b)))
}

// lsmListError judges the content of /sys/kernel/security/lsm.
func lsmListError(list string) error {
	for _, name := range strings.Split(list, ",") {
		if name == "bpf" {
			return nil
		}
	}
	fix := "bpf"
	if list != "" {
		fix = list + ",bpf"
	}
	return fmt.Errorf("%w: bpf is missing from the kernel's LSM list %q (boot with lsm=%s)", ErrInactive, list, fix)
}

// loadError classifies an error from loading or attaching an LSM program.
func loadError(err error) error {
	switch {
	case errors.Is(err, unix.EPERM) && os.Geteuid() != 0:
		return fmt.Errorf("load bpf lsm programs: %w (needs root: CAP_BPF, CAP_SYS_ADMIN and CAP_MAC_ADMIN)", err)
	case errors.Is(err, unix.EPERM):
		// cilium's hint about MEMLOCK does not apply: since 5.11 BPF
		// memory is charged to the memory cgroup.
		// Which program or map the kernel refused first depends on
		// the load order (a Go map's): the refusal is the set's, and
		// its wording must be the same for every load (doctor's and
		// each run's agree). The memlock limit is lifted before any
		// load (bpf.PrepareLoad), so cilium's hint does not apply.
		return fmt.Errorf("%w: %w", ErrRefused, unix.EPERM)
	case errors.Is(err, ebpf.ErrNotSupported), errors.Is(err, unix.EINVAL) && !isVerifierError(err),
		errors.Is(err, unix.ENOTSUP), errors.Is(err, unix.EOPNOTSUPP):
		return fmt.Errorf("%w: BPF LSM programs not supported by this kernel (CONFIG_BPF_LSM): %w", bpf.ErrNotSupported, err)
	}
	return fmt.Errorf("load bpf lsm programs: %w", err)
}

// isVerifierError reports whether err carries a verifier log (a bug in the
// programs rather than a kernel without BPF LSM).
func isVerifierError(err error) bool {
	var ve *ebpf.VerifierError
	return errors.As(err, &ve)
}
