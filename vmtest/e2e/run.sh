#!/usr/bin/env bash
# vmtest/e2e/run.sh proves the whole sbx program on a stock Debian 12 system:
# it boots the guest that image.sh builds (systemd, cgroup2 only, the 6.1
# cloud kernel) under QEMU (TCG) once per LSM list, and inside each boot
# guest.sh runs suite.sh with the real bin/sbx as root and as an ordinary
# user with systemd delegation. The binary and the scripts travel on a second
# disk made for each run, so the cached image never needs a rebuild for a
# new sbx.
#
# Each boot is judged on its serial console (\r and ANSI sequences
# stripped): QEMU must power off by itself within the timeout, the guest
# must print "SBX-E2E-RESULT: rc=0", and no FAIL line, kernel oops or panic
# may appear. Exits non-zero, naming every failed boot, otherwise.
#
# Settings (environment):
#   E2E_BOOTS    space-separated lsm= values, "default" for the kernel's own
#                list (default: "landlock,lockdown,capability,bpf default")
#   E2E_TIMEOUT  seconds per boot before QEMU is killed (default 1200)
#   E2E_SBX      the sbx binary to test (default bin/sbx)
#   E2E_LOGS     directory for the console logs (default vmtest/.cache/e2e/logs)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
here="$root/vmtest/e2e"
cache=${E2E_CACHE:-$root/vmtest/.cache/e2e}
boots=${E2E_BOOTS:-landlock,lockdown,capability,bpf default}
timeout=${E2E_TIMEOUT:-1200}
sbx=${E2E_SBX:-$root/bin/sbx}
logs=${E2E_LOGS:-$cache/logs}

log() { echo "e2e-vm: $*" >&2; }
die() { echo "e2e-vm: FAIL: $*" >&2; exit 1; }

for t in qemu-system-x86_64:qemu-system-x86 mkfs.ext4:e2fsprogs timeout:coreutils; do
	command -v "${t%%:*}" >/dev/null 2>&1 || die "${t%%:*} not found (apt-get install ${t#*:})"
done
[ -x "$sbx" ] || die "$sbx not found (make build)"
export E2E_CACHE="$cache"
img=$(bash "$here/image.sh") || die "could not build the guest image (see the messages above)"

mkdir -p "$logs"
work=$(mktemp -d "$cache/run.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/job"
cp "$sbx" "$work/job/sbx"
cp "$here/guest.sh" "$here/suite.sh" "$work/job/"
truncate -s 256M "$work/job.img"
mkfs.ext4 -q -F -d "$work/job" "$work/job.img" || die "mkfs.ext4 of the job disk failed"

# failed_check matches suite.sh's line for a failed check.
failed_check='(^|[^[:alnum:]])FAIL (root|user) '

# boot LSM NAME: one guest boot with lsm=LSM ("default": none given).
boot() {
	local lsm=$1 name=$2 console="$logs/$2.log" append start rc
	append="root=/dev/vda rw console=ttyS0 panic=-1 nohz=off quiet loglevel=4 systemd.show_status=false"
	[ "$lsm" = default ] || append+=" lsm=$lsm"
	log "boot $name: lsm=$lsm (TCG; timeout ${timeout}s)"
	start=$(date +%s)
	set +e
	timeout "$timeout" qemu-system-x86_64 -nic none -machine pc -accel tcg -cpu max,la57=off \
		-m 4096 -smp 2 -nographic -no-reboot \
		-kernel "$img/vmlinuz" -initrd "$img/initrd.img" -append "$append" \
		-drive "file=$img/image.img,if=virtio,format=raw,snapshot=on" \
		-drive "file=$work/job.img,if=virtio,format=raw" \
		</dev/null 2>&1 | sed -u 's/\r//g; s/\x1b\[[0-9;?]*[A-Za-z]//g; s/\x1bc//g' >"$console"
	rc=${PIPESTATUS[0]}
	set -e
	local elapsed=$(($(date +%s) - start)) fail=()
	[ "$rc" != 124 ] || fail+=("QEMU timed out after ${timeout}s")
	[ "$rc" = 124 ] || [ "$rc" = 0 ] || fail+=("QEMU exited with status $rc")
	# The markers are matched anywhere in a line: the serial console
	# interleaves the firmware's and the kernel's output with the guest's
	# (a boot once ate the newline before the first marker).
	grep -q 'SBX-E2E: kernel ' "$console" || fail+=("the suite never started (no 'SBX-E2E: kernel' line)")
	grep -q 'SBX-E2E-RESULT: rc=0 ' "$console" || fail+=("no 'SBX-E2E-RESULT: rc=0' line (a check failed or the suite did not finish)")
	! grep -qE "$failed_check" "$console" || fail+=("$(grep -cE "$failed_check" "$console") check(s) failed")
	grep -q 'SBX-E2E-SUITE root: pass=[1-9][0-9]* fail=0' "$console" || fail+=("the root suite did not report a pass")
	grep -q 'SBX-E2E-SUITE user: pass=[1-9][0-9]* fail=0' "$console" || fail+=("the user suite did not report a pass")
	! grep -qE 'Oops|Kernel panic|BUG:|general protection fault' "$console" || fail+=("the kernel oopsed or panicked")
	echo "e2e-vm: $name: ${elapsed}s wall; console: $console"
	grep -E "SBX-E2E|$failed_check|^     \|" "$console" | sed "s/^/e2e-vm:   /" || true
	if [ ${#fail[@]} -gt 0 ]; then
		for f in "${fail[@]}"; do log "FAIL $name: $f"; done
		return 1
	fi
	log "PASS $name"
}

# main boots once per LSM list. (A function called as "main; exit" on one
# line: bash has then read all it will ever run, so editing the script
# during a run cannot derail it; the function alone was not enough.)
main() {
	local failed=() lsm name start
	start=$(date +%s)
	for lsm in $boots; do
		name="boot-${lsm//,/-}"
		boot "$lsm" "$name" || failed+=("$name")
	done
	if [ ${#failed[@]} -gt 0 ]; then
		die "${failed[*]} (console logs in $logs)"
	fi
	log "PASS (boots: $boots; $(($(date +%s) - start))s)"
}
main; exit
