package sandbox

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestConfigHidden: a masked file is the empty file bound read-only, a
// masked directory a read-only tmpfs of mode 0000, both after every other
// mount (so over a protected entry or an --ro of the same path).
func TestConfigHidden(t *testing.T) {
	s := testSpec()
	s.Write = true
	s.Protected = []string{"/work/proj/.git"}
	s.Hidden = []Hidden{{Path: "/work/proj/.env"}, {Path: "/work/proj/.git", Dir: true}}
	s.HiddenFile = "/run/sbx/mask-empty"
	cfg, err := s.Config("/run/sbx/run/x/rootfs", "/usr/local/bin/sbx", testLayout)
	if err != nil {
		t.Fatal(err)
	}
	n := len(cfg.Mounts)
	file, dir := cfg.Mounts[n-2], cfg.Mounts[n-1]
	if file.Destination != "/work/proj/.env" || file.Source != s.HiddenFile || !file.IsBind() ||
		file.Flags&unix.MS_RDONLY == 0 || file.Flags&unix.MS_NOEXEC == 0 {
		t.Errorf("masked file mount = %+v, want the empty file bound read-only, noexec", file)
	}
	if dir.Destination != "/work/proj/.git" || dir.Device != "tmpfs" || dir.Flags&unix.MS_RDONLY == 0 ||
		!strings.Contains(dir.Data, "mode=000") {
		t.Errorf("masked directory mount = %+v, want a read-only tmpfs of mode 000", dir)
	}
	protected := false
	for _, m := range cfg.Mounts[:n-2] {
		protected = protected || (m.Destination == "/work/proj/.git" && m.IsBind())
	}
	if !protected {
		t.Errorf("the protected .git is not mounted before its mask")
	}
}

func TestConfigHiddenErrors(t *testing.T) {
	for _, tc := range []struct {
		h    Hidden
		file string
		want string
	}{
		{Hidden{Path: "rel"}, "/f", "not a clean absolute path"},
		{Hidden{Path: "/", Dir: true}, "/f", "not a clean absolute path below /"},
		{Hidden{Path: "/work/proj/x"}, "", "no empty file"},
	} {
		s := testSpec()
		s.Hidden, s.HiddenFile = []Hidden{tc.h}, tc.file
		if _, err := s.Config("/r", "/sbx", testLayout); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Hidden %+v: error %v, want %q", tc.h, err, tc.want)
		}
	}
}
