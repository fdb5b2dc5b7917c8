#!/usr/bin/env bash
# vmtest/e2e/suite-refuse.sh is the e2e suite for kernels where sbx has no
# file tier (below Linux 5.13: no Landlock, and the BPF LSM program set needs
# 5.17): suite.sh hands over to it there, as root and as the user. Every run
# must refuse with exit 125 and name the floors that keep the tiers out, and
# must not have run at all (the command's output, a file it would write in
# the workspace and one outside it); `sbx doctor` must agree (exit 1, "would
# refuse", its kernel line). It prints the doctor report and one run's
# refusal, one "ok"/"FAIL"
# line per check (checks.sh) and "SBX-E2E-SUITE MODE refuse: pass=N
# fail=M", and exits non-zero on any failure. A handful of runs: this boot
# is meant to stay short under TCG.
set -uo pipefail

mode=${1:?usage: suite-refuse.sh root|user}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=vmtest/e2e/checks.sh
. "$here/checks.sh"
pass=0
fail=0
ws=$(mktemp -d "${TMPDIR:-/tmp}/sbx-e2e-ws.XXXXXX")
out=$(mktemp)
# A file in the user's home (outside the workspace; a system unit's root
# has no HOME set).
outside="$(getent passwd "$(id -u)" | cut -d: -f6)/sbx-e2e-outside"
trap 'rm -rf "$ws" "$out" "$outside"' EXIT
cd "$ws" || exit 1

kver=$(uname -r | cut -d. -f1,2)
kre=${kver//./\\.}
# Why every run refuses: no file tier, with the floor of each (rootless, the
# BPF LSM tier is root's alone and has no floor to name).
why=('no file tier available, refusing to run unconfined' "Landlock file tier needs Linux 5\.13\+ \(Landlock\); this is $kre")
if [ "$mode" = root ]; then
	why+=("BPF LSM tier needs Linux 5\.17\+ \(bpf_loop\); this is $kre")
	state=/run/sbx
else
	state=${XDG_STATE_HOME:-$HOME/.local/state}/sbx
fi
# A root run that fell back to Landlock says so; with no Landlock either
# that note would be false.
fallback_note='confine files with Landlock alone'

# --- doctor: the same verdict as the runs, the kernel and each floor named
doctor=('^kernel +ok +'"$kre"' ' '^landlock +missing .*Landlock file tier needs Linux 5\.13\+'
	'^refused: +no file tier available' '^verdict: +sbx run would refuse')
[ "$mode" = user ] || doctor+=('^bpf lsm +missing .*BPF LSM tier needs Linux 5\.17\+')
expect doctor-refuses 1 "${doctor[@]}" -- sbx doctor
sed 's/^/     | /' "$out"

# --- a run that would print a host file: refused, nothing printed
expect control-hostname 0 '^sbx-e2e$' -- cat /etc/hostname
expect run-hostname 125 "${why[@]}" -- sbx run -- cat /etc/hostname
sed 's/^/     | /' "$out"
refute run-hostname-silent '^sbx-e2e$'
refute run-hostname-no-fallback-note "$fallback_note"

# --- a write outside the workspace (the control shows it is allowed to
# this user outside any sandbox), and one inside: refused, never written
expect control-write-outside 0 -- sh -c "echo x > '$outside'"
rm -f "$outside"
expect run-write-outside 125 "${why[@]}" -- sbx run -- sh -c "echo x > '$outside'"
if [ -e "$outside" ]; then bad run-write-outside-absent "$outside was written"; else ok run-write-outside-absent; fi
expect run-touch-workspace 125 "${why[@]}" -- sbx run --net none -- touch ran
if [ -e "$ws/ran" ]; then bad run-touch-workspace-absent "the command ran"; else ok run-touch-workspace-absent; fi

# --- each tier demanded by name is refused for its own floor
expect policy-landlock 125 'Landlock file tier needs Linux 5\.13\+' -- sbx run --policy landlock -- touch ran
if [ "$mode" = root ]; then
	expect policy-bpf 125 'BPF LSM tier needs Linux 5\.17\+' -- sbx run --policy bpf -- touch ran
	refute policy-bpf-no-fallback-note "$fallback_note"
fi
if [ -e "$ws/ran" ]; then bad policy-absent "a command ran"; else ok policy-absent; fi

# --- sbx exec: a result is written, and it is a refusal
printf '{"command":["touch","ran-exec"],"workspace":"%s"}' "$ws" >"$ws/req.json"
expect exec-refuses 0 '"status":"(failed|rejected)"' 'no file tier available' -- sbx exec --request "$ws/req.json"
refute exec-no-exit-code '"exitCode":[0-9]'
if [ -e "$ws/ran-exec" ]; then bad exec-absent "the command ran"; else ok exec-absent; fi

# --- nothing stays behind
left=$(find "$state/run" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
[ "$left" = 0 ] && ok teardown-state || { find "$state/run" -maxdepth 2 >"$out" 2>&1; bad teardown-state "$left entries under $state/run"; }
find /sys/fs/cgroup -type d -regextype egrep -regex '.*/(sbx-)?[0-9a-f]{16}(\.scope)?' >"$out" 2>/dev/null
[ ! -s "$out" ] && ok teardown-cgroups || bad teardown-cgroups "run cgroups left"
grep -E 'sbx' /proc/self/mountinfo >"$out"
[ ! -s "$out" ] && ok teardown-mounts || bad teardown-mounts "sbx mounts left in the host's mount table"

echo "SBX-E2E-SUITE $mode refuse: pass=$pass fail=$fail"
[ "$fail" = 0 ]
