package bpf

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"
)

// PrepareLoad readies the process for loading BPF objects: on kernels that
// charge BPF memory to RLIMIT_MEMLOCK (before 5.11) it lifts that limit,
// which is 8 MiB under systemd and too small for sbx's maps (the map
// create then fails with EPERM, which reads like a refusal). On newer
// kernels, which charge the memory cgroup, it changes nothing. It runs
// once per process; the error, when lifting is not permitted, is the same
// every time.
func PrepareLoad() error {
	memlockOnce.Do(func() {
		if err := rlimit.RemoveMemlock(); err != nil {
			memlockErr = fmt.Errorf("lift RLIMIT_MEMLOCK for BPF maps: %w", err)
		}
	})
	return memlockErr
}

var (
	memlockOnce sync.Once
	memlockErr  error
)

// KernelVersion is a kernel release's major.minor.
type KernelVersion struct{ Major, Minor int }

func (v KernelVersion) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// Less reports whether v is older than w.
func (v KernelVersion) Less(w KernelVersion) bool {
	return v.Major < w.Major || v.Major == w.Major && v.Minor < w.Minor
}

// The kernels each of sbx's mechanisms needs at least, and the feature
// that sets the floor (each program's C source uses it).
var (
	// MinLSM is the BPF LSM file tier's floor: its programs walk a
	// file's ancestry with bpf_loop (5.17), after
	// bpf_get_current_task_btf (5.11) and BPF LSM itself (5.7).
	MinLSM = Floor{KernelVersion{5, 17}, "bpf_loop"}
	// MinLandlock is the Landlock file tier's floor, the rootless one
	// (Landlock ABI 1).
	MinLandlock = Floor{KernelVersion{5, 13}, "Landlock"}
	// MinTracer is the denial tracer's floor: like the BPF LSM
	// programs, it walks paths with bpf_loop (5.17).
	MinTracer = Floor{KernelVersion{5, 17}, "bpf_loop"}
	// MinWall is the cgroup BPF network wall's floor: its reports go
	// through BPF ring buffers (5.8).
	MinWall = Floor{KernelVersion{5, 8}, "BPF ring buffers"}
)

// Floor is the oldest kernel with a feature a tier needs.
type Floor struct {
	Version KernelVersion
	Feature string
}

// Below returns why kernel k is too old for the tier named what, or nil.
func (f Floor) Below(what string, k KernelVersion) error {
	if k.Major == 0 || !k.Less(f.Version) {
		return nil
	}
	return fmt.Errorf("%w: the %s needs Linux %s+ (%s); this is %s", ErrNotSupported, what, f.Version, f.Feature, k)
}

// RunningKernel returns the running kernel's major.minor (zero when the
// release string is not understood).
func RunningKernel() KernelVersion {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return KernelVersion{}
	}
	return ParseRelease(unix.ByteSliceToString(u.Release[:]))
}

// ParseRelease reads major.minor from a kernel release such as
// "6.1.0-28-cloud-amd64"; zero when there is none.
func ParseRelease(s string) KernelVersion {
	major, rest, ok := strings.Cut(s, ".")
	if !ok {
		return KernelVersion{}
	}
	end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if end >= 0 {
		rest = rest[:end]
	}
	ma, err1 := strconv.Atoi(major)
	mi, err2 := strconv.Atoi(rest)
	if err1 != nil || err2 != nil {
		return KernelVersion{}
	}
	return KernelVersion{ma, mi}
}
