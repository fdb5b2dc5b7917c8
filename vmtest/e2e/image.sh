#!/usr/bin/env bash
# vmtest/e2e/image.sh builds (once) the Debian bookworm guest that
# vmtest/e2e/run.sh boots: a whole system with systemd as init, cgroup2 only,
# the stock 6.1 cloud kernel installed inside the root so that its initrd
# loads virtio, an ordinary user "tester" (uid 1000) with lingering (so
# user@1000.service runs at boot and delegates cgroup controllers), and the
# oneshot unit sbx-e2e.service that runs /job/guest.sh from a second disk and
# powers off.
#
# The result is cached outside git under $E2E_CACHE/image-$E2E_IMAGE_VERSION/
# (image.img, vmlinuz, initrd.img, stamp). The stamp is written last, so an
# interrupted build is redone from scratch, and a finished one is reused until
# the version string below changes (bump it when the guest's recipe changes).
#
# Prints the image directory on stdout. Needs root, debootstrap, e2fsprogs,
# and the network (the mirror apt already uses).
set -euo pipefail

E2E_IMAGE_VERSION=${E2E_IMAGE_VERSION:-bookworm-1}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=${E2E_CACHE:-$root/vmtest/.cache/e2e}
dir="$cache/image-$E2E_IMAGE_VERSION"

log() { echo "e2e-image: $*" >&2; }
die() { echo "e2e-image: FAIL: $*" >&2; exit 1; }
# shellcheck source=vmtest/e2e/apt.sh
. "$here/apt.sh"

if [ -s "$dir/stamp" ] && [ -s "$dir/image.img" ] && [ -s "$dir/vmlinuz" ] && [ -s "$dir/initrd.img" ]; then
	log "cached: $dir ($(cat "$dir/stamp"))"
	echo "$dir"
	exit 0
fi

[ "$(id -u)" = 0 ] || die "building the guest image needs root (debootstrap, chroot)"
for t in debootstrap:debootstrap mkfs.ext4:e2fsprogs apt-get:apt chroot:coreutils; do
	command -v "${t%%:*}" >/dev/null 2>&1 || die "${t%%:*} not found (apt-get install ${t#*:})"
done

mirror=$(apt_mirror)
[ -n "$mirror" ] || die "found no Debian mirror in apt's sources"

# The 6.1 cloud kernel the metapackage points to.
kpkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null |
	sed -n 's/^ *Depends: \(linux-image-6\.1\.0-[0-9]*-cloud-amd64\)$/\1/p' | head -n1)
[ -n "$kpkg" ] || die "apt knows no linux-image-6.1.0-*-cloud-amd64 (run apt-get update)"

for d in "$dir" "$dir.tmp"; do
	unmount_under "$d"
	rm -rf --one-file-system "$d"
done
mkdir -p "$dir.tmp"
tmp="$dir.tmp"
rootfs="$tmp/root"
mounted=()
cleanup() {
	local i
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
		umount -l "${mounted[$i]}" 2>/dev/null || true
	done
	unmount_under "$rootfs" # debootstrap's own, if it failed midway
}
trap cleanup EXIT

pkgs=systemd,systemd-sysv,dbus,dbus-user-session,libpam-systemd,systemd-container,python3,curl
pkgs+=,iproute2,procps,util-linux,libseccomp2,busybox,kmod,udev,ca-certificates,e2fsprogs
pkgs+=,initramfs-tools,linux-base,zstd
log "debootstrap bookworm from $mirror (a few minutes)"
debootstrap --variant=minbase --include="$pkgs" bookworm "$rootfs" "$mirror" >"$tmp/debootstrap.log" 2>&1 ||
	die "debootstrap failed; see the end of $tmp/debootstrap.log: $(tail -n 3 "$tmp/debootstrap.log" | tr '\n' ' ')"

log "installing $kpkg inside the root (its initrd must load virtio_blk)"
(cd "$tmp" && apt-get download "$kpkg" >/dev/null 2>&1) || die "apt-get download $kpkg failed"
cp "$tmp"/"$kpkg"_*.deb "$rootfs/tmp/kernel.deb"
for m in proc sys dev; do
	mount --bind "/$m" "$rootfs/$m"
	mounted+=("$rootfs/$m")
done
chroot "$rootfs" dpkg -i /tmp/kernel.deb >"$tmp/kernel.log" 2>&1 ||
	die "installing the kernel in the chroot failed; see $tmp/kernel.log"
cleanup
mounted=()
rm -f "$rootfs/tmp/kernel.deb" "$tmp"/"$kpkg"_*.deb
cp "$rootfs"/boot/vmlinuz-* "$tmp/vmlinuz"
cp "$rootfs"/boot/initrd.img-* "$tmp/initrd.img"
[ -s "$tmp/initrd.img" ] || die "no initrd was built for $kpkg"

log "configuring the guest"
echo sbx-e2e >"$rootfs/etc/hostname"
cat >"$rootfs/etc/fstab" <<'EOF'
/dev/vda / ext4 rw,errors=remount-ro 0 1
/dev/vdb /job ext4 defaults,nofail,x-systemd.device-timeout=30s 0 2
EOF
mkdir -p "$rootfs/job"
chroot "$rootfs" useradd -m -u 1000 -s /bin/bash tester
mkdir -p "$rootfs/var/lib/systemd/linger"
touch "$rootfs/var/lib/systemd/linger/tester"
# Quiet and quick: no login prompt on the serial console (it would
# interleave with the suite's output), no timers that wake apt or fsck.
for u in serial-getty@ttyS0.service getty@tty1.service apt-daily.timer apt-daily-upgrade.timer \
	e2scrub_all.timer fstrim.timer systemd-timesyncd.service; do
	ln -sf /dev/null "$rootfs/etc/systemd/system/$u"
done
cat >"$rootfs/etc/systemd/system/sbx-e2e.service" <<'EOF'
[Unit]
Description=sbx end-to-end suite from /job
After=multi-user.target user@1000.service
Wants=user@1000.service
RequiresMountsFor=/job
SuccessAction=poweroff-force
FailureAction=poweroff-force

[Service]
Type=oneshot
ExecStart=/bin/bash /job/guest.sh
StandardOutput=tty
StandardError=tty
TTYPath=/dev/ttyS0
TimeoutStartSec=1500

[Install]
WantedBy=multi-user.target
EOF
ln -sf /etc/systemd/system/sbx-e2e.service "$rootfs/etc/systemd/system/multi-user.target.wants/sbx-e2e.service"
chroot "$rootfs" apt-get clean

log "making the disk"
truncate -s 4G "$tmp/image.img"
mkfs.ext4 -q -F -d "$rootfs" "$tmp/image.img" || die "mkfs.ext4 -d failed"
rm -rf --one-file-system "$rootfs"
echo "$E2E_IMAGE_VERSION $kpkg $(date -u +%FT%TZ)" >"$tmp/stamp"
mv "$tmp" "$dir"
log "built $dir"
echo "$dir"
