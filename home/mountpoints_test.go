package home

import (
	"reflect"
	"testing"

	"github.com/sbx-sandbox/sbx/sandbox"
)

func TestHomeMountPoints(t *testing.T) {
	tests := []struct {
		name string
		spec sandbox.Spec
		want []homeMount
	}{
		{
			name: "workspace outside the home",
			spec: sandbox.Spec{Workspace: "/work/p", HomeInside: "/home/u"},
		},
		{
			name: "workspace, a file and a run bind below the home",
			spec: sandbox.Spec{
				Workspace: "/home/u/p", HomeInside: "/home/u",
				ReadOnly: []string{"/home/u/.pi/agent/settings.json", "/etc/x"},
				RunBinds: []sandbox.Bind{{Source: "/nonexistent/rw/0", Destination: "/home/u/.token", Writable: true}},
			},
			want: []homeMount{{"p", true}, {".pi/agent/settings.json", false}, {".token", false}},
		},
		{
			name: "below another mount below the home",
			spec: sandbox.Spec{
				Workspace: "/work/p", HomeInside: "/home/u",
				ReadWrite: []string{"/home/u/.config/x"}, Protected: []string{"/home/u/.config/x/.git"},
				Hidden: []sandbox.Hidden{{Path: "/home/u/.config/x/secret"}, {Path: "/home/u/.aws", Dir: true}},
			},
			want: []homeMount{{".config/x", false}, {".aws", true}},
		},
		{
			name: "the home itself mounted over",
			spec: sandbox.Spec{Workspace: "/home/u", HomeInside: "/home/u", ReadOnly: []string{"/home/u/.pi"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := homeMountPoints(&tt.spec); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("homeMountPoints = %v, want %v", got, tt.want)
			}
		})
	}
}
