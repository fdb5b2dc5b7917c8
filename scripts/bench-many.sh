#!/usr/bin/env bash
# Many sandboxes and kills (issue #16's figures), run by scripts/bench.sh;
# runs alone too (root). Prints key=value lines:
#   conc N=... ok=... p50_ms=... p95_ms=... rss_mib=... leftovers=...
#     N runs of `sbx run -- true` started at once (N = 8 32 64 128): how
#     many exited 0, per-run wall time, the largest sbx's peak RSS, and what
#     is left in /run/sbx/run and the sbx cgroups afterwards;
#   kills n=... gone_1s=... leftovers=... lost=...
#     KILLS (default 200) SIGKILLs of sbx at a random moment of a run of a
#     fake agent that stages a --session and appends to it: how often the
#     sandbox was gone (stdout closed, program gone) within 1 s, what the
#     next run left, and how many appends the program had reported and the
#     host session lacks after that next run (must be 0).
set -euo pipefail
cd "$(dirname "$0")/.."
SBX=${SBX:-$PWD/bin/sbx}
KILLS=${KILLS:-200}
ws=$(mktemp -d /tmp/sbx-many.XXXXXX)
trap 'rm -rf "$ws"' EXIT
chmod 755 "$ws"
python3 - "$SBX" "$ws" "$KILLS" <<'PY'
import glob, os, random, signal, statistics, subprocess, sys, time
sbx, ws, kills = sys.argv[1], sys.argv[2], int(sys.argv[3])
env = dict(os.environ, XDG_DATA_HOME=ws + "/data")
def leftovers():
    runs = glob.glob("/run/sbx/run/*")
    # Run cgroups: sbx/<run> (rootless, older builds) and sbx/net-<build>/<run>
    # (root); the per-build net-* parents themselves stay while pinned.
    cgs = [p for p in glob.glob("/sys/fs/cgroup/**/sbx/*", recursive=True) + glob.glob("/sys/fs/cgroup/**/sbx/net-*/*", recursive=True)
           if os.path.isdir(p) and not os.path.basename(p).startswith("net-")]
    return len(runs) + len(cgs)
def timed(args):
    return subprocess.Popen(["/usr/bin/time", "-f", "%M", sbx] + args, cwd=ws, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
for n in (8, 32, 64, 128):
    t0 = time.monotonic()
    ps = [(timed(["run", "--", "true"]), time.monotonic()) for _ in range(n)]
    durs, ok, rss = [], 0, 0
    for p, st in ps:
        _, err = p.communicate()
        durs.append((time.monotonic() - st) * 1000)
        ok += p.returncode == 0
        try:
            rss = max(rss, int(err.strip().splitlines()[-1]))
        except (ValueError, IndexError):
            pass
    durs.sort()
    subprocess.run([sbx, "run", "--", "true"], cwd=ws, env=env, capture_output=True)
    print(f"conc N={n} ok={ok} p50_ms={statistics.median(durs):.0f} p95_ms={durs[int(len(durs)*0.95)-1]:.0f} "
          f"rss_mib={rss//1024} leftovers={leftovers()}", flush=True)
# Kills.
with open(ws + "/pi", "w") as f:
    f.write('#!/bin/sh\nwhile :; do echo "line $$ $(date +%s%N)" >> "$2"; echo appended; sleep 0.01; done\n')
os.chmod(ws + "/pi", 0o755)
os.makedirs(ws + "/sess", exist_ok=True)
sess = ws + "/sess/s.jsonl"
open(sess, "w").close()
random.seed(1)
gone, lost = 0, 0
for i in range(kills):
    p = subprocess.Popen([sbx, "run", "--home", "tmp", "--", "./pi", "--session", "sess/s.jsonl"], cwd=ws, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    os.set_blocking(p.stdout.fileno(), False)
    time.sleep(random.uniform(0, 0.25))
    appended = 0
    try:
        appended = (p.stdout.read() or b"").count(b"appended")
    except BlockingIOError:
        pass
    p.send_signal(signal.SIGKILL)
    p.wait()
    died = time.monotonic()
    os.set_blocking(p.stdout.fileno(), True)
    ok = True
    while time.monotonic() - died < 1:  # stdout closes when nothing of the sandbox holds it
        import select
        r, _, _ = select.select([p.stdout], [], [], 1 - (time.monotonic() - died))
        if not r:
            ok = False
            break
        if not p.stdout.read1(65536):
            break
    else:
        ok = False
    gone += ok
    p.stdout.close()
    before = open(sess).read().count("\n")
    subprocess.run([sbx, "run", "--", "true"], cwd=ws, env=env, capture_output=True)  # recovers
    after = open(sess).read().count("\n")
    # The program reported `appended` lines this run; the host must have
    # at least as many more lines after the recovery.
    lost += max(0, appended - (after - before))
print(f"kills n={kills} gone_1s={gone} leftovers={leftovers()} lost={lost}", flush=True)
PY
