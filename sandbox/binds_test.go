package sandbox

import (
	"slices"
	"testing"
)

func TestBinds(t *testing.T) {
	s := &Spec{
		Home: "/data/sbx/homes/p", HomeInside: "/home/u",
		Workspace: "/home/u/p", Write: true,
		Pinned:    []string{"/home/u/p/sub"},
		Protected: []string{"/home/u/p/sub/.git"},
		ReadOnly:  []string{"/home/u/.pi/agent/models.json", "/opt/x", "/srv/masked/y"},
		ReadWrite: []string{"/opt/x", "/etc/shadow"},
		Hidden:    []Hidden{{Path: "/srv/masked", Dir: true}},
	}
	var got []string
	for _, b := range s.Binds() {
		w := "ro"
		if b.Writable {
			w = "rw"
		}
		got = append(got, b.Source+">"+b.Destination+":"+w)
	}
	want := []string{
		"/data/sbx/homes/p>/home/u:rw",
		"/opt/x>/opt/x:rw", // the --rw over the --ro of the same path
		"/home/u/p>/home/u/p:rw",
		"/home/u/p/sub>/home/u/p/sub:rw",
		"/home/u/p/sub/.git>/home/u/p/sub/.git:ro",
		"/home/u/.pi/agent/models.json>/home/u/.pi/agent/models.json:ro",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Binds() =\n%q\nwant\n%q", got, want)
	}
}
