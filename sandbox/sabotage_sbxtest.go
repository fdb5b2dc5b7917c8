//go:build sbxtest

package sandbox

import (
	"os"
	"strings"

	"github.com/opencontainers/runc/libcontainer/configs"
)

// SabotageEnv names what a test build (tag sbxtest) of sbx breaks on
// purpose, comma-separated: "netwall" puts the sandbox in a cgroup outside
// the network wall's parent, "landlock" grants the whole tree to the
// Landlock policy. The canaries must then refuse to run the program.
const SabotageEnv = "SBX_TEST_SABOTAGE"

func sabotage(cfg *configs.Config, shim *ShimConfig) {
	for _, what := range strings.Split(os.Getenv(SabotageEnv), ",") {
		switch what {
		case "netwall":
			cfg.Cgroups.Path = strings.Replace(cfg.Cgroups.Path, "/"+CgroupParent+"/", "/"+CgroupParent+"-sabotaged/", 1)
		case "landlock":
			if shim.Landlock != nil {
				shim.Landlock.ReadExec = append(shim.Landlock.ReadExec, "/")
			}
		}
	}
}
