package stage

import "path/filepath"

// StateDir is where stage keeps its manifests and locks, in sbx's state
// directory stateDir.
func StateDir(stateDir string) string { return filepath.Join(stateDir, "staging") }
