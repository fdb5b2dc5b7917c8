package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 18: an sbx exec request may name extra read-only paths ("ro"),
// e.g. an agent installed outside /usr; they are checked as the workspace
// is: the home, its ancestors, /, a kernel interface, a missing or
// relative path are rejected and nothing runs.
func TestExecReadOnlyPaths(t *testing.T) {
	b := newBox(t)
	dir := b.tempDir()
	tool := filepath.Join(dir, "tool")
	writeFile(t, tool, "#!/bin/sh\necho tool ran\n", 0o755)
	chownToUser(t, tool)

	// Without ro the tool is not there (control), with it it runs and is
	// read-only.
	b.exec(b.req([]string{tool})).wantExited(t, 127)
	run := b.exec(b.req([]string{tool}, "ro", []string{dir}))
	run.wantExited(t, 0)
	if run.res.Output != "tool ran\n" {
		t.Errorf("ro tool: output %q", run.res.Output)
	}
	// A file alone, read-only: readable, not writable (the host's own
	// file, which its owner can write outside).
	run = b.exec(b.req([]string{"sh", "-c", `cat "$0"; echo x >> "$0" || echo refused`, tool}, append([]any{"ro", []string{tool}}, shell...)...))
	run.wantExited(t, 0)
	if want := "#!/bin/sh\necho tool ran\nrefused\n"; !strings.HasPrefix(run.res.Output, want) || !strings.Contains(run.res.Output, "Read-only file system") {
		t.Errorf("ro file: output %q, want %q and EROFS", run.res.Output, want)
	}
	if data, _ := os.ReadFile(tool); string(data) != "#!/bin/sh\necho tool ran\n" {
		t.Errorf("the ro file changed on the host: %q", data)
	}

	home := hostHome(t)
	for _, c := range []struct {
		name string
		ro   any
		want string
	}{
		{"home", []string{home}, "is your home directory"},
		{"root", []string{"/"}, "the whole host cannot be mounted"},
		{"proc", []string{"/proc/self"}, "a kernel interface"},
		{"state dir", []string{stateRoot}, "sbx's own state directory"},
		{"missing", []string{filepath.Join(dir, "nope")}, "does not exist"},
		{"relative", []string{"tool"}, "is not an absolute path"},
		{"not an array", dir, "ro must be an array of strings"},
	} {
		if c.name == "home" && filepath.Dir(home) != "/" {
			b.exec(b.req([]string{tool}, "ro", []string{filepath.Dir(home)})).wantRejected(t, "an ancestor of your home directory")
		}
		t.Run(c.name, func(t *testing.T) {
			b := b.in(t)
			b.exec(b.req([]string{tool}, "ro", c.ro)).wantRejected(t, c.want)
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); err == nil {
		t.Error("a file was created in the ro directory")
	}
}
