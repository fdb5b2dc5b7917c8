package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// UsernsSysctl is the sysctl with which AppArmor (Ubuntu 23.10+) takes every
// capability from the user namespaces that unconfined programs create.
const UsernsSysctl = "kernel.apparmor_restrict_unprivileged_userns"

// UsernsRestriction is how AppArmor treats the user namespaces of the
// calling process.
type UsernsRestriction struct {
	// Restricted is set when the sysctl is 1.
	Restricted bool
	// Label is the calling process's AppArmor label ("unconfined" when no
	// profile applies; "sbx (unconfined)" under the shipped profile).
	Label string
}

// Blocks reports whether the restriction will break the sandbox: restricted,
// and no profile (which could grant userns) applies to the process.
func (r UsernsRestriction) Blocks() bool {
	return r.Restricted && (r.Label == "" || r.Label == "unconfined")
}

// ReadUsernsRestriction reads the restriction under procRoot (/proc on the
// host; a fake tree in tests). A missing sysctl (a kernel without the
// AppArmor patch, or AppArmor off) means no restriction.
func ReadUsernsRestriction(procRoot string) UsernsRestriction {
	var r UsernsRestriction
	v, err := os.ReadFile(filepath.Join(procRoot, "sys", strings.ReplaceAll(UsernsSysctl, ".", "/")))
	if err == nil && strings.TrimSpace(string(v)) == "1" {
		r.Restricted = true
	}
	for _, f := range []string{"self/attr/apparmor/current", "self/attr/current"} {
		if l, err := os.ReadFile(filepath.Join(procRoot, f)); err == nil {
			r.Label = strings.TrimSpace(strings.TrimRight(string(l), "\x00"))
			break
		}
	}
	return r
}

// AppArmorProfile is the AppArmor profile that lets the sbx binary at
// binPath create user namespaces with their capabilities (as Ubuntu's own
// profiles for browsers do); contrib/apparmor/sbx is this profile for
// /usr/local/bin/sbx. It confines nothing else: sbx's own kernel policy
// (Landlock, seccomp, namespaces) confines the sandboxed program.
func AppArmorProfile(binPath string) string {
	return `# AppArmor profile for sbx: lets the sbx binary create user namespaces
# where kernel.apparmor_restrict_unprivileged_userns=1 (Ubuntu 23.10+), so
# that an ordinary user can run sandboxes. Install (the path below must be
# the sbx binary's; "sbx doctor --apparmor-profile" prints this profile for
# the binary it is run as):
#   sudo install -m 644 contrib/apparmor/sbx /etc/apparmor.d/sbx
#   sudo apparmor_parser -r /etc/apparmor.d/sbx
abi <abi/4.0>,
include <tunables/global>

profile sbx ` + binPath + ` flags=(unconfined) {
  userns,

  # Site-specific additions and overrides.
  include if exists <local/sbx>
}
`
}

// AppArmorFix is the exact fix for a run refused because of the
// restriction: install the profile for the binary at binPath, which
// "sbx doctor --apparmor-profile" prints.
func AppArmorFix(binPath string) string {
	return fmt.Sprintf("AppArmor restricts unprivileged user namespaces (%s=1) and no AppArmor profile grants them to %s; "+
		"install sbx's profile: %s doctor --apparmor-profile | sudo tee /etc/apparmor.d/sbx >/dev/null && sudo apparmor_parser -r /etc/apparmor.d/sbx "+
		"(see docs/rootless.md)", UsernsSysctl, binPath, binPath)
}
