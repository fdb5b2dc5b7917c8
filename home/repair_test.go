package home

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestMadeByRoot(t *testing.T) {
	tests := []struct {
		name  string
		uid   uint32
		mode  uint32
		nlink uint64
		size  int64
		want  bool
	}{
		{"root's directory", 0, unix.S_IFDIR | 0o755, 2, 4096, true},
		{"root's empty file (a mount point)", 0, unix.S_IFREG | 0o755, 1, 0, true},
		{"the user's directory", 1000, unix.S_IFDIR | 0o755, 2, 4096, false},
		{"root's file with content", 0, unix.S_IFREG | 0o600, 1, 7, false},
		{"a hard link to root's file", 0, unix.S_IFREG | 0o600, 2, 0, false},
		{"root's symlink", 0, unix.S_IFLNK | 0o777, 1, 0, false},
		{"root's FIFO", 0, unix.S_IFIFO | 0o600, 1, 0, false},
	}
	for _, tt := range tests {
		if got := madeByRoot(tt.uid, tt.mode, tt.nlink, tt.size); got != tt.want {
			t.Errorf("%s: madeByRoot = %v, want %v", tt.name, got, tt.want)
		}
	}
}
