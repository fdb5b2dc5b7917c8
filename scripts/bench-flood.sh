#!/usr/bin/env bash
# A flood of distinct denials inside sbx (scripts/denyflood.c, FLOOD_SECS
# seconds, default 30): what it costs sbx itself, outside the sandbox's
# limits. Samples sbx's own process (not the sandbox's) every 0.2 s and
# prints one line of key=value pairs: peak RSS (VmHWM, MiB), CPU seconds
# (user+system), the --violations file's size, the denials the program
# made, and the wall time. Run by scripts/bench.sh; runs alone too (root).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
SBX=${SBX:-$PWD/bin/sbx}
FLOOD_SECS=${FLOOD_SECS:-30}
ws=$(mktemp -d /tmp/sbx-flood.XXXXXX)
trap 'rm -rf "$ws"' EXIT
cc -O2 -static -o "$ws/denyflood" "$root/scripts/denyflood.c"
python3 - "$SBX" "$ws" "$FLOOD_SECS" <<'PY'
import os, subprocess, sys, time
sbx, ws, secs = sys.argv[1], sys.argv[2], sys.argv[3]
viol = os.path.join(ws, "violations.jsonl")
tick = os.sysconf("SC_CLK_TCK")
start = time.monotonic()
p = subprocess.Popen([sbx, "run", "--violations", viol, "--", ws + "/denyflood", secs],
                     cwd=ws, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
hwm_kb, cpu = 0, 0.0
while p.poll() is None:
    try:
        for line in open(f"/proc/{p.pid}/status"):
            if line.startswith("VmHWM:"):
                hwm_kb = max(hwm_kb, int(line.split()[1]))
        f = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()
        cpu = (int(f[11]) + int(f[12])) / tick  # utime, stime of sbx's own threads
    except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
        pass
    time.sleep(0.2)
out, err = p.communicate()
wall = time.monotonic() - start
size = os.path.getsize(viol) if os.path.exists(viol) else 0
made = out.strip().replace(" ", "=", 1).replace(" refused ", " refused=")
print(f"status={p.returncode} wall_s={wall:.1f} sbx_peak_rss_mib={hwm_kb/1024:.0f} "
      f"sbx_cpu_s={cpu:.1f} violations_mib={size/2**20:.1f} "
      f"violations_mib_per_s={size/2**20/wall:.2f} {made}")
sys.stderr.write("\n")
sys.stderr.write(err[-2000:])
PY
