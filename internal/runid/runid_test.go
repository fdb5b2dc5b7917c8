package runid

import (
	"regexp"
	"testing"
)

func TestValid(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{"0123456789abcdef", true},
		{"run-1.x_Y", true},
		{"...", true},
		{"", false},
		{".", false},
		{"..", false},
		{"a/b", false},
		{"../x", false},
		{"a b", false},
		{"a\x00", false},
		{"é", false},
		{"a\n", false},
	} {
		if got := Valid(tc.id); got != tc.want {
			t.Errorf("Valid(%q) = %v, want %v", tc.id, got, tc.want)
		}
	}
}

func TestNew(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id, err := New()
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(id) || !Valid(id) || seen[id] {
			t.Fatalf("New() = %q (seen before: %v)", id, seen[id])
		}
		seen[id] = true
	}
}

// FuzzValid: Valid agrees with the regular expression the three copies it
// replaced used.
func FuzzValid(f *testing.F) {
	for _, s := range []string{"abc", ".", "..", "a/b", "", "x\xff"} {
		f.Add(s)
	}
	re := regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
	f.Fuzz(func(t *testing.T, s string) {
		if want := re.MatchString(s) && s != "." && s != ".."; Valid(s) != want {
			t.Fatalf("Valid(%q) = %v, want %v", s, !want, want)
		}
	})
}
