package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/sbx-sandbox/sbx/runner"
	"github.com/sbx-sandbox/sbx/sandbox"
)

// canaryTimeout bounds doctor's canary run (a slow VM takes seconds).
const canaryTimeout = 60 * time.Second

// canaryRun runs "true" in a real sandbox built exactly as "sbx run
// --policy demand" would build one here (auto: every tier the host offers;
// the default limits, a throwaway home, an empty read-only workspace), so that the
// shim's canaries prove each tier in place. It returns a one-line account
// of the run and nil only when the sandbox ran and "true" exited 0: the
// doctor's verdict rests on this, not on the feature probes, which can
// pass where a run fails (libcontainer's own setup refused by a tier, a
// cgroup layout the probes do not see).
func canaryRun(demand runner.Policy) (string, error) {
	ws, err := os.MkdirTemp("", "sbx-doctor-")
	if err != nil {
		return "", fmt.Errorf("canary run: create workspace: %w", err)
	}
	defer os.RemoveAll(ws)
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return "", fmt.Errorf("canary run: %w", err)
	}
	defer devnull.Close()
	var out, log bytes.Buffer
	o := runner.Options{
		Args:      []string{"true"},
		Workspace: ws,
		Cwd:       ws,
		Home:      runner.HomeTmp,
		Policy:    demand,
		Limits:    sandbox.Limits{MemoryBytes: 512 << 20, CPUs: runner.DefaultCPUs, Pids: runner.DefaultPids},
		Timeout:   canaryTimeout,
		Stdin:     devnull,
		Stdout:    &out,
		Stderr:    &out,
		Log:       &log,
	}
	start := time.Now()
	res, err := runner.Run(context.Background(), o)
	took := time.Since(start).Round(time.Millisecond)
	detail := strings.TrimSpace(strings.Join(strings.Fields(out.String()+" "+log.String()), " "))
	switch {
	case err != nil:
		if detail != "" {
			return "", fmt.Errorf("canary run: %w (%s)", err, detail)
		}
		return "", fmt.Errorf("canary run: %w", err)
	case res.TimedOut:
		return "", fmt.Errorf("canary run: \"true\" did not finish within %v", canaryTimeout)
	case res.ExitCode != 0:
		if detail == "" {
			detail = "no message"
		}
		return "", fmt.Errorf("canary run: \"true\" exited %d: %s", res.ExitCode, detail)
	}
	return fmt.Sprintf("\"true\" ran in a sandbox with the tiers above and passed their canaries (%v)", took), nil
}
