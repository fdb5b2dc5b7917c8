#!/usr/bin/env bash
# bench-srt.sh: pi's bash tool sandboxed by sbx (integrations/pi) against
# Anthropic's sandbox-runtime (srt, as pi's sandbox example uses it), same
# machine, same commands, same srt-shaped settings: per-command latency
# (true, ls -la, cc hello.c), peak RSS, and which escape attempts each
# denies (each attempt is first shown to work bare). Prints a Markdown
# table (paste into docs/benchmarks.md, "sbx and srt for pi"); part of
# make bench (scripts/bench.sh).
#
# Needs root (sbx), bubblewrap, socat, ripgrep, python3, cc (.ci/deps.sh)
# and the npm registry once: srt is installed into .cache/srt (gitignored),
# Node 22 by testdata/e2e/install-pi.sh (it strips the types of
# integrations/pi/sbx.ts, which the sbx side runs as the extension does).
#
# srt runs as root here with bubblewrap's defaults (no setuid bwrap, no
# --no-sandbox-like option was needed: root may create the namespaces).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
SBX=${SBX:-$PWD/bin/sbx}
RUNS=${RUNS:-20}
SRT_PKG=@anthropic-ai/sandbox-runtime
SRT_VERSION=${SRT_VERSION:-0.0.78}
for t in bwrap socat rg python3 cc; do command -v "$t" >/dev/null || { ./.ci/deps.sh; break; }; done
[ -x "$SBX" ] || { echo "bench-srt: $SBX not built (make build)" >&2; exit 1; }

srt_dir=$root/.cache/srt
srt_mod=$srt_dir/node_modules/$SRT_PKG
if [ "$(node -p "require('$srt_mod/package.json').version" 2>/dev/null)" != "$SRT_VERSION" ]; then
	mkdir -p "$srt_dir"
	npm install --prefix "$srt_dir" --save-exact --no-audit --no-fund --loglevel=error "$SRT_PKG@$SRT_VERSION" >&2
fi
prefix=$(sh testdata/e2e/install-pi.sh | tail -n1)
node22=$prefix/node_modules/.bin/node
[ -x "$node22" ] || { echo "bench-srt: install-pi.sh gave no Node 22 (fallback install?)" >&2; exit 1; }

# Not under /tmp: the settings let both write /tmp (as pi's sandbox
# example does), and "outside the workspace" must be outside that too.
work=$(mktemp -d "$root/.cache/bench-srt.XXXXXX")
trap 'rm -rf "$work"' EXIT
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
"$node22" scripts/bench-srt.mjs "$srt_mod/dist/index.js" "$SBX" "$work" "$RUNS" >"$work/report.json"
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$work/report.json" "$load_start" "$load_end" "$(nproc)" "$(uname -r)" <<'PY'
import json, sys, datetime
rep = json.load(open(sys.argv[1]))
load_start, load_end, ncpu, kernel = sys.argv[2:6]
lat, mem = rep["latency"], rep["memory"]
f = rep["sbxFeatures"]
print(f"pi's bash tool: sbx (integrations/pi) vs srt {rep['srtVersion']} ({rep['bwrapVersion']}), "
      f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {ncpu} cores, kernel {kernel}, "
      f"median of {rep['runs']} runs per command (sbx --settings: {'yes' if f['settings'] else 'no'}).")
print()
print("| per command | bare | srt | sbx | sbx / srt |")
print("|---|---|---|---|---|")
for name, r in lat.items():
    b, s, x = r["bare"]["median"], r["srt"]["median"], r["sbx"]["median"]
    print(f"| `{name}` | {b:.1f} ms | {s:.1f} ms (p90 {r['srt']['p90']:.1f}) | {x:.1f} ms (p90 {r['sbx']['p90']:.1f}) | {x/s:.2f}x |")
print(f"| peak RSS of one `true` (largest process) | | {mem['srt']['perCommandKiB']/1024:.1f} MiB | {mem['sbx']['perCommandKiB']/1024:.1f} MiB | |")
print(f"| resident for the session (srt: proxies in pi's process, socat bridges) | | {mem['srt']['sessionKiB']/1024:.1f} MiB | 0 (nothing between commands) | |")
print()
print("| escape attempt | bare (control) | srt | sbx |")
print("|---|---|---|---|")
for e in rep["escapes"]:
    print(f"| {e['name']} | {e['bare']} | {e['srt']} | {e['sbx']} |")
print()
print(f"Load average (1, 5, 15 min) before: {load_start}; after: {load_end}.")
bad = [e["name"] for e in rep["escapes"] if e["srt"] == "denied" and e["sbx"] != "denied"]
if bad:
    print()
    print("sbx allows what srt denies: " + ", ".join(bad) + ".")
PY
