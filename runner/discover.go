package runner

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/sbx-sandbox/sbx/discover"
	"github.com/sbx-sandbox/sbx/sandbox"
)

// discover looks o.Args[0] up as the sandbox will (see package discover):
// an installation it shows is appended to ro (and o.ro) and env's PATH
// gets its bin first; the hint for a 127 is kept in o.notFound.
func (o *Options) discover(env []string, ro []string) ([]string, []string) {
	name := o.Args[0]
	// sbx exec (which sets DenialsInResult) names its paths in the request
	// and keeps stderr free of hints.
	if strings.Contains(name, "/") || o.DenialsInResult {
		return env, ro
	}
	_, sudo := o.hostLookup("SUDO_UID")
	res := discover.Find(discover.Query{
		Name:      name,
		Env:       env,
		Visible:   o.visibleRoots(ro),
		Cred:      o.cred,
		UID:       o.who.UID,
		Home:      o.who.Home,
		SbxData:   filepath.Join(o.dataHome(o.who), "sbx"),
		Sudo:      sudo && os.Geteuid() == 0,
		PathGiven: o.envFlagSets("PATH"),
		Off:       o.NoDiscover,
		CheckShow: func(p string) error {
			pol, err := newHostPolicy(o.StateDir, o.who.Home)
			if err != nil {
				return err
			}
			return pol.check(hostPath{field: "--ro", path: p})
		},
	})
	o.notFound = res.NotFound
	if len(res.Show) > 0 {
		ro = append(ro, res.Show...)
		o.ro = ro
		o.discoverNote = res.Note
	}
	return res.Env, ro
}

// envFlagSets reports whether --env names the variable k.
func (o *Options) envFlagSets(k string) bool {
	for _, e := range o.Env {
		if n, _, _ := strings.Cut(e, "="); n == k {
			return true
		}
	}
	return false
}

// visibleRoots are the host directories the sandbox shows at their own
// path: the system directories, the workspace and the extra mounts.
func (o *Options) visibleRoots(ro []string) []string {
	var out []string
	for _, e := range sandbox.HostLayout() {
		out = append(out, e.Path)
	}
	out = append(out, o.ws)
	out = append(out, ro...)
	return append(out, o.rw...)
}
