package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"strings"

	"github.com/sbx-sandbox/sbx/policy"
)

const featuresUsage = `Usage: sbx features [--json]

Prints what this build of sbx knows: its version, the file and network
tiers it can use, and every command with its flags (names, second names,
value kinds, defaults and usage). With --json, as one JSON object for
programs that drive sbx (an agent's extension asks it which flags exist
instead of reading the help). What this host can enforce is sbx doctor's.
`

// features is "sbx features --json": the command table as data.
type features struct {
	Version string `json:"version"`
	// Policies are the values of --policy.
	Policies []string `json:"policies"`
	// FileTiers and NetTiers are the tiers this build can use (named as
	// sbx doctor prints them), whether or not this host has them.
	FileTiers []string          `json:"fileTiers"`
	NetTiers  []string          `json:"netTiers"`
	Commands  []featuresCommand `json:"commands"`
}

type featuresCommand struct {
	Name         string         `json:"name"`
	Synopsis     string         `json:"synopsis"`
	Summary      string         `json:"summary"`
	TakesCommand bool           `json:"takesCommand,omitempty"`
	Flags        []featuresFlag `json:"flags"`
}

type featuresFlag struct {
	Name    string   `json:"name"`
	Aliases []string `json:"aliases,omitempty"`
	// Kind is bool, string, list (repeatable), duration, number or int.
	Kind     string   `json:"kind"`
	Default  string   `json:"default"`
	Arg      string   `json:"arg,omitempty"` // the placeholder: "DIR"
	Usage    string   `json:"usage"`
	Values   []string `json:"values,omitempty"`
	Complete string   `json:"complete,omitempty"` // "dir" or "file"
}

// buildFeatures renders the command table (the visible commands' own
// flags; -h/--help is every command's and not listed).
func buildFeatures() (features, error) {
	all := policy.Decision{BPFLSM: true, Landlock: true, CgroupWall: true}
	rootless := policy.Decision{Rootless: true, Landlock: true}
	f := features{
		Version:   version,
		Policies:  []string{string(policy.DemandAuto), string(policy.DemandLandlock), string(policy.DemandBPF)},
		FileTiers: all.FileTiers(),
		NetTiers:  append(all.NetTiers(), rootless.NetTiers()[len(rootless.NetTiers())-1]),
	}
	doc, err := collectDocs()
	if err != nil {
		return f, err
	}
	for _, c := range doc.Commands {
		fc := featuresCommand{Name: c.Name, Synopsis: c.Synopsis, Summary: c.Summary, TakesCommand: c.TakesCommand, Flags: []featuresFlag{}}
		for _, d := range c.Flags {
			if isHelpFlag(d.Name) || (len(d.Name) == 1 && d.Alias != "") {
				continue
			}
			ff := featuresFlag{Name: d.Name, Kind: d.Kind, Default: d.Default, Usage: d.Text, Values: d.Values, Complete: d.Completes()}
			if d.Kind != "bool" {
				ff.Arg = d.Arg
			}
			if d.Alias != "" {
				ff.Aliases = []string{d.Alias}
			}
			fc.Flags = append(fc.Flags, ff)
		}
		f.Commands = append(f.Commands, fc)
	}
	return f, nil
}

// featuresFlags registers sbx features's flags on fs.
func featuresFlags(fs *flag.FlagSet) action {
	var asJSON bool
	fs.BoolVar(&asJSON, "json", false, "print one JSON object instead of text")
	return func(args []string, s streams) int {
		if len(args) > 0 {
			return fail(s, fmt.Errorf("features: unexpected argument %q (see sbx features --help)", args[0]))
		}
		f, err := buildFeatures()
		if err != nil {
			return fail(s, fmt.Errorf("features: %w", err))
		}
		if asJSON {
			enc := json.NewEncoder(s.out)
			enc.SetIndent("", "  ")
			if err := enc.Encode(f); err != nil {
				return fail(s, fmt.Errorf("features: write: %w", err))
			}
			return 0
		}
		fmt.Fprintf(s.out, "version: %s\n", f.Version)
		fmt.Fprintf(s.out, "policies: %s\n", strings.Join(f.Policies, ", "))
		fmt.Fprintf(s.out, "file tiers: %s\n", strings.Join(f.FileTiers, ", "))
		fmt.Fprintf(s.out, "network tiers: %s\n", strings.Join(f.NetTiers, ", "))
		for _, c := range f.Commands {
			names := []string{"(none)"}
			if len(c.Flags) > 0 {
				names = names[:0]
			}
			for _, fl := range c.Flags {
				names = append(names, dash(fl.Name))
			}
			fmt.Fprintf(s.out, "%s: %s\n", c.Name, strings.Join(names, " "))
		}
		return 0
	}
}
