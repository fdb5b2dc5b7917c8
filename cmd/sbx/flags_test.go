package main

import (
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  bool
	}{
		{"512m", 512 << 20, false},
		{"512M", 512 << 20, false},
		{"512MiB", 512 << 20, false},
		{"2g", 2 << 30, false},
		{"4194304", 4 << 20, false},
		{"1t", 1 << 40, false},
		{"4194303", 0, true}, // below the minimum
		{"0", 0, true},
		{"-1m", 0, true},
		{"", 0, true},
		{"m", 0, true},
		{"1.5g", 0, true},
		{"99999999999999999999g", 0, true},
		{"9000000000t", 0, true}, // overflows int64
	} {
		got, err := parseSize(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d, err=%v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"512m", "2g", "0", "-5", "1t", "9223372036854775807", "8EiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseSize(s)
		if err == nil && (n < 4<<20) {
			t.Fatalf("parseSize(%q) = %d: accepted a size below 4 MiB", s, n)
		}
		if err != nil && n != 0 {
			t.Fatalf("parseSize(%q) = %d with error %v", s, n, err)
		}
	})
}

// FuzzRunFlags feeds arbitrary command lines to "sbx run" flag parsing with
// an invalid --memory, so that nothing ever starts: every outcome must be
// exit 125 (or 0 for --help) with sbx lines on stderr and nothing on stdout
// but help text.
func FuzzRunFlags(f *testing.F) {
	for _, s := range []string{"--write\x00--ro\x00/x", "-w\x00--\x00true", "--help", "--tty\x00bogus", "--cpus\x00NaN", "--env\x00=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.Contains(s, "memory") {
			t.Skip("could override the invalid --memory and start a sandbox")
		}
		args := append([]string{"--memory", "1"}, strings.Split(s, "\x00")...)
		var out, errb strings.Builder
		code := cmdRun(args, streams{out: &out, err: &errb})
		switch code {
		case 0:
			if !strings.Contains(out.String(), "Usage: sbx run") {
				t.Fatalf("exit 0 without help for %q", args)
			}
		case exitSbxError:
			if !strings.HasPrefix(errb.String(), "sbx: ") || strings.Count(errb.String(), "\n") != 1 {
				t.Fatalf("args %q: stderr %q, want one sbx: line", args, errb.String())
			}
		default:
			t.Fatalf("args %q: exit %d", args, code)
		}
	})
}
