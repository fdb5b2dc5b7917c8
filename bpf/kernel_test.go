package bpf

import (
	"errors"
	"strings"
	"testing"
)

func TestParseRelease(t *testing.T) {
	for _, c := range []struct {
		in   string
		want KernelVersion
	}{
		{"6.1.0-28-cloud-amd64", KernelVersion{6, 1}},
		{"5.10.0-33-cloud-amd64", KernelVersion{5, 10}},
		{"6.18.44-fc-v1252", KernelVersion{6, 18}},
		{"5.14.0-427.el9.x86_64", KernelVersion{5, 14}},
		{"6.8", KernelVersion{6, 8}},
		{"", KernelVersion{}},
		{"linux", KernelVersion{}},
		{"6.x", KernelVersion{}},
	} {
		if got := ParseRelease(c.in); got != c.want {
			t.Errorf("ParseRelease(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestFloorBelow(t *testing.T) {
	for _, c := range []struct {
		k    KernelVersion
		want string // "" for no error
	}{
		{KernelVersion{5, 10}, "the BPF LSM tier needs Linux 5.17+ (bpf_loop); this is 5.10"},
		{KernelVersion{5, 16}, "the BPF LSM tier needs Linux 5.17+ (bpf_loop); this is 5.16"},
		{KernelVersion{4, 19}, "the BPF LSM tier needs Linux 5.17+ (bpf_loop); this is 4.19"},
		{KernelVersion{5, 17}, ""},
		{KernelVersion{6, 1}, ""},
		{KernelVersion{}, ""}, // unknown: no claim
	} {
		err := MinLSM.Below("BPF LSM tier", c.k)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: got %v, want nil", c.k, err)
		case c.want != "" && (err == nil || !errors.Is(err, ErrNotSupported) || !contains(err.Error(), c.want)):
			t.Errorf("%v: got %v, want ErrNotSupported with %q", c.k, err, c.want)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
