package protect

import (
	"path/filepath"
	"slices"
	"testing"
)

// TestProtectTreesSource: an --rw path of the command line that names a
// protected entry opens it; the same path from a settings file (not in
// open) leaves it protected. The home's names are protected in a
// writable tree that holds the home or lies inside it (--rw ~/.config:
// ~/.config/sbx), not only when the home is the workspace.
func TestProtectTreesSource(t *testing.T) {
	root := tree(t, "ws/.git/", "ws/src/", "home/.bashrc=x", "home/.config/sbx/", "home/.config/other/")
	ws, home := filepath.Join(root, "ws"), filepath.Join(root, "home")
	git := filepath.Join(ws, ".git")
	for _, tc := range []struct {
		name     string
		rw, open []string
		want     []string // protected entries
	}{
		{"--rw .git on the command line", []string{git}, []string{git}, nil},
		{"workspace walk, .git from no --rw", nil, nil, []string{git}},
		{"--rw ~/.config", []string{filepath.Join(home, ".config")}, []string{filepath.Join(home, ".config")}, []string{git, filepath.Join(home, ".config/sbx")}},
		{"--rw ~", []string{home}, []string{home}, []string{git, filepath.Join(home, ".bashrc"), filepath.Join(home, ".config/sbx")}},
		{"--rw ~/.config/sbx itself", []string{filepath.Join(home, ".config/sbx")}, []string{filepath.Join(home, ".config/sbx")}, []string{git}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr, err := protectTrees(trees{ws: ws, write: true, rw: tc.rw, open: tc.open, home: home}, DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			got := slices.Clone(pr.ReadOnly)
			slices.Sort(got)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("protected %q, want %q", got, want)
			}
		})
	}
}

// TestProtectedEntryOf: a path a settings file or profile asks to write is
// or lies inside a protected entry, by name: at any depth for a
// repository's names, below the workspace or the home for a home's.
func TestProtectedEntryOf(t *testing.T) {
	ws, home := "/w/proj", "/h/u"
	for _, tc := range []struct{ p, want string }{
		{"/w/proj/.git", "/w/proj/.git"},
		{"/w/proj/.git/hooks", "/w/proj/.git"},
		{"/w/proj/sub/.pi/extensions", "/w/proj/sub/.pi"},
		{"/elsewhere/.pi", "/elsewhere/.pi"},
		{"/w/proj/.github/workflows/ci", "/w/proj/.github/workflows"},
		{"/h/u/.ssh", "/h/u/.ssh"},
		{"/h/u/.config/sbx", "/h/u/.config/sbx"},
		{"/h/u/.config/fish/conf.d", "/h/u/.config/fish"},
		{"/h/u/.sbx-thing/x", "/h/u/.sbx-thing"},
		{"/w/proj/.bashrc", "/w/proj/.bashrc"},
		// Not protected: the controls.
		{"/w/proj", ""},
		{"/w/proj/src", ""},
		{"/w/proj/.github", ""},
		{"/h/u/.config", ""},
		{"/h/u/proj/.bashrc", ""},
		{"/other/.ssh", ""},
	} {
		got, ok := EntryOf(tc.p, ws, home)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("EntryOf(%s) = %q, %v; want %q", tc.p, got, ok, tc.want)
		}
	}
}
