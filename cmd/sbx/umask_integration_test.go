package main

import (
	"os"
	"path/filepath"
	"testing"
)

// Issue 18: the program gets the caller's umask (libcontainer's default
// was 0022): under a host umask of 077 a new file is 0600 and a new
// directory 0700, as they are outside; under 002, 0664.
func TestUmaskPassedThrough(t *testing.T) {
	b := newBox(t)
	for _, c := range []struct{ umask, file, dir string }{
		{"077", "600", "700"},
		{"002", "664", "775"},
	} {
		t.Run(c.umask, func(t *testing.T) {
			b := b.in(t)
			f, d := "f"+c.umask, "d"+c.umask
			p := b.startCmd(opts{}, "sh", "-c", `umask "$1" && shift && exec "$@"`, "sh", c.umask,
				sbxBin, "run", "-w", "--", "sh", "-c", `touch "$1" && mkdir "$2" && stat -c %a "$1" "$2"`, "sh", f, d)
			p.sbxRun = true
			r := p.wait()
			if want := c.file + "\n" + c.dir + "\n"; r.code != 0 || r.stdout != want {
				t.Fatalf("umask %s: got %v, want modes %q", c.umask, r, want)
			}
			// The files on the host have those modes too.
			fi, err := os.Stat(filepath.Join(b.ws, f))
			if err != nil || fi.Mode().Perm().String() != map[string]string{"600": "-rw-------", "664": "-rw-rw-r--"}[c.file] {
				t.Errorf("host mode of %s: %v %v", f, fi.Mode(), err)
			}
			// Control: the same creation on the host.
			h := b.host(opts{}, "sh", "-c", `umask "$1" && touch "$2" && stat -c %a "$2"`, "sh", c.umask, "h"+c.umask)
			if h.stdout != c.file+"\n" {
				t.Errorf("control on the host: got %v, want %s", h, c.file)
			}
		})
	}
}
