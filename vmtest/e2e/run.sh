#!/usr/bin/env bash
# vmtest/e2e/run.sh proves the whole sbx program on stock Debian systems, a
# kernel matrix: it boots the guest that image.sh builds (bookworm: systemd,
# cgroup2 only, the 6.1 cloud kernel), and copies of it with another Debian
# kernel that kernel.sh installs, under QEMU (TCG), once per entry of
# E2E_BOOTS. Inside each boot guest.sh runs suite.sh with the real bin/sbx as
# root and as an ordinary user with systemd delegation. The binary and the
# scripts travel on a second disk made for each run, so the cached images
# never need a rebuild for a new sbx.
#
# What each kernel must show (the matrix's expectation, also printed by the
# suite, which chooses it from uname -r):
#   bookworm            6.1: the suite passes ("enforce")
#   bookworm-backports  6.12 when written: the suite passes ("enforce");
#                       not in the default boots: under QEMU 7.2's TCG this
#                       kernel panics in the scheduler early in some boots
#                       (set_next_task_fair, seen with cx16=off too), which
#                       says nothing about sbx; boot it by name
#   bullseye            5.10: no file tier exists (Landlock is 5.13+, the
#                       BPF LSM program set 5.17+), so every run refuses with
#                       exit 125 and the stated floors, nothing runs, and
#                       sbx doctor says "would refuse" (suite-refuse.sh)
#
# Each boot is judged on its serial console (\r and ANSI sequences
# stripped): QEMU must power off by itself within the timeout, the guest
# must print "SBX-E2E: kernel RELEASE" for the kernel the image holds and
# "SBX-E2E-RESULT: rc=0", both suites must report
# "SBX-E2E-SUITE MODE EXPECTATION: pass=N fail=0" with the kernel's
# expectation, and no FAIL line, kernel oops or panic may appear. Exits
# non-zero, naming every failed boot, otherwise.
#
# Settings (environment):
#   E2E_BOOTS    space-separated boots, each [KERNEL:]LSM: KERNEL is
#                bookworm (the default), bullseye or bookworm-backports; LSM
#                is the lsm= value, or "default" for the kernel's own list.
#                Default: "landlock,lockdown,capability,bpf default
#                bullseye:lockdown,capability,bpf" (5.10 gets bpf in its
#                list, so the BPF LSM set is refused by the verifier, not by
#                the list). One kernel alone:
#                E2E_BOOTS=bullseye:lockdown,capability,bpf; the backports
#                kernel: E2E_BOOTS=bookworm-backports:default
#   E2E_TIMEOUT  seconds per boot before QEMU is killed (default 1200)
#   E2E_START_TIMEOUT  seconds for the guest to start the suite; a boot
#                that has not is stopped and booted again once (default 420)
#   E2E_SBX      the sbx binary to test (default bin/sbx)
#   E2E_LOGS     directory for the console logs (default vmtest/.cache/e2e/logs)
#   E2E_CACHE    where the images are cached (default vmtest/.cache/e2e)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
here="$root/vmtest/e2e"
cache=${E2E_CACHE:-$root/vmtest/.cache/e2e}
boots=${E2E_BOOTS:-landlock,lockdown,capability,bpf default bullseye:lockdown,capability,bpf}
timeout=${E2E_TIMEOUT:-1200}
start_timeout=${E2E_START_TIMEOUT:-420}
sbx=${E2E_SBX:-$root/bin/sbx}
logs=${E2E_LOGS:-$cache/logs}

log() { echo "e2e-vm: $*" >&2; }
die() { echo "e2e-vm: FAIL: $*" >&2; exit 1; }

for t in qemu-system-x86_64:qemu-system-x86 mkfs.ext4:e2fsprogs timeout:coreutils; do
	command -v "${t%%:*}" >/dev/null 2>&1 || die "${t%%:*} not found (apt-get install ${t#*:})"
done
[ -x "$sbx" ] || die "$sbx not found (make build)"
export E2E_CACHE="$cache"

# expectation KERNEL: what the suites must report on that kernel.
expectation() {
	case $1 in
	bookworm | bookworm-backports) echo enforce ;;
	bullseye) echo refuse ;;
	*) return 1 ;;
	esac
}
# cpu KERNEL: QEMU's -cpu for that kernel. QEMU 7.2's TCG (Debian 12's)
# runs the backports 6.12 kernel into an oops within its first seconds
# (strlen from chr_dev_init, or a double fault in kmem_cache_alloc) while
# the CPU offers CX16; without CX16 it boots.
cpu() {
	case $1 in
	bookworm-backports) echo max,la57=off,cx16=off ;;
	*) echo max,la57=off ;;
	esac
}
# build_images builds (or finds cached) every kernel's image before the
# first boot, into images[KERNEL].
declare -A images=()
build_images() {
	local b k
	for b in $boots; do
		k=bookworm
		[[ $b != *:* ]] || k=${b%%:*}
		expectation "$k" >/dev/null || die "unknown kernel $k in E2E_BOOTS entry $b (bookworm, bullseye or bookworm-backports)"
		[ -z "${images[$k]:-}" ] || continue
		if [ "$k" = bookworm ]; then
			images[$k]=$(bash "$here/image.sh") || die "could not build the guest image (see the messages above)"
		else
			images[$k]=$(bash "$here/kernel.sh" "$k") || die "could not build the $k guest image (see the messages above)"
		fi
	done
}

# make_job_disk puts sbx and the guest's scripts on the job disk.
make_job_disk() {
	mkdir -p "$logs"
	work=$(mktemp -d "$cache/run.XXXXXX")
	trap 'rm -rf "$work"' EXIT
	mkdir -p "$work/job"
	cp "$sbx" "$work/job/sbx"
	cp "$here/guest.sh" "$here/checks.sh" "$here/suite.sh" "$here/suite-refuse.sh" "$work/job/"
	truncate -s 256M "$work/job.img"
	mkfs.ext4 -q -F -d "$work/job" "$work/job.img" || die "mkfs.ext4 of the job disk failed"
}

# failed_check matches suite.sh's line for a failed check.
failed_check='(^|[^[:alnum:]])FAIL (root|user) '

# run_qemu IMG CPU APPEND CONSOLE: one QEMU run of IMG's kernel on -cpu
# CPU with the command line APPEND, its console into CONSOLE. Sets qrc (timeout's
# status: 124 when the whole boot ran out of time) and stalled (1 when
# QEMU was stopped because the suite had not started after
# E2E_START_TIMEOUT seconds).
run_qemu() {
	local img=$1 cpu=$2 append=$3 console=$4 pid waited=0
	rm -f "$work/qemu.pid" "$work/qemu.rc"
	{
		timeout "$timeout" qemu-system-x86_64 -nic none -machine pc -accel tcg -cpu "$cpu" \
			-m 4096 -smp 2 -nographic -no-reboot -pidfile "$work/qemu.pid" \
			-kernel "$img/vmlinuz" -initrd "$img/initrd.img" -append "$append" \
			-drive "file=$img/image.img,if=virtio,format=raw,snapshot=on" \
			-drive "file=$work/job.img,if=virtio,format=raw" \
			</dev/null 2>&1
		echo $? >"$work/qemu.rc"
	} | sed -u 's/\r//g; s/\x1b\[[0-9;?]*[A-Za-z]//g; s/\x1bc//g' >"$console" &
	pid=$!
	stalled=0
	while kill -0 "$pid" 2>/dev/null; do
		sleep 5
		waited=$((waited + 5))
		if [ "$stalled" = 0 ] && [ "$waited" -ge "$start_timeout" ] && ! grep -q 'SBX-E2E: kernel ' "$console"; then
			stalled=1
			kill "$(cat "$work/qemu.pid" 2>/dev/null)" 2>/dev/null || true
		fi
	done
	wait "$pid" || true
	qrc=$(cat "$work/qemu.rc" 2>/dev/null || echo 1)
}

# boot KERNEL LSM NAME: one boot of KERNEL's guest with lsm=LSM ("default":
# none given). A boot whose suite has not started after E2E_START_TIMEOUT
# (a guest that stalls early under TCG: QEMU idle, nothing on the console)
# is booted once more, without "quiet" so that a second stall shows where;
# the first console is kept as NAME.stalled.log.
boot() {
	local kernel=$1 lsm=$2 name=$3 console="$logs/$3.log" append start rc img release want qrc stalled
	img=${images[$kernel]}
	release=$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^linux-image-/) { sub(/^linux-image-/, "", $i); print $i; exit } }' "$img/stamp")
	want=$(expectation "$kernel")
	append="root=/dev/vda rw console=ttyS0 panic=-1 nohz=off systemd.show_status=false"
	[ "$lsm" = default ] || append+=" lsm=$lsm"
	log "boot $name: $release lsm=$lsm, expecting $want (TCG; timeout ${timeout}s)"
	start=$(date +%s)
	rm -f "$logs/$name.stalled.log"
	run_qemu "$img" "$(cpu "$kernel")" "$append quiet loglevel=4" "$console"
	if [ "$stalled" = 1 ]; then
		log "boot $name: the suite had not started after ${start_timeout}s (QEMU stopped); booting again"
		mv "$console" "$logs/$name.stalled.log"
		run_qemu "$img" "$(cpu "$kernel")" "$append" "$console"
	fi
	rc=$qrc
	local elapsed=$(($(date +%s) - start)) fail=()
	[ "$rc" != 124 ] || fail+=("QEMU timed out after ${timeout}s")
	[ "$stalled" = 0 ] || fail+=("the suite had not started after ${start_timeout}s, twice")
	[ "$rc" = 124 ] || [ "$stalled" = 1 ] || [ "$rc" = 0 ] || fail+=("QEMU exited with status $rc")
	# The markers are matched anywhere in a line: the serial console
	# interleaves the firmware's and the kernel's output with the guest's
	# (a boot once ate the newline before the first marker).
	if ! grep -q 'SBX-E2E: kernel ' "$console"; then
		fail+=("the suite never started (no 'SBX-E2E: kernel' line)")
	elif ! grep -qF "SBX-E2E: kernel $release " "$console"; then
		fail+=("the guest did not run $release")
	fi
	grep -q 'SBX-E2E-RESULT: rc=0 ' "$console" || fail+=("no 'SBX-E2E-RESULT: rc=0' line (a check failed or the suite did not finish)")
	! grep -qE "$failed_check" "$console" || fail+=("$(grep -cE "$failed_check" "$console") check(s) failed")
	grep -q "SBX-E2E-SUITE root $want: pass=[1-9][0-9]* fail=0" "$console" || fail+=("the root suite did not report a pass of '$want'")
	grep -q "SBX-E2E-SUITE user $want: pass=[1-9][0-9]* fail=0" "$console" || fail+=("the user suite did not report a pass of '$want'")
	! grep -qE 'Oops|Kernel panic|BUG:|general protection fault' "$console" || fail+=("the kernel oopsed or panicked")
	echo "e2e-vm: $name: ${elapsed}s wall; console: $console"
	grep -E "SBX-E2E|$failed_check|^     \|" "$console" | sed "s/^/e2e-vm:   /" || true
	if [ ${#fail[@]} -gt 0 ]; then
		for f in "${fail[@]}"; do log "FAIL $name: $f"; done
		return 1
	fi
	log "PASS $name"
}

# main boots once per E2E_BOOTS entry. (A function called as "main; exit" on one
# line: bash has then read all it will ever run, so editing the script
# during a run cannot derail it; the function alone was not enough.)
main() {
	local failed=() b kernel lsm name start
	start=$(date +%s)
	build_images
	make_job_disk
	for b in $boots; do
		kernel=bookworm
		lsm=$b
		if [[ $b == *:* ]]; then
			kernel=${b%%:*}
			lsm=${b#*:}
		fi
		name="boot-$kernel-${lsm//,/-}"
		boot "$kernel" "$lsm" "$name" || failed+=("$name")
	done
	if [ ${#failed[@]} -gt 0 ]; then
		die "${failed[*]} (console logs in $logs)"
	fi
	log "PASS (boots: $boots; $(($(date +%s) - start))s)"
}
main; exit
