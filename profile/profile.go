package profile

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Profile is a named, partial set of sbx run options. A zero field is
// "not set": the next layer down decides.
type Profile struct {
	// Name is what --profile selects, and what the basename of the
	// command picks when no --profile is given.
	Name string `toml:"-"`
	// Description is one line for "sbx profile list".
	Description string `toml:"description"`

	// AllowHosts are --allow-host rules (HOST[:PORT], *.DOMAIN).
	AllowHosts []string `toml:"allow_hosts"`
	// Env are --env entries: NAME passes the host's value (when set),
	// NAME=VALUE sets one.
	Env []string `toml:"env"`
	// ReadOnly and ReadWrite are --ro and --rw paths: each must exist.
	ReadOnly  []string `toml:"ro"`
	ReadWrite []string `toml:"rw"`
	// ReadOnlyIfExists are --ro paths mounted only when they exist on the
	// host (an agent's login file that a user may not have yet).
	ReadOnlyIfExists []string `toml:"ro_if_exists"`
	// Mask are --mask paths: shown empty and unreadable.
	Mask []string `toml:"mask"`
	// Protect are paths kept read-only inside writable trees, as sbx's
	// protected entries (srt settings' denyWrite).
	Protect []string `toml:"protect"`
	// Settings are --settings files (Anthropic sandbox-runtime's JSON
	// shape); SettingsIfExists those read only when they exist. The
	// files listed in TightenIfExists may only tighten what the others
	// allow (a project's own file).
	Settings         []string `toml:"settings"`
	SettingsIfExists []string `toml:"settings_if_exists"`
	TightenIfExists  []string `toml:"tighten_settings_if_exists"`
	// Args are inserted after the command's name, before its own
	// arguments (e.g. the flag that tells an agent sbx is its sandbox).
	Args []string `toml:"args"`

	// Scalars: "" or nil is unset.
	Write   *bool    `toml:"write"`
	Home    string   `toml:"home"`
	Net     string   `toml:"net"`
	Memory  string   `toml:"memory"`
	CPUs    *float64 `toml:"cpus"`
	Pids    *int64   `toml:"pids"`
	Timeout string   `toml:"timeout"`
	Policy  string   `toml:"policy"`
	Quiet   *bool    `toml:"quiet"`
}

// Merge returns the layers merged in order, later over earlier: lists are
// concatenated (duplicates dropped, first occurrence kept), a scalar set
// in a later layer replaces the earlier value. The result's Name and
// Description are the last non-empty ones.
func Merge(layers ...Profile) Profile {
	var out Profile
	for _, l := range layers {
		out.Name = pick(out.Name, l.Name)
		out.Description = pick(out.Description, l.Description)
		out.AllowHosts = union(out.AllowHosts, l.AllowHosts)
		out.Env = union(out.Env, l.Env)
		out.ReadOnly = union(out.ReadOnly, l.ReadOnly)
		out.ReadWrite = union(out.ReadWrite, l.ReadWrite)
		out.ReadOnlyIfExists = union(out.ReadOnlyIfExists, l.ReadOnlyIfExists)
		out.Mask = union(out.Mask, l.Mask)
		out.Protect = union(out.Protect, l.Protect)
		out.Settings = union(out.Settings, l.Settings)
		out.SettingsIfExists = union(out.SettingsIfExists, l.SettingsIfExists)
		out.TightenIfExists = union(out.TightenIfExists, l.TightenIfExists)
		out.Args = append(out.Args, l.Args...) // an argv: order and repeats matter
		out.Home = pick(out.Home, l.Home)
		out.Net = pick(out.Net, l.Net)
		out.Memory = pick(out.Memory, l.Memory)
		out.Timeout = pick(out.Timeout, l.Timeout)
		out.Policy = pick(out.Policy, l.Policy)
		out.Write = pickPtr(out.Write, l.Write)
		out.CPUs = pickPtr(out.CPUs, l.CPUs)
		out.Pids = pickPtr(out.Pids, l.Pids)
		out.Quiet = pickPtr(out.Quiet, l.Quiet)
	}
	return out
}

func pick(old, new string) string {
	if new != "" {
		return new
	}
	return old
}

func pickPtr[T any](old, new *T) *T {
	if new != nil {
		v := *new
		return &v
	}
	return old
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// Expand returns p with every path that starts with "~/" (or is "~")
// made absolute under home.
func (p Profile) Expand(home string) Profile {
	ex := func(list []string) []string {
		if list == nil {
			return nil
		}
		out := make([]string, len(list))
		for i, s := range list {
			out[i] = ExpandPath(s, home)
		}
		return out
	}
	p.ReadOnly, p.ReadWrite, p.ReadOnlyIfExists = ex(p.ReadOnly), ex(p.ReadWrite), ex(p.ReadOnlyIfExists)
	p.Mask, p.Protect = ex(p.Mask), ex(p.Protect)
	p.Settings, p.SettingsIfExists, p.TightenIfExists = ex(p.Settings), ex(p.SettingsIfExists), ex(p.TightenIfExists)
	if p.Home != "tmp" {
		p.Home = ExpandPath(p.Home, home)
	}
	return p
}

// ExpandPath expands a leading "~" or "~/" to home; with no home ("")
// it leaves s as it is.
func ExpandPath(s, home string) string {
	switch {
	case home == "":
		return s
	case s == "~":
		return home
	case strings.HasPrefix(s, "~/"):
		return strings.TrimSuffix(home, "/") + s[1:]
	}
	return s
}

// Flags renders p as the sbx run flags it stands for, one flag and its
// value per element pair, in a fixed order. Paths mounted only if they
// exist are rendered with exists reporting which do (nil: all of them);
// Args, which are not flags, are left out (see [Profile.Args]).
func (p Profile) Flags(exists func(string) bool) []string {
	var out []string
	add := func(flag string, vals ...string) {
		for _, v := range vals {
			out = append(out, flag, v)
		}
	}
	if p.Write != nil && *p.Write {
		out = append(out, "--write")
	}
	add("--home", nonEmpty(p.Home)...)
	add("--net", nonEmpty(p.Net)...)
	add("--policy", nonEmpty(p.Policy)...)
	add("--allow-host", p.AllowHosts...)
	add("--env", p.Env...)
	add("--ro", p.ReadOnly...)
	for _, r := range p.ReadOnlyIfExists {
		if exists == nil || exists(r) {
			add("--ro", r)
		}
	}
	add("--rw", p.ReadWrite...)
	add("--mask", p.Mask...)
	add("--protect", p.Protect...)
	add("--settings", p.Settings...)
	for _, s := range append(slices.Clone(p.SettingsIfExists), p.TightenIfExists...) {
		if exists == nil || exists(s) {
			add("--settings", s)
		}
	}
	add("--memory", nonEmpty(p.Memory)...)
	if p.CPUs != nil {
		add("--cpus", strconv.FormatFloat(*p.CPUs, 'g', -1, 64))
	}
	if p.Pids != nil {
		add("--pids", strconv.FormatInt(*p.Pids, 10))
	}
	add("--timeout", nonEmpty(p.Timeout)...)
	if p.Quiet != nil && *p.Quiet {
		out = append(out, "--quiet")
	}
	return out
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// KeyError is a bad value of one key of a profile: Key is its TOML name.
type KeyError struct {
	Key string
	Err error
}

func (e *KeyError) Error() string { return e.Key + ": " + e.Err.Error() }
func (e *KeyError) Unwrap() error { return e.Err }

// Validate checks what a profile can get wrong without the host: names
// of variables, and values of scalars with a fixed set of choices. Its
// error is a *KeyError.
func (p Profile) Validate() error {
	for _, e := range p.Env {
		name, _, _ := strings.Cut(e, "=")
		if !ValidEnvName(name) {
			return &KeyError{"env", fmt.Errorf("%q: want NAME or NAME=VALUE", e)}
		}
	}
	switch p.Net {
	case "", "loopback", "none", "host":
	default:
		return &KeyError{"net", fmt.Errorf("%q: want loopback, none or host", p.Net)}
	}
	switch p.Policy {
	case "", "auto", "landlock", "bpf":
	default:
		return &KeyError{"policy", fmt.Errorf("%q: want auto, landlock or bpf", p.Policy)}
	}
	for key, list := range map[string][]string{"ro": p.ReadOnly, "rw": p.ReadWrite, "ro_if_exists": p.ReadOnlyIfExists,
		"mask": p.Mask, "protect": p.Protect, "settings": p.Settings, "settings_if_exists": p.SettingsIfExists,
		"tighten_settings_if_exists": p.TightenIfExists} {
		if slices.Contains(list, "") {
			return &KeyError{key, errors.New("empty path")}
		}
	}
	return nil
}

// ValidEnvName reports whether k may name an environment variable that
// sbx passes or sets: a letter or underscore, then letters, digits and
// underscores (what a POSIX shell accepts). sbx run's --env checks names
// with it too.
func ValidEnvName(k string) bool {
	if k == "" {
		return false
	}
	for i, r := range k {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
