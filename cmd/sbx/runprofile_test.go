package main

import (
	"os"
	"os/user"
	"path/filepath"
	"testing"
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
