#!/usr/bin/env bash
# install-test.sh SRC: install sbx into temporary DESTDIRs and check every
# file, then uninstall and check nothing is left. SRC is either a directory
# in the release layout (make docs: bin/pkg) driven through
# contrib/release/install.sh, or a release tarball driven through its own
# Makefile ("make -C sbx-* install"), as a user would.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "install-test: $*" >&2; exit 1; }
[ $# = 1 ] || die "usage: install-test.sh DIR|TARBALL"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run_install ACTION DESTDIR PREFIX APPARMOR
if [ -d "$1" ]; then
	src=$(realpath "$1")
	run_install() {
		SBX_SRC=$src DESTDIR=$2 PREFIX=$3 APPARMOR=$4 ./contrib/release/install.sh "$1" >/dev/null
	}
else
	tar -xzf "$1" -C "$tmp"
	src=$(echo "$tmp"/sbx-*)
	[ -f "$src/Makefile" ] || die "$1: no sbx-*/Makefile in the tarball"
	run_install() {
		APPARMOR=$4 make -s -C "$src" "$1" DESTDIR="$2" PREFIX="$3" >/dev/null
	}
fi

fails=0
expect() { # expect DESCRIPTION TEST...
	local what=$1
	shift
	if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fails=$((fails + 1)); fi
}

d=$tmp/root1
run_install install "$d" /usr/local yes
expect "binary installed and executable" test -x "$d/usr/local/bin/sbx"
expect "installed binary runs (sbx version)" sh -c "'$d/usr/local/bin/sbx' version | grep -q '^sbx '"
expect "man page" test -s "$d/usr/local/share/man/man1/sbx.1"
expect "bash completion" grep -q 'complete -F _sbx sbx' "$d/usr/local/share/bash-completion/completions/sbx"
expect "zsh completion" grep -q '^#compdef sbx' "$d/usr/local/share/zsh/site-functions/_sbx"
expect "fish completion" grep -q '^complete -c sbx' "$d/usr/local/share/fish/vendor_completions.d/sbx.fish"
expect "AppArmor profile for /usr/local/bin/sbx" grep -q '^profile sbx /usr/local/bin/sbx ' "$d/etc/apparmor.d/sbx"
if command -v man >/dev/null; then
	expect "man renders the installed page" sh -c "MANWIDTH=80 man -l '$d/usr/local/share/man/man1/sbx.1' 2>&1 | grep -q -- '--workspace'"
fi
run_install uninstall "$d" /usr/local yes
left=$(find "$d" -type f | sed "s#^$d##")
expect "uninstall leaves no file (left: ${left:-none})" test -z "$left"

d=$tmp/root2
run_install install "$d" /opt/sbx yes
expect "PREFIX=/opt/sbx: binary in /opt/sbx/bin" test -x "$d/opt/sbx/bin/sbx"
expect "PREFIX=/opt/sbx: the profile names /opt/sbx/bin/sbx" grep -q '^profile sbx /opt/sbx/bin/sbx ' "$d/etc/apparmor.d/sbx"

d=$tmp/root3
run_install install "$d" /usr/local no
expect "APPARMOR=no: no profile" test ! -e "$d/etc/apparmor.d/sbx"

[ "$fails" = 0 ] || die "$fails check(s) failed"
echo "install-test: all checks passed"
