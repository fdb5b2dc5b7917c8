package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/sbx-sandbox/sbx/profile"
)

const profileUsage = `Usage: sbx profile list
       sbx profile show NAME

Profiles are named sets of sbx run flags for a program: "sbx run -- claude"
applies the profile "claude" (the command's basename; --profile NAME picks
another, --no-profile none). list prints the built-in profiles and your own
(from the config file, ${XDG_CONFIG_HOME:-~/.config}/sbx/config.toml, under
[profiles.NAME]; yours replace a built-in of the same name). show prints the
flags a profile stands for, with your home and the files that exist now, and
the arguments it puts after the command's name.
`

// profileCmdFlags: sbx profile takes no flags but -h/--help.
func profileCmdFlags(*flag.FlagSet) action { return cmdProfile }

// cmdProfile is "sbx profile list|show NAME" (args after the flags).
func cmdProfile(args []string, s streams) int {
	env, err := newProfileEnv(s, "")
	if err != nil {
		return fail(s, fmt.Errorf("profile: %w", err))
	}
	cfg, err := env.loadConfig()
	if err != nil {
		return fail(s, err)
	}
	switch {
	case len(args) == 1 && args[0] == "list":
		for _, p := range allProfiles(cfg) {
			fmt.Fprintf(s.out, "%-10s %s\n", p.Name, p.Description)
		}
		return 0
	case len(args) == 2 && args[0] == "show":
		p, ok := lookupProfile(cfg, args[1])
		if !ok {
			return fail(s, fmt.Errorf("profile: no profile %q (see sbx profile list)", args[1]))
		}
		p = p.Expand(env.home)
		fmt.Fprintf(s.out, "# %s: %s\n", p.Name, p.Description)
		fmt.Fprintf(s.out, "sbx run %s -- %s", shellJoin(p.Flags(env.exists)), p.Name)
		if len(p.Args) > 0 {
			fmt.Fprintf(s.out, " %s", shellJoin(p.Args))
		}
		fmt.Fprintln(s.out, " ...")
		for _, r := range p.ReadOnlyIfExists {
			if !env.exists(r) {
				fmt.Fprintf(s.out, "# not there now, left out: --ro %s\n", r)
			}
		}
		for _, f := range append(append([]string{}, p.SettingsIfExists...), p.TightenIfExists...) {
			if !env.exists(f) {
				fmt.Fprintf(s.out, "# not there now, left out: --settings %s\n", f)
			}
		}
		return 0
	}
	return fail(s, errors.New("profile: want list or show NAME (see sbx profile --help)"))
}

// shellJoin quotes each word for a POSIX shell where needed.
func shellJoin(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		if w != "" && strings.IndexFunc(w, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,~*", r))
		}) < 0 {
			out[i] = w
			continue
		}
		out[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}

// exists reports whether a host path a profile names exists (relative:
// to the working directory), looked up as present does.
func (e *profileEnv) exists(p string) bool {
	_, ok := e.present(p)
	return ok
}

// lookupProfile finds a profile by name: the user's first, then the
// built-ins.
func lookupProfile(cfg configFile, name string) (profile.Profile, bool) {
	if p, ok := cfg.Profiles[name]; ok {
		return p, true
	}
	return profile.Builtin(name)
}

// allProfiles returns the built-ins and the user's, a user's replacing a
// built-in of its name, sorted by name.
func allProfiles(cfg configFile) []profile.Profile {
	var out []profile.Profile
	for _, b := range profile.Builtins() {
		if _, mine := cfg.Profiles[b.Name]; !mine {
			out = append(out, b)
		}
	}
	for _, p := range cfg.Profiles {
		out = append(out, p)
	}
	sortProfiles(out)
	return out
}
