#!/usr/bin/env bash
# vmtest/run.sh runs the BPF tests of bpf/lsm and bpf/netwall inside a real Debian kernel under
# QEMU (TCG, no KVM needed): the BPF LSM tests, because a host kernel may
# refuse BPF LSM programs (or not have bpf in its LSM list), and the network
# wall's, to prove it on an older kernel (6.1) than the host's. It
#   1. fetches the kernel package with apt-get download (cached, never
#      committed, under vmtest/.cache/) and unpacks it with dpkg -x;
#   2. builds the static test binaries (CGO_ENABLED=0 go test -c, one per
#      package: lsm.test and netwall.test, their usual names);
#   3. packs an initramfs: busybox-static, the test binaries and an /init that
#      mounts proc, sysfs, devtmpfs, devpts, securityfs, bpffs, cgroup2 and
#      tmpfs, brings lo up, runs the tests as root and powers off;
#   4. boots it with lsm=landlock,lockdown,capability,bpf and judges the
#      console: the result marker with rc=0, at least one passed TestLSM and
#      one passed TestNet,
#      no FAIL, Oops or panic. Exits non-zero otherwise.
#
# Settings (environment):
#   VMTEST_KERNEL_PKG  kernel package (default linux-image-6.1.0-57-cloud-amd64,
#                      falling back to the 6.1 cloud kernel apt knows if that
#                      one is gone from the archive)
#   VMTEST_RUN         -test.run pattern (default ^(TestLSM|TestNet|TestOpenNet))
#   VMTEST_TIMEOUT     seconds before QEMU is killed (default 600)
#   VMTEST_CACHE       cache directory (default vmtest/.cache)
#   VMTEST_LSM         the lsm= boot parameter (default
#                      landlock,lockdown,capability,bpf; drop bpf to see the
#                      tier refuse to start)
#   VMTEST_KEEP_LOG    path to copy the console log to
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${VMTEST_CACHE:-$root/vmtest/.cache}
default_pkg=linux-image-6.1.0-57-cloud-amd64
pkg=${VMTEST_KERNEL_PKG:-$default_pkg}
run=${VMTEST_RUN:-^(TestLSM|TestNet|TestOpenNet)}
timeout=${VMTEST_TIMEOUT:-600}
lsm=${VMTEST_LSM:-landlock,lockdown,capability,bpf}
marker=SBX-VMTEST

log() { echo "vmtest: $*" >&2; }
die() { echo "vmtest: $*" >&2; exit 1; }

need() { command -v "$1" >/dev/null 2>&1 || die "$1 not found (apt-get install $2)"; }
need qemu-system-x86_64 qemu-system-x86
need cpio cpio
need dpkg dpkg
need apt-get apt
need go golang
need timeout coreutils

case $run in
*[[:space:]]*) die "VMTEST_RUN must not contain spaces: $run" ;;
esac

busybox=/bin/busybox
[ -x "$busybox" ] || die "$busybox not found (apt-get install busybox-static)"
if ldd "$busybox" >/dev/null 2>&1; then
	die "$busybox is dynamically linked (apt-get install busybox-static)"
fi

mkdir -p "$cache"

# fetch_kernel PKG downloads and unpacks PKG's vmlinuz into $cache/PKG.
fetch_kernel() {
	local p=$1 dl="$cache/dl" deb
	rm -rf "$dl" && mkdir -p "$dl"
	if ! (cd "$dl" && apt-get download "$p" >/dev/null 2>&1); then
		log "apt-get download $p failed; running apt-get update"
		apt-get update -qq >/dev/null 2>&1 || true
		(cd "$dl" && apt-get download "$p" >/dev/null 2>&1) || return 1
	fi
	deb=$(ls "$dl"/"$p"_*.deb 2>/dev/null | head -n1)
	[ -n "$deb" ] || return 1
	rm -rf "$cache/$p.tmp" && mkdir -p "$cache/$p.tmp"
	dpkg -x "$deb" "$cache/$p.tmp/root"
	cp "$cache/$p.tmp"/root/boot/vmlinuz-* "$cache/$p.tmp/vmlinuz"
	basename "$deb" >"$cache/$p.tmp/deb"
	rm -rf "$cache/$p.tmp/root" "$dl"
	rm -rf "$cache/$p" && mv "$cache/$p.tmp" "$cache/$p"
}

if [ ! -s "$cache/$pkg/vmlinuz" ]; then
	log "fetching $pkg"
	if ! fetch_kernel "$pkg"; then
		[ -z "${VMTEST_KERNEL_PKG:-}" ] || die "cannot download $pkg"
		# The pinned ABI left the archive: take the 6.1 cloud kernel that the
		# metapackage points to now.
		alt=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null |
			sed -n 's/^ *Depends: \(linux-image-6\.1\.0-[0-9]*-cloud-amd64\)$/\1/p' | head -n1)
		[ -n "$alt" ] || die "cannot download $pkg and apt knows no other 6.1 cloud kernel"
		log "falling back to $alt"
		pkg=$alt
		[ -s "$cache/$pkg/vmlinuz" ] || fetch_kernel "$pkg" || die "cannot download $pkg"
	fi
fi
kernel="$cache/$pkg/vmlinuz"
log "kernel $(cat "$cache/$pkg/deb" 2>/dev/null || echo "$pkg")"

work=$(mktemp -d "$cache/run.XXXXXX")
trap 'rm -rf "$work"' EXIT

fs="$work/rootfs"
mkdir -p "$fs"/{bin,dev,proc,sys,tmp,run,etc,root,test}
# The BPF packages whose tests the VM runs (each binary keeps its usual
# name: the tests expect it as the comm of their helper processes).
pkgs="lsm netwall"
log "building the test binaries"
for p in $pkgs; do
	(cd "$root" && CGO_ENABLED=0 go test -c -o "$fs/test/$p.test" "./bpf/$p/")
done
cp "$busybox" "$fs/bin/busybox"
echo 'root:x:0:0:root:/root:/bin/sh' >"$fs/etc/passwd"
echo 'root:x:0:' >"$fs/etc/group"
cat >"$fs/init" <<INIT
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin HOME=/root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts
mount -t devpts -o ptmxmode=0666 devpts /dev/pts
mount -t securityfs securityfs /sys/kernel/security
mount -t bpf bpf /sys/fs/bpf
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t tmpfs tmpfs /tmp
ip link set lo up
# Addresses beyond loopback for the forwarder tests (bpftest.HostAddrs).
ip addr add 198.18.0.1/32 dev lo
ip addr add 2001:2::1/128 dev lo
echo "$marker: kernel \$(uname -r), lsm=\$(cat /sys/kernel/security/lsm), booted in \$(cut -d' ' -f1 /proc/uptime) s"
cd /test
rc=0
for p in $pkgs; do
	SBX_VMTEST=1 ./\$p.test -test.v -test.count=1 -test.timeout=5m -test.run '$run' </dev/null || rc=\$?
done
echo "$marker-RESULT: rc=\$rc (guest uptime \$(cut -d' ' -f1 /proc/uptime) s)"
poweroff -f
INIT
chmod 0755 "$fs/init"
(cd "$fs" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initramfs.gz"

console="$work/console.log"
log "booting (TCG; timeout ${timeout}s)"
start=$(date +%s)
set +e
timeout "$timeout" qemu-system-x86_64 -nic none -machine pc -accel tcg -cpu max,la57=off \
	-m 1024 -smp 2 -nographic -no-reboot -kernel "$kernel" -initrd "$work/initramfs.gz" \
	-append "console=ttyS0 lsm=$lsm panic=-1 quiet" \
	</dev/null 2>&1 | tr -d '\r' | sed -u 's/\x1b\[[0-9;?]*[A-Za-z]//g; s/\x1bc//g' | tee "$console"
qemu_rc=${PIPESTATUS[0]}
set -e
elapsed=$(($(date +%s) - start))
[ -z "${VMTEST_KEEP_LOG:-}" ] || cp "$console" "$VMTEST_KEEP_LOG"

fail=()
[ "$qemu_rc" != 124 ] || fail+=("QEMU timed out after ${timeout}s")
[ "$qemu_rc" = 124 ] || [ "$qemu_rc" = 0 ] || fail+=("QEMU exited with $qemu_rc")
grep -q "^$marker-RESULT: rc=0 " "$console" || fail+=("no '$marker-RESULT: rc=0' marker (tests failed or did not finish)")
grep -q '^--- PASS: TestLSM' "$console" || fail+=("no TestLSM test passed")
if [[ -z ${VMTEST_RUN:-} ]]; then
	grep -q '^--- PASS: TestNet' "$console" || fail+=("no TestNet test passed")
fi
! grep -qE '^(--- FAIL|FAIL)' "$console" || fail+=("a test failed")
! grep -qE '^--- SKIP' "$console" || fail+=("a test skipped inside the VM")
! grep -qE 'Oops|Kernel panic|BUG:|general protection fault|Call Trace' "$console" || fail+=("the kernel oopsed or panicked")

echo "vmtest: summary ($elapsed s wall for boot and tests):"
grep -E "^($marker|--- (PASS|FAIL|SKIP)|PASS\$|FAIL|ok )" "$console" | sed 's/^/vmtest:   /' || true
if [ ${#fail[@]} -gt 0 ]; then
	for f in "${fail[@]}"; do log "FAIL: $f"; done
	exit 1
fi
log "PASS"
