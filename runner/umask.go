package runner

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// callerUmask is sbx's own umask, passed to the program so that the files
// it creates get the modes they would get outside (with a umask of 077,
// 0600, not libcontainer's 0644). It is read from /proc/self/status
// (Linux 4.7+), which changes nothing, rather than with umask(2), which
// would set it for every thread for a moment; nil (0022) when unknown.
func callerUmask() *uint32 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Umask:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			if err != nil || m > 0o777 {
				return nil
			}
			u := uint32(m)
			return &u
		}
	}
	return nil
}
