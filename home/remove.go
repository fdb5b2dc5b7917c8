package home

import (
	"path/filepath"

	"github.com/sbx-sandbox/sbx/hostfs"
)

// RemoveAsUser removes dir (a throwaway home) and everything below it as
// the user, without following any symlink the sandbox left there.
func RemoveAsUser(c hostfs.Cred, dir string) error {
	return c.Do(func() error {
		parent, err := hostfs.OpenDir(filepath.Dir(dir), nil)
		if err != nil {
			return err
		}
		defer parent.Close()
		return parent.RemoveAll(filepath.Base(dir))
	})
}
