package report

import (
	"bytes"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/bpf/events"
	"golang.org/x/sys/unix"
)

// TestReporterTracerEvents: the tracer's events are reported with their
// own tier; the shim's own refusals are not; the tracer's report of a
// refusal the LSM tier reported already is dropped; a refused write under
// the read-only workspace adds the --write hint once, and not with --write
// or outside the workspace.
func TestReporterTracerEvents(t *testing.T) {
	write := uint32(unix.O_WRONLY | unix.O_CREAT)
	for _, tc := range []struct {
		name     string
		writable bool
		events   []events.Event
		want     []string // op target tier errno
		hint     bool
	}{
		{
			name: "tier and hint once",
			events: []events.Event{
				traceEvent(unix.SYS_OPENAT, unix.EROFS, "/ws/f", write, "mount"),
				traceEvent(unix.SYS_OPENAT, unix.EROFS, "/ws/g", write, "mount"),
				traceEvent(unix.SYS_IO_URING_SETUP, unix.EPERM, "", 0, "seccomp"),
			},
			want: []string{"open /ws/f mount EROFS", "open /ws/g mount EROFS", "syscall io_uring_setup seccomp EPERM"},
			hint: true,
		},
		{
			name:     "no hint with --write",
			writable: true,
			events:   []events.Event{traceEvent(unix.SYS_OPENAT, unix.EROFS, "/ws/.git/hooks/x", write, "mount")},
			want:     []string{"open /ws/.git/hooks/x mount EROFS"},
		},
		{
			name:   "no hint outside the workspace or for reads",
			events: []events.Event{traceEvent(unix.SYS_MKDIR, unix.EROFS, "/usr/x", 0, "mount"), traceEvent(unix.SYS_OPENAT, unix.EROFS, "/ws/f", 0, "mount"), traceEvent(unix.SYS_OPENAT, unix.EROFS, "/wsx/f", write, "mount")},
			want:   []string{"mkdir /usr/x mount EROFS", "open /ws/f mount EROFS", "open /wsx/f mount EROFS"},
		},
		{
			name: "shim left out",
			events: []events.Event{
				func() events.Event {
					e := traceEvent(unix.SYS_OPENAT, unix.EACCES, "/.sbx/sbx", 0, "landlock")
					e.PID = 1000
					return e
				}(),
				traceEvent(unix.SYS_OPENAT, unix.EACCES, "/.sbx/sbx", 0, "landlock"),
			},
			want: []string{"open /.sbx/sbx landlock EACCES"},
		},
		{
			name: "shim's BPF LSM canary left out",
			events: []events.Event{
				{Op: events.OpFileOpen, PID: 1000, Comm: "sbx", Errno: unix.EACCES, Path: "/.sbx/sbx"},
				{Op: events.OpFileOpen, PID: 7, Comm: "cat", Errno: unix.EACCES, Path: "/.sbx/sbx"},
			},
			want: []string{"open /.sbx/sbx bpf EACCES"},
		},
		{
			name: "LSM duplicate dropped",
			events: []events.Event{
				{Op: events.OpFileOpen, PID: 7, Comm: "sh", Errno: unix.EACCES, Path: "/etc/x"},
				traceEvent(unix.SYS_OPENAT, unix.EACCES, "/etc/x", 0, "landlock"),
				traceEvent(unix.SYS_OPENAT, unix.EACCES, "/etc/y", 0, "landlock"),
			},
			want: []string{"open /etc/x bpf EACCES", "open /etc/y landlock EACCES"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			r := New(&log, nil)
			r.SetSandbox(1000, "/ws", tc.writable)
			for _, e := range tc.events {
				r.AddEvent(e, "bpf")
			}
			r.Finish()
			vs, _ := r.Violations()
			var got []string
			for _, v := range vs {
				got = append(got, v.Op+" "+v.Target+" "+v.Tier+" "+v.Errno)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("reported %q, want %q", got, tc.want)
			}
			if n := strings.Count(log.String(), "--write"); n != map[bool]int{true: 1, false: 0}[tc.hint] {
				t.Errorf("%d --write hints, want hint=%v:\n%s", n, tc.hint, log.String())
			}
		})
	}
}

func TestMountTable(t *testing.T) {
	mt := parseMountInfo(testMountInfo)
	for _, tc := range []struct {
		path string
		id   uint64
		ok   bool
	}{
		{"/", 100, true},
		{"/usr/bin/sh", 100, true},
		{"/etc", 101, true},
		{"/etc/hostname", 101, true},
		{"/etcx/f", 100, true},
		{"/home/u/my ws/a/b", 102, true},
		{"/home/u/my ws/.git/config", 103, true},
		{"/home/u/my ws/.gitx", 102, true},
		{"/home/u/my ws/../my ws/.git/x", 103, true},
		{"/tmp/f", 105, true},
		{"relative/path", 0, false},
	} {
		id, ok := mt.of(tc.path)
		if id != tc.id || ok != tc.ok {
			t.Errorf("of(%q) = %d, %v; want %d, %v", tc.path, id, ok, tc.id, tc.ok)
		}
	}
}

// TestCrossMountAfterSandboxEnds: an EXDEV read after the sandbox ended (no
// PID 1 to look the mounts up through) is still told apart by the mount
// table read before the program started: the kernel's own EXDEV between
// mounts is no denial; Landlock's within one mount is.
func TestCrossMountAfterSandboxEnds(t *testing.T) {
	mt := parseMountInfo(testMountInfo)
	const gone = 1<<22 + 1 // above the kernel's largest pid_max: no such process
	link := func(from, to string) events.Event {
		e := traceEvent(unix.SYS_LINKAT, unix.EXDEV, from, 0, "landlock")
		e.Syscall.Path2 = to
		return e
	}
	rename := func(from, to string) events.Event {
		e := traceEvent(unix.SYS_RENAMEAT2, unix.EXDEV, from, 0, "landlock")
		e.Syscall.Path2 = to
		return e
	}
	for _, tc := range []struct {
		name  string
		mt    mountTable
		e     events.Event
		cross bool
	}{
		{"link across mounts", mt, link("/etc/hostname", "/home/u/my ws/hl"), true},
		{"link within the workspace mount", mt, link("/home/u/my ws/a", "/home/u/my ws/b/hl"), false},
		{"rename into the protected .git", mt, rename("/home/u/my ws/hooks", "/home/u/my ws/.git/hooks"), true},
		{"rename within /tmp", mt, rename("/tmp/a", "/tmp/b"), false},
		{"no mount table", nil, link("/etc/hostname", "/home/u/my ws/hl"), false},
		{"not EXDEV", mt, func() events.Event { e := link("/etc/hostname", "/tmp/hl"); e.Errno = unix.EACCES; return e }(), false},
	} {
		if got := crossMount(gone, tc.mt, tc.e); got != tc.cross {
			t.Errorf("%s: crossMount = %v, want %v", tc.name, got, tc.cross)
		}
	}
}

// TestReporterNetQuietAndHint: routine probes (a UDP socket's connect,
// which sends nothing; Node's io_uring_setup) go to --violations and the
// result but print no line; the first refused attempt to reach the network
// adds one line saying how to allow it, and only one.
func TestReporterNetQuietAndHint(t *testing.T) {
	udpProbe := events.Event{Op: events.OpConnect6, PID: 7, Comm: "pip", Errno: unix.EPERM, Family: unix.AF_INET6,
		SockType: unix.SOCK_DGRAM, Addr: netip.MustParseAddrPort("[2001:db8::1]:53")}
	tcp := events.Event{Op: events.OpConnect4, PID: 7, Comm: "curl", Errno: unix.EPERM, Family: unix.AF_INET,
		SockType: unix.SOCK_STREAM, Addr: netip.MustParseAddrPort("192.0.2.1:443")}
	udpSend := events.Event{Op: events.OpSendmsg4, PID: 7, Comm: "dig", Errno: unix.EPERM, Family: unix.AF_INET,
		SockType: unix.SOCK_DGRAM, Addr: netip.MustParseAddrPort("192.0.2.1:53")}
	uring := traceEvent(unix.SYS_IO_URING_SETUP, unix.EPERM, "", 0, "seccomp")
	noInet := events.Event{Op: events.OpSocketCreate, PID: 7, Comm: "npm", Errno: unix.EPERM, Family: unix.AF_INET,
		SockType: unix.SOCK_STREAM, Protocol: unix.IPPROTO_TCP}
	for _, tc := range []struct {
		name   string
		events []events.Event
		lines  []string // the sbx: lines printed
		kept   int      // violations in the result
	}{
		{"probes only", []events.Event{udpProbe, uring}, nil, 2},
		{"connect", []events.Event{udpProbe, tcp, tcp}, []string{
			"sbx: denied connect 192.0.2.1:443 (7 curl)",
			"sbx: to let the program reach 192.0.2.1:443, run sbx with --allow-host 192.0.2.1:443",
			"sbx: 2 operation(s) denied in all (1 distinct); 1 routine probe(s) refused quietly",
		}, 3},
		{"udp send, one hint", []events.Event{udpSend, tcp}, []string{
			"sbx: denied sendmsg 192.0.2.1:53 (7 dig)",
			"sbx: to let the program reach 192.0.2.1:53: --allow-host 192.0.2.1:53 opens TCP to it; datagrams beyond the sandbox's loopback stay refused",
			"sbx: denied connect 192.0.2.1:443 (7 curl)",
		}, 2},
		{"--net none", []events.Event{noInet}, []string{
			"sbx: denied socket AF_INET SOCK_STREAM IPPROTO_TCP (7 npm)",
			"sbx: the program has no network (--net none); --net loopback gives it its own loopback, --allow-host HOST[:PORT] a host through sbx's proxy",
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			r := New(&log, nil)
			r.SetSandbox(1000, "/ws", false)
			for _, e := range tc.events {
				r.AddEvent(e, "bpf")
			}
			r.Finish()
			got := strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n")
			if log.Len() == 0 {
				got = nil
			}
			if !slices.Equal(got, tc.lines) {
				t.Errorf("printed:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.lines, "\n"))
			}
			if vs, _ := r.Violations(); len(vs) != tc.kept {
				t.Errorf("%d violations kept, want %d", len(vs), tc.kept)
			}
		})
	}
}

// TestReporterQuiet: --quiet prints no denial line and no hint, while the
// --violations file gets every record and the count at the end stays.
func TestReporterQuiet(t *testing.T) {
	for _, quiet := range []bool{false, true} {
		var log, file bytes.Buffer
		r := New(&log, &file)
		r.Silent = quiet
		r.Add(violationN("open", "landlock", 1))
		r.Add(Violation{Op: "connect", Target: "example.com:443", Errno: "EACCES", Tier: "proxy", Reason: "not allowed"})
		r.Finish()
		lines := strings.Count(log.String(), "sbx: denied ")
		if want := map[bool]int{false: 2, true: 0}[quiet]; lines != want {
			t.Errorf("quiet=%v: %d denial lines, want %d:\n%s", quiet, lines, want, log.String())
		}
		if quiet && (strings.Contains(log.String(), "--allow-host") || !strings.Contains(log.String(), "sbx: 2 operation(s) denied in all (2 distinct)")) {
			t.Errorf("quiet: stderr %q, want only the count", log.String())
		}
		if n := strings.Count(file.String(), "\n"); n != 2 {
			t.Errorf("quiet=%v: %d --violations records, want 2", quiet, n)
		}
	}
}

func traceEvent(nr uint32, errno unix.Errno, path string, flags uint32, tier string) events.Event {
	return events.Event{Op: events.OpSyscall, PID: 7, Comm: "sh", Errno: errno, Path: path, Flags: flags, Tier: tier,
		Syscall: &events.Syscall{Nr: nr}}
}

// A sandbox's mount table as its mountinfo shows it: the root, a bind of
// /etc, a workspace with a space in its path (octal-escaped), a protected
// entry inside it, and a tmpfs stacked over /tmp (the last one counts).
const testMountInfo = `100 99 0:50 / / ro,relatime - tmpfs tmpfs ro
101 100 8:1 /etc /etc ro,nosuid,nodev - ext4 /dev/sda1 rw
102 100 8:1 /home/u/my\040ws /home/u/my\040ws rw - ext4 /dev/sda1 rw
103 102 8:1 /home/u/my\040ws/.git /home/u/my\040ws/.git ro - ext4 /dev/sda1 rw
104 100 0:51 / /tmp rw - tmpfs tmpfs rw
105 104 0:52 / /tmp rw - tmpfs tmpfs rw
`
