#!/usr/bin/env bash
# oldroot-test.sh SBX [DYNAMIC_SBX]: prove that the static release binary
# SBX runs on an old userland: Debian 11 (bullseye, glibc 2.31, older than
# the 2.34 a dynamic sbx built on Debian 12 needs). Runs, as root, inside a
# chroot of a debootstrapped minbase bullseye root (cached under
# .cache/oldroot/, outside git):
#   sbx version; sbx run -- /bin/true; a program's status passing through;
#   seccomp in force inside the sandbox (Seccomp: 2 in /proc/self/status).
# Given DYNAMIC_SBX (bin/sbx of "make build"), it also checks that that one
# does NOT run there (the control: the chroot really is an old glibc).
#
# The chroot gets /proc, /sys (with the cgroup mounts), /dev, and an empty
# tmpfs on /run for sbx's state (/run/sbx). Its root is bind-mounted onto
# itself: runc makes / a private mount, which fails (EINVAL) on a chroot
# whose / is not a mount point. Everything happens in a private mount
# namespace (unshare -m), so nothing is left mounted on the host, whatever
# happens.
#
# Environment: SBX_OLDROOT_SUITE (default bullseye), SBX_OLDROOT_MIRROR
# (default: the Debian mirror apt already uses), SBX_OLDROOT_CACHE (default
# .cache/oldroot).
set -euo pipefail

die() { echo "oldroot-test: $*" >&2; exit 1; }

[ $# -ge 1 ] || die "usage: oldroot-test.sh SBX [DYNAMIC_SBX]"
[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, mounts)"
sbx=$(realpath "$1")
dyn=${2:+$(realpath "$2")}
[ -x "$sbx" ] || die "$1: not an executable"
cd "$(dirname "$0")/.."

suite=${SBX_OLDROOT_SUITE:-bullseye}
cache=${SBX_OLDROOT_CACHE:-$PWD/.cache/oldroot}
root=$cache/$suite

# mirror: the Debian archive apt already uses (deb822 or one-line sources).
mirror() {
	local m
	m=$(cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
		grep -vE '^[[:space:]]*#' |
		grep -oE 'https?://[^ ]+/debian/?' | grep -v security | head -n 1 || true)
	echo "${m:-http://deb.debian.org/debian}"
}

if [ -z "${SBX_OLDROOT_INNS:-}" ]; then
	if [ ! -e "$root/.complete" ]; then
		command -v debootstrap >/dev/null || die "debootstrap missing (apt-get install debootstrap)"
		m=${SBX_OLDROOT_MIRROR:-$(mirror)}
		echo "oldroot-test: debootstrap --variant=minbase $suite from $m (once; cached in $root)" >&2
		rm -rf "$root.tmp"
		mkdir -p "$cache"
		debootstrap --variant=minbase "$suite" "$root.tmp" "$m" >"$cache/$suite.log" 2>&1 ||
			die "debootstrap failed; see $cache/$suite.log"
		touch "$root.tmp/.complete"
		mv "$root.tmp" "$root"
	fi
	exec env SBX_OLDROOT_INNS=1 unshare -m --propagation private -- "$0" "$@"
fi

# From here on, in a private mount namespace.
fails=0
errlog=$(mktemp)
trap 'rm -f "$errlog"' EXIT
check() { # check NAME WANT_STATUS CMD...: run CMD, compare its status
	local name=$1 want=$2 got=0
	shift 2
	"$@" 2>"$errlog" || got=$?
	if [ "$got" = "$want" ]; then
		echo "ok   $name (status $got)"
	else
		echo "FAIL $name: status $got, want $want; its stderr:"
		sed 's/^/     /' "$errlog"
		fails=$((fails + 1))
	fi
}

mount --bind "$root" "$root"
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"
mount -t tmpfs -o mode=755 tmpfs "$root/run"
mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
install -m 755 "$sbx" "$root/run/sbx-under-test"
mkdir -p "$root/tmp/ws"

glibc=$(chroot "$root" /usr/bin/ldd --version | sed -n 1p)
echo "userland: Debian $(cat "$root/etc/debian_version"), $glibc"
echo "binary:   $(file -b "$sbx" | cut -d, -f1-4)"

v=$(chroot "$root" /run/sbx-under-test version 2>&1) || true
if [[ $v == "sbx "* ]]; then
	echo "ok   sbx version: $v"
else
	echo "FAIL sbx version: $v"
	fails=$((fails + 1))
fi
check "sbx run -- /bin/true" 0 chroot "$root" /run/sbx-under-test run --workspace /tmp/ws -- /bin/true
check "sbx run -- sh -c 'exit 7' (status passes through)" 7 chroot "$root" /run/sbx-under-test run --workspace /tmp/ws -- /bin/sh -c 'exit 7'
check "seccomp filter in force inside" 0 chroot "$root" /run/sbx-under-test run --workspace /tmp/ws -- /bin/grep -q '^Seccomp:[[:space:]]*2' /proc/self/status
check "workspace read-only by default (touch refused)" 1 chroot "$root" /run/sbx-under-test run --workspace /tmp/ws -- /usr/bin/touch /tmp/ws/f

if [ -n "$dyn" ]; then
	install -m 755 "$dyn" "$root/run/sbx-dynamic"
	out=$(chroot "$root" /run/sbx-dynamic version 2>&1) && st=0 || st=$?
	if [ "$st" != 0 ] && grep -q 'GLIBC_' <<<"$out"; then
		echo "ok   control: the dynamic build fails here ($(grep -o 'GLIBC_[0-9.]*' <<<"$out" | sort -u | tr '\n' ' '))"
	else
		echo "FAIL control: the dynamic build $dyn ran (status $st) or failed otherwise: $out"
		fails=$((fails + 1))
	fi
fi

[ "$fails" = 0 ] || die "$fails check(s) failed"
echo "oldroot-test: all checks passed"
