package stage

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sbx-sandbox/sbx/hostfs"

	"github.com/sbx-sandbox/sbx/internal/lockfile"

	"github.com/sbx-sandbox/sbx/internal/runid"
)

// manifestVersion is bumped when the manifest format changes incompatibly.
// Version 2 added the identity copy-back runs with and the recorded
// directory identities; version 3 moved the staged files out of the
// sandbox home into the run's own dir (Staging).
const manifestVersion = 3

// manifest describes one run's staging dir. It lives in the host-only state
// dir, never in the sandbox home: a manifest names host paths that copy-back
// writes to, so the sandbox must not be able to forge one.
type manifest struct {
	Version int       `json:"version"`
	RunID   string    `json:"run_id"`
	PID     int       `json:"pid"` // informational; liveness is the lock
	Started time.Time `json:"started"`
	// Staging is the run dir (Options.RunDir) and StagingID its identity
	// at staging: copy-back reads nothing else.
	Staging   string        `json:"staging"`
	StagingID hostfs.FileID `json:"staging_id"`
	// SandboxHome (resolved) and HomeID identify a throwaway home, removed
	// once the copy-back is done.
	SandboxHome string        `json:"sandbox_home,omitempty"`
	HomeID      hostfs.FileID `json:"home_id"`
	// KeepHome is the user's home (resolved): a copy-back given up keeps
	// the sandbox's files below it (see giveUp).
	KeepHome string `json:"keep_home,omitempty"`
	// UID, GID and Groups are the invoking user's: staging, copy-back and
	// recovery run with them (see hostfs.Cred).
	UID    int   `json:"uid"`
	GID    int   `json:"gid"`
	Groups []int `json:"groups,omitempty"`
	// Throwaway: the sandbox home is the run's own, removed with the
	// staging dir once the copy-back is done.
	Throwaway bool `json:"throwaway,omitempty"`
	// Attempts counts the copy-backs that failed; after maxAttempts the
	// run is given up.
	Attempts int     `json:"attempts,omitempty"`
	Entries  []entry `json:"entries"` // copy-back entries only
}

// cred is the identity m's copy-back runs with.
func (m *manifest) cred() hostfs.Cred {
	return hostfs.Cred{UID: m.UID, GID: m.GID, Groups: m.Groups}
}

// entry is one copy-back: the staged directory Staged (relative to the run
// dir) mirrors the host directory Host. Files records the state at staging
// time of the files that existed. What comes back is only the staged file
// itself (Name), or, for a recursive entry (a --session-dir), only session
// files (*.jsonl) at any depth: nothing else the sandbox writes beside them.
// Deletions never propagate.
type entry struct {
	Arg    string `json:"arg"`    // as written, for messages
	Staged string `json:"staged"` // slash path below the run dir
	Host   string `json:"host"`   // resolved host directory
	// HostID is Host's identity at staging (its parent's when CreateHost):
	// copy-back writes nowhere else.
	HostID     hostfs.FileID     `json:"host_id"`
	Name       string            `json:"name,omitempty"` // the one file of a non-recursive entry
	Recursive  bool              `json:"recursive"`      // a --session-dir: *.jsonl below it
	CreateHost bool              `json:"create_host,omitempty"`
	Files      map[string]record `json:"files"`
}

// SessionExt is the extension of the files a --session-dir brings back.
const SessionExt = ".jsonl"

// wants reports whether rel (below the staged dir) may come back.
func (e *entry) wants(rel string) bool {
	if e.Recursive {
		return strings.HasSuffix(rel, SessionExt) && !strings.HasPrefix(path.Base(rel), ".")
	}
	return rel == e.Name
}

func lockPath(stateDir, id string) string     { return filepath.Join(stateDir, id+".lock") }
func manifestPath(stateDir, id string) string { return filepath.Join(stateDir, id+".json") }

// createLock creates stateDir/<id>.lock already locked: the file is made
// and flock'ed under a temporary name and then hard-linked into place, so
// no one can ever see the lock file unlocked while its owner lives. The
// lock is released when the returned file is closed or the process dies,
// even by SIGKILL.
func createLock(stateDir, id string) (*os.File, error) {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("create state dir %s: %w", stateDir, err)
	}
	f, err := lockfile.Publish(lockPath(stateDir, id), []byte(strconv.Itoa(os.Getpid())+"\n"))
	if errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("run id %s is already in use", id)
	}
	if err != nil {
		return nil, fmt.Errorf("create lock file: %w", err)
	}
	return f, nil
}

// tryLock opens and locks an existing lock file without waiting. held
// reports that another open file holds the lock (its run is alive); a
// missing file gives (nil, false, nil).
func tryLock(p string) (f *os.File, held bool, err error) { return lockfile.TryOpen(p) }

// writeManifest replaces stateDir/<id>.json atomically (temp file, fsync,
// rename, fsync of the directory).
func writeManifest(stateDir string, m *manifest) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	dst := manifestPath(stateDir, m.RunID)
	tmp := dst + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	_, err = f.Write(append(data, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write manifest %s: %w", dst, err)
	}
	return syncDir(stateDir)
}

func readManifest(stateDir, id string) (*manifest, error) {
	data, err := os.ReadFile(manifestPath(stateDir, id))
	if err != nil {
		return nil, err
	}
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("decode manifest %s: %w", manifestPath(stateDir, id), err)
	}
	if m.Version != manifestVersion {
		return nil, &staleError{path: manifestPath(stateDir, id), version: m.Version}
	}
	if m.RunID != id || !runid.Valid(m.RunID) || !filepath.IsAbs(m.Staging) || (m.Throwaway && !filepath.IsAbs(m.SandboxHome)) {
		return nil, fmt.Errorf("manifest %s: inconsistent run id, run dir or sandbox home", manifestPath(stateDir, id))
	}
	return &m, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// staleError is a manifest of another sbx version: it cannot be completed
// safely (version 1 did not record whose copy-back it is), so Recover
// discards it with one line.
type staleError struct {
	path    string
	version int
}

func (e *staleError) Error() string {
	return fmt.Sprintf("manifest %s: version %d, this sbx reads version %d", e.path, e.version, manifestVersion)
}
