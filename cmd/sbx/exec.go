package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/execrun"
	"github.com/sbx-sandbox/sbx/gate"
	"github.com/sbx-sandbox/sbx/invoker"
)

const execUsageText = `Usage: sbx exec [--request FILE] [--ro-root DIR]... [--allow-stage] < req.json

Runs one command described by a JSON request and writes one JSON result on
stdout (nothing else is written there). This is the native form of the
container variant's sandbox tool, for harnesses that hand a model a "run a
command" tool.

Request (JSON Schema: gate/request.schema.json):
  {"command": ["ls", "-la"],        1..128 non-empty strings, no shell wrappers
   "workspace": "/abs/dir",          existing directory
   "cwd": "sub/dir",                 optional, relative, must stay inside
   "write": false, "confirmWrite": false,   writable workspace needs both
   "allowShell": false, "confirmShell": false,  sh/bash/... need both
   "timeoutMs": 120000,              optional, at most 120000
   "ro": ["/opt/agent"],             optional, up to 16 absolute existing paths
                                     shown read-only, each inside a --ro-root
                                     (never the home or above)
   "stage": false}                   stage host paths named in the command
                                     (an agent's --session ...): off unless
                                     true, refused without --allow-stage

The flags are the harness's, never the model's: --ro-root DIR lets requests
name ro paths inside DIR (the directory itself or below it, compared by
device and inode; a path through a symbolic link is refused), and
--allow-stage lets them ask for staging. Without them a request naming ro
paths or "stage": true is rejected.

Result (JSON Schema: gate/result.schema.json):
  {"status": "exited"|"timed_out"|"failed"|"rejected"|"cancelled",
   "exitCode": 0 (null unless exited), "output": "...", "truncated": false,
   "violations": [...], "violationsDropped": 0 (only when some were
   dropped past 256), "durationMs": 12, "error": "...", "cleanupError": "...",
   "copyBackError": "..." (staged files that could not be copied back)}

Fixed limits: 512 MiB memory, 1 CPU, 256 processes, no network, throwaway
home, workspace read-only unless write+confirmWrite. Output is stdout then
stderr (concatenated, not interleaved), escapes stripped, control characters
replaced, at most 12,000 bytes (the tail, with a truncation notice).
SIGINT/SIGTERM cancel the run; a result with status "cancelled" is still
written. Exit status: 0 when a result was written, 125 otherwise.
`

// execFlags registers sbx exec's flags on fs and returns the exec they
// configure.
func execFlags(fs *flag.FlagSet) action {
	var reqFile string
	var roRoots listFlag
	var allowStage bool
	fs.StringVar(&reqFile, "request", "", "`FILE` read the request from FILE instead of stdin")
	fs.Var(&roRoots, "ro-root", "`DIR` let requests name ro paths inside DIR (repeatable; none: requests may name no ro path)")
	fs.BoolVar(&allowStage, "allow-stage", false, "let requests ask for \"stage\": true (staging host paths named in the command)")
	return func(args []string, s streams) int {
		if len(args) > 0 {
			return fail(s, fmt.Errorf("exec: unexpected argument %q: the command goes in the JSON request", args[0]))
		}
		for _, r := range roRoots {
			if !filepath.IsAbs(r) {
				return fail(s, fmt.Errorf("exec: --ro-root %q: want an absolute path", r))
			}
		}
		var in io.Reader = s.in
		if reqFile != "" {
			f, err := openUserFile(invoker.Cred(), reqFile, os.O_RDONLY, 0)
			if err != nil {
				return fail(s, fmt.Errorf("exec: --request: %w", err))
			}
			defer f.Close()
			in = f
		}
		if in == nil {
			return fail(s, errors.New("exec: no request on stdin"))
		}
		data, err := io.ReadAll(io.LimitReader(in, gate.MaxRequestBytes+1))
		if err != nil {
			return fail(s, fmt.Errorf("exec: read request: %w", err))
		}
		var res gate.Result
		if len(data) > gate.MaxRequestBytes {
			res = gate.Rejected(fmt.Errorf("request larger than %d bytes", gate.MaxRequestBytes))
		} else if req, err := gate.ParseRequest(data); err != nil {
			res = gate.Rejected(err)
		} else {
			ctx, stop := signal.NotifyContext(context.Background(), unix.SIGINT, unix.SIGTERM, unix.SIGHUP)
			res = execrun.Exec(ctx, req, execrun.ExecOptions{ReadOnlyRoots: roRoots, AllowStage: allowStage})
			stop()
		}
		enc := json.NewEncoder(s.out)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(res); err != nil {
			return fail(s, fmt.Errorf("exec: write result: %w", err))
		}
		return 0
	}
}
