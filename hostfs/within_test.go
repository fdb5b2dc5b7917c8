package hostfs

import "testing"

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		p, root string
		want    bool
	}{
		{"/a", "/a", true},
		{"/a/b", "/a", true},
		{"/a/b/c", "/a", true},
		{"/ab", "/a", false},
		{"/a", "/a/b", false},
		{"/", "/a", false},
		{"/", "/", true},
		{"/x/y", "/", true},
		{"relative", "/", false},
		{"/a/b", "/a/b/", false}, // not clean: no match rather than a guess
	} {
		if got := Within(tc.p, tc.root); got != tc.want {
			t.Errorf("Within(%q, %q) = %v, want %v", tc.p, tc.root, got, tc.want)
		}
	}
}
