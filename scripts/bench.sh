#!/usr/bin/env bash
# make bench: sbx's startup and in-sandbox overhead, against bubblewrap and a
# bare run in the same session. Prints a Markdown table (paste into README).
# Needs root, bubblewrap and hyperfine (installed by .ci/deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
SBX=${SBX:-$PWD/bin/sbx}
RUNS=${RUNS:-40}
command -v bwrap >/dev/null && command -v hyperfine >/dev/null || ./.ci/deps.sh
ws=$(mktemp -d /tmp/sbx-bench.XXXXXX)
trap 'rm -rf "$ws"' EXIT
cd "$ws"
out=$(mktemp)
loop='for i in $(seq 2000); do cat /etc/hostname >/dev/null; done'
hyperfine -N --warmup 5 --runs "$RUNS" --export-json "$out.start.json" \
  -n "sbx run -- true" "$SBX run -- true" \
  -n "bwrap --unshare-all true" "bwrap --ro-bind / / --unshare-all true" >&2
hyperfine --warmup 1 --runs 5 --export-json "$out.loop.json" \
  -n "loop in sbx" "$SBX run -- sh -c '$loop'" \
  -n "loop bare" "sh -c '$loop'" >&2
rss=$(python3 - "$SBX" <<'PY'
import resource, subprocess, sys
subprocess.run([sys.argv[1], "run", "--", "true"], check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
PY
)
python3 - "$out" "$rss" <<'PY'
import json, sys
out, rss = sys.argv[1], sys.argv[2]
def means(path):
    return {r["command"]: (r["mean"] * 1000, r["stddev"] * 1000) for r in json.load(open(path))["results"]}
s = means(out + ".start.json"); l = means(out + ".loop.json")
sbx, bw = s["sbx run -- true"], s["bwrap --unshare-all true"]
li, lb = l["loop in sbx"], l["loop bare"]
# The loop's net overhead: subtract sbx's own startup from the loop in sbx.
net = li[0] - sbx[0]
print("| measurement | mean | ± σ | ratio |")
print("|---|---|---|---|")
print(f"| `sbx run -- true` | {sbx[0]:.1f} ms | {sbx[1]:.1f} ms | {sbx[0]/bw[0]:.2f}x bwrap |")
print(f"| `bwrap --ro-bind / / --unshare-all true` | {bw[0]:.1f} ms | {bw[1]:.1f} ms | 1.00x |")
print(f"| 2000x `cat /etc/hostname` in sbx (incl. startup) | {li[0]:.0f} ms | {li[1]:.0f} ms | {net/lb[0]:.3f}x bare (startup subtracted) |")
print(f"| 2000x `cat /etc/hostname` bare | {lb[0]:.0f} ms | {lb[1]:.0f} ms | 1.000x |")
print(f"| peak RSS of a `sbx run -- true` (largest process) | {rss} MiB | | |")
PY
rm -f "$out"*
