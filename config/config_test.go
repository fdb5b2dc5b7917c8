package config

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestLoadGolden loads every testdata/*.toml and compares the outcome (the
// error, naming the file, line and key; or the profiles read) with its
// .golden file.
func TestLoadGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.toml"))
	if err != nil || len(files) == 0 {
		t.Fatal("no testdata", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			var got string
			cfg, err := Load(f)
			if err != nil {
				got = "error: " + err.Error() + "\n"
			} else {
				got = fmt.Sprintf("defaults: %s\n", strings.Join(cfg.Defaults.Flags(nil), " "))
				for _, name := range sortedKeys(cfg.Profiles) {
					p := cfg.Profiles[name]
					got += fmt.Sprintf("profile %s (%s): %s\n", p.Name, p.Description, strings.Join(p.Flags(nil), " "))
				}
			}
			golden := strings.TrimSuffix(f, ".toml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("got:\n%swant:\n%s", got, want)
			}
		})
	}
}

// TestErrorsNameLineAndKey checks the promise itself on each bad file: the
// message has the file's path, ":LINE:" and the key.
func TestErrorsNameLineAndKey(t *testing.T) {
	for _, tc := range []struct{ file, line, key string }{
		{"unknown-key.toml", ":3:", "defaults.quite"},
		{"unknown-table.toml", ":4:", "profiles.x.extra"},
		{"wrong-type-bool.toml", ":2:", "defaults.quiet"},
		{"wrong-type-string.toml", ":3:", "defaults.memory"},
		{"wrong-type-list.toml", ":2:", "profiles.p.env"},
		{"top-level-key.toml", ":1:", "memory"},
		{"bad-value.toml", ":2:", "defaults.net"},
		{"bad-env-profile.toml", ":7:", "profiles.my-tool.env"},
	} {
		path := filepath.Join("testdata", tc.file)
		_, err := Load(path)
		if err == nil {
			t.Errorf("%s: no error", tc.file)
			continue
		}
		for _, want := range []string{path + tc.line, tc.key} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not name %q", tc.file, err, want)
			}
		}
	}
}

func TestLoadMissing(t *testing.T) {
	cfg, err := Load(filepath.Join(t.TempDir(), "none.toml"))
	if err != nil || cfg.Path != "" || len(cfg.Profiles) != 0 {
		t.Fatalf("Load(missing) = %+v, %v; want empty", cfg, err)
	}
}

func TestPath(t *testing.T) {
	for _, tc := range []struct{ xdg, home, want string }{
		{"", "/home/u", "/home/u/.config/sbx/config.toml"},
		{"/x/conf", "/home/u", "/x/conf/sbx/config.toml"},
		{"rel/conf", "/home/u", "/home/u/.config/sbx/config.toml"}, // XDG: relative is ignored
	} {
		if got := Path(tc.xdg, tc.home); got != tc.want {
			t.Errorf("Path(%q, %q) = %q, want %q", tc.xdg, tc.home, got, tc.want)
		}
	}
}
