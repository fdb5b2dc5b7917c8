package discover

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Where discover looks for a command on the host besides the sandbox's
// PATH: the PATH the user ran sudo with, and the places user installs go.

// hostSearchPath is where the command is looked for on the host: the
// sandbox's PATH, under sudo the invoking user's PATH as far as it can be
// known, then the well-known places of user installations.
func (q *Query) hostSearchPath(sboxPath []string) []string {
	out := append([]string{}, sboxPath...)
	if q.Sudo {
		out = append(out, filepath.SplitList(ancestorPath(q.UID, "/proc", os.Getppid()))...)
	}
	return append(out, wellKnownBins(q.Home)...)
}

// wellKnownBins are the directories user installations put commands in:
// nvm's versions (newest first), ~/.local/bin, ~/.bun/bin, npm's global
// prefix (~/.npm-global, or prefix= of ~/.npmrc).
func wellKnownBins(home string) []string {
	if home == "" || home == "/" {
		return nil
	}
	var out []string
	vers, _ := filepath.Glob(filepath.Join(home, ".nvm", "versions", "node", "v*"))
	sort.Slice(vers, func(i, j int) bool { return versionLess(filepath.Base(vers[j]), filepath.Base(vers[i])) })
	for _, v := range vers {
		out = append(out, filepath.Join(v, "bin"))
	}
	out = append(out,
		filepath.Join(home, ".local", "bin"),
		filepath.Join(home, ".bun", "bin"),
		filepath.Join(home, ".npm-global", "bin"),
	)
	if p := npmrcPrefix(filepath.Join(home, ".npmrc"), home); p != "" {
		out = append(out, filepath.Join(p, "bin"))
	}
	return out
}

// versionLess orders "v20.1.0" before "v22.0.0" (numerically per part).
func versionLess(a, b string) bool {
	pa, pb := strings.Split(strings.TrimPrefix(a, "v"), "."), strings.Split(strings.TrimPrefix(b, "v"), ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		x, ex := strconv.Atoi(pa[i])
		y, ey := strconv.Atoi(pb[i])
		if ex != nil || ey != nil {
			if pa[i] != pb[i] {
				return pa[i] < pb[i]
			}
			continue
		}
		if x != y {
			return x < y
		}
	}
	return len(pa) < len(pb)
}

// npmrcPrefix reads prefix= of an .npmrc ("~/" expanded), or "".
func npmrcPrefix(file, home string) string {
	data, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok || strings.TrimSpace(k) != "prefix" {
			continue
		}
		v = strings.Trim(strings.TrimSpace(v), `"'`)
		if rest, ok := strings.CutPrefix(v, "~/"); ok {
			v = filepath.Join(home, rest)
		}
		if filepath.IsAbs(v) {
			return filepath.Clean(v)
		}
	}
	return ""
}

// ancestorPath is the PATH of the nearest ancestor of pid (sbx's parent,
// under sudo sudo itself) whose real uid is uid: the environment the user
// started sudo from, as far as /proc tells it (a shell's environ is the
// one it started with). "" when none is found.
func ancestorPath(uid int, proc string, pid int) string {
	for range 8 {
		if pid <= 1 {
			return ""
		}
		status, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(pid), "status"))
		if err != nil {
			return ""
		}
		ruid, ppid := -1, 0
		for _, line := range strings.Split(string(status), "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) >= 2 && f[0] == "Uid:":
				ruid, _ = strconv.Atoi(f[1])
			case len(f) >= 2 && f[0] == "PPid:":
				ppid, _ = strconv.Atoi(f[1])
			}
		}
		if ruid == uid {
			environ, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(pid), "environ"))
			if err != nil {
				return ""
			}
			for _, kv := range bytes.Split(environ, []byte{0}) {
				if v, ok := bytes.CutPrefix(kv, []byte("PATH=")); ok {
					return string(v)
				}
			}
			return ""
		}
		pid = ppid
	}
	return ""
}
