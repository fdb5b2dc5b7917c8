package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sbx-sandbox/sbx/config"
	"github.com/sbx-sandbox/sbx/gate"
	"github.com/sbx-sandbox/sbx/hostfs"
	"github.com/sbx-sandbox/sbx/invoker"
	"github.com/sbx-sandbox/sbx/policysrc"
	"github.com/sbx-sandbox/sbx/profile"
	"github.com/sbx-sandbox/sbx/runner"
	"github.com/sbx-sandbox/sbx/settings"
)

// configFile is the config as the CLI uses it.
type configFile = config.File

// profileFlags are sbx run's flags of profiles, the config file, srt
// settings, masks and --quiet (issues #18 and #20).
type profileFlags struct {
	name      string
	none      bool
	settings  listFlag
	tighten   listFlag
	masks     listFlag
	quiet     bool
	protected listFlag
}

func (pf *profileFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&pf.quiet, "quiet", false, "print no \"sbx: denied ...\" lines (--violations and the count at the end stay)")
	fs.Var(&pf.masks, "mask", "`PATH` show PATH (file or directory) empty and unreadable: the program gets EACCES, reported as a denial (repeatable)")
	fs.Var(&pf.protected, "protect", "`PATH` keep PATH read-only inside the writable trees, as the protected entries (repeatable)")
	fs.StringVar(&pf.name, "profile", "", "`NAME` apply the profile NAME (sbx profile list); without it, the profile named as the command's basename applies, if any (said on stderr)")
	fs.BoolVar(&pf.none, "no-profile", false, "apply no profile")
	fs.Var(&pf.settings, "settings", "`FILE` read Anthropic sandbox-runtime settings (JSON: network.allowedDomains, filesystem.denyRead, allowWrite, denyWrite) as flags; a key sbx cannot honour is an error; only the first file that no sandbox could have written (none in the workspace, a writable path, an sbx home, or writable by others) may allow, every other only tighten (repeatable)")
	fs.Var(&pf.tighten, "tighten-settings", "`FILE` read settings as --settings does, that may only tighten what the others allow (a project's own file; repeatable)")
}

// profileEnv is where profiles are resolved: the invoking user's home
// (under sudo, SUDO_UID's), the working directory and the workspace.
type profileEnv struct {
	s         streams
	home      string
	cwd       string
	workspace string // resolved; "" when unknown
	config    string // the config file's path
	// cred is the invoking user's (under sudo, SUDO_UID's): the config
	// and settings files are read with it, never with root's rights.
	cred hostfs.Cred
}

func newProfileEnv(s streams, workspace string) (*profileEnv, error) {
	e := &profileEnv{s: s, cred: invoker.Cred()}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("working directory: %w", err)
	}
	e.cwd = cwd
	sudoUID, sudo := os.LookupEnv("SUDO_UID")
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if sudo && os.Getuid() == 0 {
		if u, err := user.LookupId(sudoUID); err == nil {
			e.home = u.HomeDir
		}
		// Without a passwd entry there is no home: no config, and no
		// "~/" path of a profile (see resolveRun).
		xdg = "" // root's environment, not the user's
	} else if h := os.Getenv("HOME"); filepath.IsAbs(h) {
		e.home = filepath.Clean(h)
	} else if u, err := user.Current(); err == nil {
		e.home = u.HomeDir
	}
	if workspace == "" {
		workspace = cwd
	}
	if !filepath.IsAbs(workspace) {
		workspace = filepath.Join(cwd, workspace)
	}
	if r, err := filepath.EvalSymlinks(workspace); err == nil {
		e.workspace = r
	}
	if filepath.IsAbs(e.home) {
		e.config = config.Path(xdg, e.home)
	}
	return e, nil
}

// abs makes p absolute against the working directory.
func (e *profileEnv) abs(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(e.cwd, p)
}

// loadConfig reads the user's config file for a command that runs no
// sandbox (sbx profile).
func (e *profileEnv) loadConfig() (configFile, error) {
	c, err := e.checker(nil, "")
	if err != nil {
		return configFile{}, err
	}
	return e.loadConfigWith(c)
}

// loadConfigWith reads the user's config file, unless it lies inside the
// workspace: a repository must not be able to loosen its own sandbox.
// Anything else a sandbox could have written (see package policysrc: an
// sbx home, a tree an earlier run could write while it changed, a file
// or directory others may write) is refused: a config can only widen.
func (e *profileEnv) loadConfigWith(c policysrc.Checker) (configFile, error) {
	path := e.config
	if path == "" {
		return configFile{}, nil // no home
	}
	if e.workspace != "" {
		dir, err := filepath.EvalSymlinks(filepath.Dir(path))
		if err == nil && (dir == e.workspace || strings.HasPrefix(dir, strings.TrimSuffix(e.workspace, "/")+"/")) {
			fmt.Fprintf(e.s.err, "sbx: not reading %s: it lies inside the workspace, and a workspace must not configure its own sandbox\n", path)
			return configFile{}, nil
		}
	}
	// Opened with the user's rights; the last component is not
	// followed, and what is checked is what is read.
	var cfg configFile
	err := e.cred.Do(func() error {
		f, why, err := c.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("config %s: %w", path, err)
		}
		defer f.Close()
		if why != "" {
			return &gate.RejectError{Field: "config", Reason: fmt.Sprintf("config %s: not reading it: %s, so a sandbox could have written it (check it, then re-create it outside any sandbox; or give what you need as flags)", path, why)}
		}
		cfg, err = config.Read(path, f)
		return err
	})
	return cfg, err
}

// sortProfiles sorts by name.
func sortProfiles(ps []profile.Profile) {
	slices.SortFunc(ps, func(a, b profile.Profile) int { return strings.Compare(a.Name, b.Name) })
}

// runLayers is what the profile machinery decides for one sbx run.
type runLayers struct {
	eff     profile.Profile // every layer merged, paths expanded
	applied string          // the profile's name, "" for none
	args    []string        // the command with the profile's Args
	// flagRW are the --rw paths of the command line: the only ones
	// that open a protected entry (runner.Options.PolicyReadWrite).
	flagRW []string
	// explicit names the limits the user asked for (flags, config or
	// profile), not the built-in host-sized defaults.
	explicit []string
}

// resolveRun merges built-in defaults < config defaults < profile <
// settings files < flags for a run of args. flags is the command line's
// layer (only what was given); set reports which flags were given.
func (pf *profileFlags) resolveRun(e *profileEnv, args []string, flags profile.Profile) (runLayers, error) {
	var out runLayers
	// The config is read even inside a writable path of this run (it is
	// kept read-only then, see guardInputs); what an earlier run could
	// have written is refused.
	check, err := e.checker(nil, flags.Home)
	if err != nil {
		return out, err
	}
	cfg, err := e.loadConfigWith(check)
	if err != nil {
		return out, err
	}
	var prof profile.Profile
	switch {
	case pf.none && pf.name != "":
		return out, errors.New("--profile and --no-profile: choose one")
	case pf.none:
	case pf.name != "":
		p, ok := lookupProfile(cfg, pf.name)
		if !ok {
			return out, fmt.Errorf("--profile %s: no such profile (see sbx profile list)", pf.name)
		}
		prof, out.applied = p, p.Name
	default:
		if p, ok := lookupProfile(cfg, filepath.Base(args[0])); ok {
			prof, out.applied = p, p.Name
			fmt.Fprintf(e.s.err, "sbx: profile %s applied (sbx profile show %s; --no-profile to turn it off)\n", p.Name, p.Name)
		}
	}
	prof = prof.Expand(e.home)
	if !filepath.IsAbs(e.home) {
		prof = dropHomePaths(prof)
	}
	prof.ReadOnly, prof.ReadWrite = e.mountable(prof.ReadOnly), e.mountable(prof.ReadWrite)
	builtin := profile.Profile{Memory: formatSize(hostMemory())}
	cpus, pids := hostCPUs(), int64(runDefaultPids)
	builtin.CPUs, builtin.Pids = &cpus, &pids
	defaults := cfg.Defaults.Expand(e.home)
	defaults.ReadOnly, defaults.ReadWrite = e.mountable(defaults.ReadOnly), e.mountable(defaults.ReadWrite)

	// Settings files: the profile's, then --settings. The first one that
	// no sandbox could have written may allow; every other only tightens
	// (see loadSettings). A path a profile names is looked up as the user,
	// never through a symlink (see present).
	var files []string
	files = append(files, prof.Settings...)
	files = append(files, defaults.Settings...)
	for _, f := range append(slices.Clone(defaults.SettingsIfExists), prof.SettingsIfExists...) {
		if r, ok := e.present(f); ok {
			files = append(files, r)
		}
	}
	files = append(files, pf.settings...)
	var tighten []string
	for _, f := range append(slices.Clone(defaults.TightenIfExists), prof.TightenIfExists...) {
		if r, ok := e.present(f); ok {
			tighten = append(tighten, r)
		}
	}
	tighten = append(tighten, pf.tighten...)
	home := pick(flags.Home, prof.Home, defaults.Home)
	check, err = e.checker(slices.Concat(flags.ReadWrite, prof.ReadWrite, defaults.ReadWrite), home)
	if err != nil {
		return out, err
	}
	set, err := e.loadSettings(check, files, tighten)
	if err != nil {
		return out, err
	}
	layers := []profile.Profile{builtin, defaults, prof, set, flags}
	eff := profile.Merge(layers...)
	set.Mask, set.Protect = e.settleDenials(set.Mask, set.Protect, e.writableRoots(eff), eff.Quiet != nil && *eff.Quiet)
	layers[3] = set
	eff = profile.Merge(layers...)
	for _, l := range layers[1:] {
		for flag, given := range map[string]bool{"--memory": l.Memory != "", "--cpus": l.CPUs != nil, "--pids": l.Pids != nil} {
			if given && !slices.Contains(out.explicit, flag) {
				out.explicit = append(out.explicit, flag)
			}
		}
	}
	slices.Sort(out.explicit)
	// Files of a profile that do not exist are left out.
	for _, r := range eff.ReadOnlyIfExists {
		if real, ok := e.present(r); ok {
			eff.ReadOnly = append(eff.ReadOnly, real)
		}
	}
	eff.ReadOnlyIfExists = nil
	eff.Protect = append(eff.Protect, e.guardInputs(eff, flags.ReadWrite, files)...)
	out.eff = eff
	out.flagRW = flags.ReadWrite
	out.args = args
	if len(prof.Args) > 0 {
		out.args = append(append([]string{args[0]}, prof.Args...), args[1:]...)
	}
	return out, nil
}

// pick returns the first non-empty string.
func pick(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// writableRoots are the trees of eff a sandbox may write, resolved as the
// invoking user: the workspace with --write and the --rw paths.
func (e *profileEnv) writableRoots(eff profile.Profile) []string {
	var out []string
	if eff.Write != nil && *eff.Write && e.workspace != "" {
		out = append(out, e.workspace)
	}
	_ = e.cred.Do(func() error {
		for _, p := range eff.ReadWrite {
			if r, err := filepath.EvalSymlinks(e.abs(p)); err == nil {
				out = append(out, r)
			}
		}
		return nil
	})
	return out
}

// guardInputs returns the policy inputs that lie strictly inside a
// writable tree of the run (the config file's directory, the settings
// files read), to be kept read-only: the run must not rewrite what
// configures the next one. A path that a --rw flag names itself stays
// writable: the user asked for it.
func (e *profileEnv) guardInputs(eff profile.Profile, flagRW, files []string) []string {
	roots := e.writableRoots(eff)
	var named []string
	var out []string
	_ = e.cred.Do(func() error {
		for _, p := range flagRW {
			if r, err := filepath.EvalSymlinks(e.abs(p)); err == nil {
				named = append(named, r)
			}
		}
		var inputs []string
		if e.config != "" {
			inputs = append(inputs, filepath.Dir(e.config))
		}
		for _, f := range files {
			inputs = append(inputs, e.abs(f))
		}
		for _, in := range inputs {
			r, err := filepath.EvalSymlinks(in)
			if err != nil || slices.Contains(named, r) || slices.Contains(out, r) {
				continue
			}
			for _, root := range roots {
				if r != root && hostfs.Within(r, root) {
					out = append(out, r)
					break
				}
			}
		}
		return nil
	})
	return out
}

// loadSettings reads the srt settings files and maps them to a profile
// layer. The first of files that no sandbox could have written (see
// package policysrc) may allow; every other file of files and tighten
// may only tighten what it allows ([settings.Merge]), whatever its place.
func (e *profileEnv) loadSettings(c policysrc.Checker, files, tighten []string) (profile.Profile, error) {
	var out profile.Profile
	if len(files)+len(tighten) == 0 {
		return out, nil
	}
	env := settings.Env{Home: e.home, Cwd: e.cwd}
	var read []policyFile
	base := -1
	for i, f := range append(slices.Clone(files), tighten...) {
		pf, err := e.readSettings(c, f, env)
		if err != nil {
			return out, err
		}
		if i >= len(files) && pf.why == "" {
			pf.why = "it is a project's file (--tighten-settings, or a profile's)"
		}
		if base < 0 && pf.why == "" {
			base = i
		}
		read = append(read, pf)
	}
	var pol settings.Policy
	if base >= 0 {
		pol = read[base].pol
	}
	for i, pf := range read {
		if i == base {
			continue
		}
		err := e.cred.Do(func() error {
			var err error
			pol, err = settings.Merge(pol, pf.pol)
			return err
		})
		if err != nil {
			reason := fmt.Sprintf("%v: %s", err, pf.why)
			if pf.why == "" {
				reason = fmt.Sprintf("%v (only the first settings file that no sandbox could have written may allow)", err)
			}
			return out, &gate.RejectError{Field: "settings", Reason: reason}
		}
	}
	out.AllowHosts = pol.AllowHosts
	out.Mask = pol.Mask
	out.Protect = pol.Protect
	// Resolved here, as the user: the run refuses one that resolves to
	// another path by then (see runner.Options.PolicyReadWrite).
	_ = e.cred.Do(func() error {
		for i, w := range pol.Writable {
			if r, err := filepath.EvalSymlinks(w); err == nil {
				pol.Writable[i] = r
			}
		}
		return nil
	})
	for _, w := range pol.Writable {
		if w == e.workspace {
			t := true
			out.Write = &t
			continue
		}
		out.ReadWrite = append(out.ReadWrite, w)
	}
	return out, nil
}

// flagLayer is the command line as a profile layer: only what was given.
func flagLayer(fs *flag.FlagSet, o *runner.Options, pf *profileFlags, v runFlagValues) profile.Profile {
	var l profile.Profile
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "w", "write":
			t := true
			l.Write = &t
		case "home":
			l.Home = o.Home
		case "net":
			l.Net = *v.net
		case "policy":
			l.Policy = *v.policy
		case "memory":
			l.Memory = *v.memory
		case "cpus":
			c := *v.cpus
			l.CPUs = &c
		case "pids":
			p := *v.pids
			l.Pids = &p
		case "timeout":
			l.Timeout = o.Timeout.String()
		case "quiet":
			q := pf.quiet
			l.Quiet = &q
		}
	})
	l.AllowHosts, l.Env = *v.allowHosts, *v.env
	l.ReadOnly, l.ReadWrite, l.Mask, l.Protect = *v.ro, *v.rw, *v.masks, *v.protect
	return l
}

// runFlagValues point at cmdRun's flag variables (those not in
// runner.Options).
type runFlagValues struct {
	net, policy, memory     *string
	cpus                    *float64
	pids                    *int64
	allowHosts, env, ro, rw *listFlag
	masks, protect          *listFlag
}

// apply resolves the profile, the config and the settings files of a run
// of o.Args against the command line (fs, parsed) and writes the result
// into o and v's variables. It returns the limits asked for explicitly.
func (pf *profileFlags) apply(fs *flag.FlagSet, s streams, o *runner.Options, v runFlagValues) ([]string, error) {
	penv, err := newProfileEnv(s, o.Workspace)
	if err != nil {
		return nil, err
	}
	layers, err := pf.resolveRun(penv, o.Args, flagLayer(fs, o, pf, v))
	if err != nil {
		return nil, err
	}
	eff := layers.eff // the config's values were checked when it was read
	o.Args = layers.args
	if eff.Write != nil {
		o.Write = *eff.Write
	}
	// A flag given keeps its own value, even an empty one (which its own
	// check then refuses, as without profiles); the others take the
	// merged one.
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if !given["home"] {
		o.Home = eff.Home
	}
	if !given["net"] && eff.Net != "" {
		*v.net = eff.Net
	}
	if !given["policy"] && eff.Policy != "" {
		*v.policy = eff.Policy
	}
	if !given["memory"] {
		*v.memory = eff.Memory
	}
	*v.cpus, *v.pids = *eff.CPUs, *eff.Pids
	if eff.Timeout != "" && !given["timeout"] {
		if o.Timeout, err = time.ParseDuration(eff.Timeout); err != nil {
			return nil, fmt.Errorf("timeout %q: %v", eff.Timeout, err)
		}
	}
	*v.allowHosts, *v.env, *v.ro = eff.AllowHosts, eff.Env, eff.ReadOnly
	*v.rw = layers.flagRW
	o.PolicyReadWrite = slices.DeleteFunc(slices.Clone(eff.ReadWrite), func(p string) bool { return slices.Contains(layers.flagRW, p) })
	o.Masks, o.Protect = eff.Mask, eff.Protect
	o.Quiet = eff.Quiet != nil && *eff.Quiet
	return layers.explicit, nil
}

// dropHomePaths leaves out the "~/" paths of a profile when the invoking
// user has no home to expand them in (a uid without a passwd entry): they
// name login files and settings, which such a user has none of.
func dropHomePaths(p profile.Profile) profile.Profile {
	drop := func(list []string) []string {
		return slices.DeleteFunc(slices.Clone(list), func(s string) bool { return strings.HasPrefix(s, "~") })
	}
	p.ReadOnly, p.ReadWrite, p.ReadOnlyIfExists = drop(p.ReadOnly), drop(p.ReadWrite), drop(p.ReadOnlyIfExists)
	p.Mask, p.Protect = drop(p.Mask), drop(p.Protect)
	p.Settings, p.SettingsIfExists, p.TightenIfExists = drop(p.Settings), drop(p.SettingsIfExists), drop(p.TightenIfExists)
	return p
}
