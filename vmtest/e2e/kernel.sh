#!/usr/bin/env bash
# vmtest/e2e/kernel.sh SUITE builds (once) a copy of the guest image.sh
# builds with another Debian kernel installed, for the kernel matrix of
# vmtest/e2e/run.sh. SUITE names where the kernel comes from, on the mirror
# apt already uses:
#   bullseye            Debian 11's 5.10 cloud kernel (bullseye and
#                       bullseye-security)
#   bookworm-backports  bookworm-backports' cloud kernel (6.12 when written)
# The package is the one that suite's linux-image-cloud-amd64 depends on. It
# is found and downloaded with a private apt state (its own sources, lists
# and cache in the build directory), so the host's apt sources and lists
# are never changed. It is installed with dpkg -i --force-depends inside the
# copied root (loop-mounted and chrooted, so initramfs-tools builds its
# initrd with virtio and its modules land in /lib/modules); the userland
# stays bookworm's.
#
# Cached as $E2E_CACHE/<image.sh's directory>+SUITE-$E2E_KERNEL_VERSION/
# (image.img, vmlinuz, initrd.img, stamp; the stamp, written last, names the
# kernel package): reused until the base image or the version string below
# changes (bump it when this recipe changes). Prints the directory on
# stdout. Needs root, loop devices, e2fsprogs and the network.
set -euo pipefail

suite=${1:?usage: kernel.sh bullseye|bookworm-backports}
E2E_KERNEL_VERSION=${E2E_KERNEL_VERSION:-1}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=${E2E_CACHE:-$root/vmtest/.cache/e2e}
# shellcheck source=vmtest/e2e/apt.sh
. "$here/apt.sh"

log() { echo "e2e-kernel: $*" >&2; }
die() { echo "e2e-kernel: FAIL: $*" >&2; exit 1; }

case $suite in
bullseye) suites=(bullseye) security=(bullseye-security) ;;
bookworm-backports) suites=(bookworm-backports) security=() ;;
*) die "unknown kernel suite $suite (bullseye or bookworm-backports)" ;;
esac

export E2E_CACHE="$cache"
base=$(bash "$here/image.sh") || die "could not build the base guest image"
dir="$base+$suite-$E2E_KERNEL_VERSION"
if [ -s "$dir/stamp" ] && [ -s "$dir/image.img" ] && [ -s "$dir/vmlinuz" ] && [ -s "$dir/initrd.img" ]; then
	log "cached: $dir ($(cat "$dir/stamp"))"
	echo "$dir"
	exit 0
fi

[ "$(id -u)" = 0 ] || die "installing a kernel into the guest image needs root (mount, chroot)"
for t in apt-get:apt chroot:coreutils mount:mount losetup:mount; do
	command -v "${t%%:*}" >/dev/null 2>&1 || die "${t%%:*} not found (apt-get install ${t#*:})"
done
mirror=$(apt_mirror)
[ -n "$mirror" ] || die "found no Debian mirror in apt's sources"
secmirror=$(apt_mirror security)

for d in "$dir" "$dir.tmp"; do
	unmount_under "$d"
	rm -rf --one-file-system "$d"
done
tmp="$dir.tmp"
mnt="$tmp/mnt"
mkdir -p "$mnt" "$tmp/apt/sources" "$tmp/apt/lists/partial" "$tmp/apt/cache/archives/partial"
cleanup() { unmount_under "$mnt"; }
trap cleanup EXIT

# The private apt state: only this suite's sources.
{
	printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$mirror" "${suites[*]}"
	if [ ${#security[@]} -gt 0 ] && [ -n "$secmirror" ]; then
		printf '\nTypes: deb\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$secmirror" "${security[*]}"
	fi
} >"$tmp/apt/sources/kernel.sources"
apt_opts=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$tmp/apt/sources"
	-o "Dir::State::Lists=$tmp/apt/lists" -o "Dir::Cache=$tmp/apt/cache" -o APT::Sandbox::User=root)
log "reading $suite's package lists (private apt state)"
apt-get "${apt_opts[@]}" update >"$tmp/apt.log" 2>&1 || die "apt-get update for $suite failed; see $tmp/apt.log"
kpkg=$(apt-cache "${apt_opts[@]}" depends linux-image-cloud-amd64 2>/dev/null |
	sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-cloud-amd64\)$/\1/p' | head -n1)
[ -n "$kpkg" ] || die "$suite has no linux-image-cloud-amd64 pointing to a kernel package"
kver=${kpkg#linux-image-}
(cd "$tmp" && apt-get "${apt_opts[@]}" download "$kpkg" >>"$tmp/apt.log" 2>&1) || die "apt-get download $kpkg failed; see $tmp/apt.log"

log "installing $kpkg into a copy of $base"
cp --sparse=always "$base/image.img" "$tmp/image.img"
mount -o loop "$tmp/image.img" "$mnt" || die "could not loop-mount the image copy (loop devices?)"
for m in proc sys dev; do mount --bind "/$m" "$mnt/$m"; done
cp "$tmp"/"$kpkg"_*.deb "$mnt/tmp/kernel.deb"
chroot "$mnt" dpkg -i --force-depends /tmp/kernel.deb >"$tmp/kernel.log" 2>&1 ||
	die "installing $kpkg in the chroot failed; see $tmp/kernel.log"
rm -f "$mnt/tmp/kernel.deb"
[ -s "$mnt/boot/vmlinuz-$kver" ] && [ -s "$mnt/boot/initrd.img-$kver" ] || die "no vmlinuz/initrd for $kver; see $tmp/kernel.log"
# root=/dev/vda needs virtio_blk, built in or in the initrd.
if ! grep -q '^CONFIG_VIRTIO_BLK=y' "$mnt/boot/config-$kver"; then
	chroot "$mnt" lsinitramfs "/boot/initrd.img-$kver" >"$tmp/initrd.list" || die "lsinitramfs failed"
	grep -q '/virtio_blk\.ko' "$tmp/initrd.list" || die "the initrd for $kver lacks virtio_blk"
fi
cp "$mnt/boot/vmlinuz-$kver" "$tmp/vmlinuz"
cp "$mnt/boot/initrd.img-$kver" "$tmp/initrd.img"
cleanup
rm -rf "$tmp/apt" "$tmp"/*.deb "$tmp/initrd.list" "$mnt"
echo "$(basename "$base") + $suite $kpkg $(date -u +%FT%TZ)" >"$tmp/stamp"
mv "$tmp" "$dir"
log "built $dir"
echo "$dir"
