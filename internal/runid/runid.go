// Package runid makes and checks the ids that name a run's directories and
// files in sbx's state dirs (the sandbox's run dir and cgroup, the staging
// lock and manifest, the throwaway home's record). An id becomes a file
// name, so a bad one is rejected, never rewritten.
package runid

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// New returns a fresh id: 16 random hex digits.
func New() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate run id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Valid reports whether id can name a run: one or more of A-Z a-z 0-9
// '.' '_' '-', and not "." or "..". (No length limit: callers that take
// ids from outside add their own.)
func Valid(id string) bool {
	if id == "" || id == "." || id == ".." {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
