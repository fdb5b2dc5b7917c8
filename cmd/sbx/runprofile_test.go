package main

import (
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/profile"
)

// TestProfileEnvSudo: under sudo the config is SUDO_UID's, from its passwd
// home, whatever root's XDG_CONFIG_HOME says; without sudo, the caller's.
func TestProfileEnvSudo(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("the sudo case needs uid 0")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody:", err)
	}
	t.Setenv("XDG_CONFIG_HOME", "/root/.xdg")
	t.Setenv("SUDO_UID", nobody.Uid)
	e, err := newProfileEnv(streams{}, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(nobody.HomeDir, ".config", "sbx", "config.toml"); e.config != want || e.home != nobody.HomeDir {
		t.Errorf("under sudo: config %s, home %s; want %s", e.config, e.home, want)
	}
	os.Unsetenv("SUDO_UID")
	t.Setenv("HOME", "/home/me")
	if e, err = newProfileEnv(streams{}, ""); err != nil || e.config != "/root/.xdg/sbx/config.toml" || e.home != "/home/me" {
		t.Errorf("without sudo: %+v %v", e, err)
	}
}

// TestProfileEnvNoPasswd: a SUDO_UID without a passwd entry has no home:
// no config is read and a profile's "~/" paths are left out, never
// expanded against "/" or the working directory.
func TestProfileEnvNoPasswd(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("the sudo case needs uid 0")
	}
	t.Setenv("SUDO_UID", "4000123")
	var stderr strings.Builder
	e, err := newProfileEnv(streams{err: &stderr}, "")
	if err != nil || e.home != "" || e.config != "" {
		t.Fatalf("env %+v, %v; want no home and no config", e, err)
	}
	var pf profileFlags
	l, err := pf.resolveRun(e, []string{"claude"}, profile.Profile{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(l.eff.ReadOnly, l.eff.Settings...) {
		if strings.Contains(p, ".claude") {
			t.Errorf("a home path of the profile stayed: %s", p)
		}
	}
	if !slices.Contains(l.eff.Env, "IS_SANDBOX=1") {
		t.Errorf("the rest of the profile was lost: %+v", l.eff)
	}
}
