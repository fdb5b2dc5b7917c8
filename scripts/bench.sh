#!/usr/bin/env bash
# make bench: sbx's startup and in-sandbox overhead, against bubblewrap and a
# bare run in the same session, and the per-run cost of the BPF network wall.
# Prints a Markdown table (paste into docs/benchmarks.md, "Latest results").
# Needs root, bubblewrap, hyperfine (installed by .ci/deps.sh) and python3;
# the last part (scripts/bench-srt.sh, sbx against srt for pi) also socat,
# ripgrep and the npm registry once (srt, and the Node 22 of pi's tests).
# The machine may be shared: the load average before and after is printed
# under the table; compare numbers only from one run of this script.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
SBX=${SBX:-$PWD/bin/sbx}
GO=${GO:-go}
RUNS=${RUNS:-40}
OPENS=${OPENS:-200000}
command -v bwrap >/dev/null && command -v hyperfine >/dev/null || ./.ci/deps.sh
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
out=$(mktemp)
ws=$(mktemp -d /tmp/sbx-bench.XXXXXX)
trap 'rm -rf "$ws" "$out" "$out".*' EXIT
# The BPF tier's cost per run: opening the pinned wall (warm; cold = load,
# verify and pin, paid once per boot) and taking an event ring.
$GO test -tags seccomp -run '^$' -bench 'OpenNet|EventReader' ./bpf/netwall/ | tee "$out.bpf" >&2
# The denial tracer: what an attached sys_exit hook costs every syscall
# (open+close, host and sandboxed), and a run's attach/detach.
$GO test -tags seccomp -run '^$' -bench 'TraceOpen|OpenTraceWarm' ./bpf/tracer/ | tee -a "$out.bpf" >&2
$GO test -tags seccomp -run '^$' -bench 'TraceAcquire/^(shared|alone-back-to-back)$' ./bpf/tracer/ | tee -a "$out.bpf" >&2
# Each alone-* iteration first waits 30 ms, untimed, for the last detach's
# grace period: a fixed count keeps go test from scaling it to minutes.
$GO test -tags seccomp -run '^$' -bench 'TraceAcquire/^alone-(acquire|release)$' -benchtime 200x ./bpf/tracer/ | tee -a "$out.bpf" >&2
# The egress proxy: a CONNECT tunnel and a transparent forwarder against a
# direct loopback connection.
$GO test -run '^$' -bench 'Tunnel' -benchtime 2s ./egress/ | tee "$out.egress" >&2
cd "$ws"
loop='for i in $(seq 2000); do cat /etc/hostname >/dev/null; done'
# open()-heavy: one process, so startup is negligible next to the opens.
py=$(command -v python3)
case "$py" in /usr/*|/bin/*) ;; *) py=/usr/bin/python3 ;; esac # visible inside
opens="for _ in range($OPENS): open('/etc/hostname').close()"
cc -O2 -static -o "$ws/openloop" "$root/scripts/openloop.c"
# runc, built from the module cache at the version sbx links, runs /bin/true
# in a minimal bundle (busybox rootfs, read-only, runc spec's defaults): what
# libcontainer's own path costs, so sbx's startup can be read against it.
runc_src=$(cd "$root" && $GO list -m -f '{{.Dir}}' github.com/opencontainers/runc)
(cd "$runc_src" && GOFLAGS=-mod=mod $GO build -tags seccomp -o "$ws/runc" .) >&2
mkdir -p "$ws/bundle/rootfs/bin"
cp /bin/busybox "$ws/bundle/rootfs/bin/busybox"
ln -s busybox "$ws/bundle/rootfs/bin/true"
(cd "$ws/bundle" && "$ws/runc" spec)
python3 - "$ws/bundle/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["process"].update(terminal=False, args=["/bin/true"])
c["root"]["readonly"] = True
json.dump(c, open(sys.argv[1], "w"))
PY
hyperfine -N --warmup 5 --runs "$RUNS" --export-json "$out.start.json" \
  -n "sbx run -- true" "$SBX run -- true" \
  -n "bwrap --unshare-all true" "bwrap --ro-bind / / --unshare-all true" \
  -n "runc run (minimal bundle)" "$ws/runc --root $ws/runc-state run -b $ws/bundle bench" >&2
hyperfine --warmup 1 --runs 5 --export-json "$out.loop.json" \
  -n "loop in sbx" "$SBX run -- sh -c '$loop'" \
  -n "loop bare" "sh -c '$loop'" >&2
hyperfine -N --warmup 1 --runs 5 --export-json "$out.open.json" \
  -n "opens in sbx" "$SBX run -- $py -c \"$opens\"" \
  -n "opens bare" "$py -c \"$opens\"" >&2
# The kernel's per-open cost alone, in ns per open()+close() (best of 5).
ol_bare=$("$ws/openloop" 200000 | awk '{print $2}')
ol_sbx=$("$SBX" run -- "$ws/openloop" 200000 | awk '{print $2}')
rss=$(python3 - "$SBX" <<'PY'
import resource, subprocess, sys
subprocess.run([sys.argv[1], "run", "--", "true"], check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
PY
)
# A flood of distinct denials (FLOOD_SECS, default 30 s): what it costs sbx
# itself, which runs outside the sandbox's limits (scripts/bench-flood.sh).
flood=$(cd "$root" && SBX="$SBX" ./scripts/bench-flood.sh 2>/dev/null)
echo "$flood" >&2
# Many sandboxes at once, and SIGKILLs at random moments
# (scripts/bench-many.sh).
many=$(cd "$root" && SBX="$SBX" ./scripts/bench-many.sh 2>/dev/null)
echo "$many" >&2
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
python3 - "$out" "$rss" "$OPENS" "$load_start" "$load_end" "$ol_bare" "$ol_sbx" "$flood" "$many" <<'PY'
import json, re, sys
out, rss, opens, load_start, load_end, ol_bare, ol_sbx, flood, many = sys.argv[1:10]
def means(path):
    return {r["command"]: (r["mean"] * 1000, r["stddev"] * 1000, r["min"] * 1000, r["median"] * 1000) for r in json.load(open(path))["results"]}
s = means(out + ".start.json"); l = means(out + ".loop.json"); o = means(out + ".open.json")
sbx, bw = s["sbx run -- true"], s["bwrap --unshare-all true"]
rc = s["runc run (minimal bundle)"]
li, lb = l["loop in sbx"], l["loop bare"]
oi, ob = o["opens in sbx"], o["opens bare"]
# The loop's net overhead: subtract sbx's own startup from the loop in sbx.
net = li[0] - sbx[0]
onet = oi[0] - sbx[0]
# go test -bench lines: "BenchmarkOpenNet/warm-2  7458  170040 ns/op".
bench = {}
mbs = {}
for path in (out + ".bpf", out + ".egress"):
    for line in open(path):
        m = re.match(r"^Benchmark(\S+?)(-\d+)?\s+\d+\s+([\d.]+) ns/op(?:\s+([\d.]+) MB/s)?", line)
        if m:
            bench[m.group(1)] = float(m.group(3)) / 1e6
            if m.group(4):
                mbs[m.group(1)] = float(m.group(4))
print("| measurement | mean | ± σ | ratio |")
print("|---|---|---|---|")
print(f"| `sbx run -- true` | {sbx[0]:.1f} ms | {sbx[1]:.1f} ms | {sbx[0]/bw[0]:.2f}x bwrap (min {sbx[2]:.1f} ms, median {sbx[3]:.1f} ms: {sbx[3]/bw[3]:.2f}x) |")
print(f"| `bwrap --ro-bind / / --unshare-all true` | {bw[0]:.1f} ms | {bw[1]:.1f} ms | 1.00x (min {bw[2]:.1f} ms, median {bw[3]:.1f} ms) |")
print(f"| `runc run` of `/bin/true`, minimal bundle (same libcontainer, v1.5.3) | {rc[0]:.1f} ms | {rc[1]:.1f} ms | {rc[0]/bw[0]:.2f}x bwrap (min {rc[2]:.1f} ms, median {rc[3]:.1f} ms); sbx is {sbx[3]/rc[3]:.2f}x runc by median |")
print(f"| 2000x `cat /etc/hostname` in sbx (incl. startup) | {li[0]:.0f} ms | {li[1]:.0f} ms | {net/lb[0]:.3f}x bare (startup subtracted) |")
print(f"| 2000x `cat /etc/hostname` bare | {lb[0]:.0f} ms | {lb[1]:.0f} ms | 1.000x |")
print(f"| {opens}x `open()`+`close()` of /etc/hostname (python3) in sbx (incl. startup) | {oi[0]:.0f} ms | {oi[1]:.0f} ms | {onet/ob[0]:.3f}x bare (startup subtracted; target < 1.05x) |")
print(f"| {opens}x `open()`+`close()` of /etc/hostname (python3) bare | {ob[0]:.0f} ms | {ob[1]:.0f} ms | 1.000x |")
print(f"| `open()`+`close()` of /etc/hostname in C, in sbx | {float(ol_sbx):.0f} ns | | {float(ol_sbx)/float(ol_bare):.2f}x bare (best of 5 x 200000) |")
print(f"| `open()`+`close()` of /etc/hostname in C, bare | {float(ol_bare):.0f} ns | | 1.00x |")
def row(name, key, note=""):
    if key in bench:
        print(f"| {name} | {bench[key]:.3f} ms | | {note} |")
row("BPF wall: `OpenNet` warm (open the pins; per run)", "OpenNet/warm", "go test -bench")
row("BPF wall: `OpenNet` cold (load, verify, pin; once per boot)", "OpenNet/cold", "go test -bench")
row("BPF wall: `EventReader` (take and free a run's ring; per run)", "EventReader", "go test -bench")
if "OpenNet/warm" in bench and "EventReader" in bench:
    per_run = bench["OpenNet/warm"] + bench["EventReader"]
    print(f"| BPF wall per run (warm `OpenNet` + `EventReader`) | {per_run:.3f} ms | | {per_run/sbx[0]*100:.1f}% of `sbx run -- true`; goal <= 1 ms |")
def us(key):
    return bench[key] * 1000
if "TraceOpen/host-detached" in bench and "TraceOpen/host-attached" in bench:
    d, a = us("TraceOpen/host-detached"), us("TraceOpen/host-attached")
    print(f"| tracer: `open()`+`close()` on the host, detached / attached | {d:.2f} / {a:.2f} us | | {a/d:.2f}x while any run is live |")
if "TraceOpen/run-attached" in bench:
    print(f"| tracer: `open()`+`close()` in a run's cgroup, attached | {us('TraceOpen/run-attached'):.2f} us | | |")
for k, name in (("TraceAcquire/shared", "another run holds it"), ("TraceAcquire/alone-back-to-back", "alone, back to back")):
    if k in bench:
        print(f"| tracer: attach + detach per run ({name}) | {bench[k]:.3f} ms | | go test -bench |")
if "Tunnel/direct/throughput" in mbs and "Tunnel/proxy/throughput" in mbs:
    d, p = mbs["Tunnel/direct/throughput"], mbs["Tunnel/proxy/throughput"]
    print(f"| egress: throughput direct / through a CONNECT tunnel | {d:.0f} / {p:.0f} MB/s | | {p/d:.2f}x |")
if "Tunnel/direct/roundtrip" in bench and "Tunnel/proxy/roundtrip" in bench:
    d, p = us("Tunnel/direct/roundtrip"), us("Tunnel/proxy/roundtrip")
    print(f"| egress: 1-byte round trip direct / tunnel | {d:.1f} / {p:.1f} us | | +{p-d:.1f} us per round trip |")
if "Tunnel/direct/throughput" in mbs and "Tunnel/forward/throughput" in mbs:
    d, p = mbs["Tunnel/direct/throughput"], mbs["Tunnel/forward/throughput"]
    print(f"| egress: throughput direct / through a transparent forwarder (splice) | {d:.0f} / {p:.0f} MB/s | | {p/d:.2f}x (target >= 0.9x) |")
if "Tunnel/direct/roundtrip" in bench and "Tunnel/forward/roundtrip" in bench:
    d, p = us("Tunnel/direct/roundtrip"), us("Tunnel/forward/roundtrip")
    print(f"| egress: 1-byte round trip direct / forwarder | {d:.1f} / {p:.1f} us | | +{p-d:.1f} us per round trip (target <= 20 us) |")
if "Tunnel/proxy/setup" in bench:
    print(f"| egress: tunnel setup (connect + CONNECT + 200) | {bench['Tunnel/proxy/setup']:.3f} ms | | |")
print(f"| peak RSS of a `sbx run -- true` (largest process) | {rss} MiB | | |")
f = dict(kv.split("=", 1) for kv in flood.split())
if "sbx_peak_rss_mib" in f:
    print(f"| denial flood, {f['wall_s']} s ({f['attempts']} denied opens): sbx's peak RSS / CPU | {f['sbx_peak_rss_mib']} MiB / {f['sbx_cpu_s']} s | | `--violations` {f['violations_mib']} MiB ({f['violations_mib_per_s']} MiB/s) |")
for line in many.splitlines():
    kind, *kvs = line.split()
    m = dict(kv.split("=", 1) for kv in kvs)
    if kind == "conc":
        print(f"| {m['N']} `sbx run -- true` at once: exited 0 / p50 / p95 per run / sbx peak RSS / left after | {m['ok']}/{m['N']} / {m['p50_ms']} ms / {m['p95_ms']} ms / {m['rss_mib']} MiB / {m['leftovers']} | | |")
    elif kind == "kills":
        print(f"| {m['n']} SIGKILLs of sbx at random moments: sandbox gone within 1 s / left after the next run / session appends lost | {m['gone_1s']}/{m['n']} / {m['leftovers']} / {m['lost']} | | lost must be 0 |")
print()
print(f"Load average (1, 5, 15 min) before: {load_start}; after: {load_end}.")
PY
# pi's bash tool through sbx against Anthropic's sandbox-runtime
# (scripts/bench-srt.sh): latency, memory, escapes.
echo
(cd "$root" && SBX="$SBX" ./scripts/bench-srt.sh)
