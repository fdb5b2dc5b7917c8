// Package config reads sbx's config file,
// ${XDG_CONFIG_HOME:-~/.config}/sbx/config.toml of the invoking user:
// defaults for sbx run and user profiles, in TOML.
//
// It is strict, because a setting that silently does not apply is worse
// than none: an unknown key, a value of the wrong type or a TOML syntax
// error is an error naming the file, the line and the key. A user profile
// with a built-in's name replaces that built-in.
//
//	[defaults]
//	memory = "8g"
//	quiet = true
//
//	[profiles.aider]
//	description = "aider with the Anthropic API"
//	allow_hosts = ["api.anthropic.com"]
//	env = ["ANTHROPIC_API_KEY"]
//	ro_if_exists = ["~/.aider.conf.yml"]
//
// The keys of [defaults] and of each profile are those of
// [profile.Profile] (their toml tags).
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/sbx-sandbox/sbx/profile"
)

// File is the content of a config file.
type File struct {
	// Path is where it was read from ("" when there was none).
	Path string `toml:"-"`
	// Defaults apply to every sbx run, under the profile and the flags.
	Defaults profile.Profile `toml:"defaults"`
	// Profiles are the user's own profiles, by name.
	Profiles map[string]profile.Profile `toml:"profiles"`
}

// Path returns the config file of a user: $XDG_CONFIG_HOME/sbx/config.toml
// when xdgConfigHome is an absolute path (the XDG rule: a relative one is
// ignored), else home/.config/sbx/config.toml.
func Path(xdgConfigHome, home string) string {
	if filepath.IsAbs(xdgConfigHome) {
		return filepath.Join(xdgConfigHome, "sbx", "config.toml")
	}
	return filepath.Join(home, ".config", "sbx", "config.toml")
}

// maxSize bounds the file: a config is a few hundred bytes.
const maxSize = 1 << 20

// Load reads and checks the config file at path. A missing file is an
// empty config, not an error.
func Load(path string) (File, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return File{}, nil
	}
	if err != nil {
		return File{}, fmt.Errorf("config %s: %w", path, err)
	}
	defer f.Close()
	return Read(path, f)
}

// Read reads and checks a config file's content from r; path names it in
// errors.
func Read(path string, r io.Reader) (File, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxSize+1))
	if err != nil {
		return File{}, fmt.Errorf("config %s: %w", path, err)
	}
	if len(data) > maxSize {
		return File{}, fmt.Errorf("config %s: larger than %d bytes", path, maxSize)
	}
	f, err := Parse(data)
	if err != nil {
		return File{}, fmt.Errorf("config %s%w", path, err)
	}
	f.Path = path
	return f, nil
}

// Parse decodes and checks a config's text. Its errors start with
// ":LINE: " (to follow the file's name).
func Parse(data []byte) (File, error) {
	var f File
	dec := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return File{}, describe(err)
	}
	if err := f.Defaults.Validate(); err != nil {
		return File{}, valueError(data, []string{"defaults"}, err)
	}
	for _, name := range sortedKeys(f.Profiles) {
		p := f.Profiles[name]
		if !validName(name) {
			return File{}, fmt.Errorf(": [profiles.%q]: a profile name is letters, digits, '.', '_' and '-'", name)
		}
		if err := p.Validate(); err != nil {
			return File{}, valueError(data, []string{"profiles", name}, err)
		}
		p.Name = name
		f.Profiles[name] = p
	}
	return f, nil
}

// describe turns the TOML library's errors into ":LINE: key KEY: what".
func describe(err error) error {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) && len(strict.Errors) > 0 {
		var parts []string
		for _, e := range strict.Errors {
			row, _ := e.Position()
			parts = append(parts, fmt.Sprintf(":%d: unknown key %s", row, strings.Join(e.Key(), ".")))
		}
		return errors.New(strings.Join(parts, "; "))
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, _ := de.Position()
		msg := typeMismatch.ReplaceAllString(strings.TrimPrefix(de.Error(), "toml: "), "a TOML $1 where the key takes $2")
		if k := de.Key(); len(k) > 0 {
			return fmt.Errorf(":%d: key %s: %s", row, strings.Join(k, "."), msg)
		}
		return fmt.Errorf(":%d: %s", row, msg)
	}
	return fmt.Errorf(": %w", err)
}

// typeMismatch is the library's message for a value of the wrong type,
// which names Go types; it is rewritten to name what the key takes.
var typeMismatch = regexp.MustCompile(`cannot decode TOML (\w+) into struct field \S+ of type \[?\]?\*?(\w+)`)

// valueError names the line and key of a value Validate refused: the
// key's line in its table, found in the text (the TOML library reports
// positions only for its own errors).
func valueError(data []byte, table []string, err error) error {
	var ke *profile.KeyError
	if !errors.As(err, &ke) {
		return fmt.Errorf(": [%s]: %w", strings.Join(table, "."), err)
	}
	full := strings.Join(append(slices.Clone(table), ke.Key), ".")
	if line := keyLine(data, table, ke.Key); line > 0 {
		return fmt.Errorf(":%d: key %s: %w", line, full, ke.Err)
	}
	return fmt.Errorf(": key %s: %w", full, ke.Err)
}

// keyLine returns the 1-based line of "key =" in the table named by path
// (a [defaults] or [profiles.NAME] header, the name bare or quoted), or 0.
func keyLine(data []byte, path []string, key string) int {
	var headers []string
	if len(path) == 2 {
		headers = []string{"[" + path[0] + "." + path[1] + "]", "[" + path[0] + `."` + path[1] + `"]`}
	} else {
		headers = []string{"[" + path[0] + "]"}
	}
	in := false
	for i, l := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "[") {
			in = slices.Contains(headers, strings.ReplaceAll(t, " ", ""))
			continue
		}
		if k, _, ok := strings.Cut(t, "="); in && ok && strings.TrimSpace(k) == key {
			return i + 1
		}
	}
	return 0
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func sortedKeys(m map[string]profile.Profile) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
