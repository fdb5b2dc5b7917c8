#!/bin/sh
# install.sh install|uninstall: put sbx, its man page, its bash/zsh/fish
# completions and (where AppArmor is present) its AppArmor profile in place,
# or remove them. Used by the release tarball's Makefile and by the source
# tree's "make install".
#
# Environment:
#   PREFIX        install prefix (default /usr/local)
#   DESTDIR       staging root prepended to every path (packaging; default none)
#   SBX_SRC       directory holding sbx, sbx.1, completions/ and apparmor/sbx
#                 (default: this script's directory, the release layout)
#   APPARMOR      auto (default: when /etc/apparmor.d exists), yes or no
#   APPARMOR_DIR  where profiles go (default /etc/apparmor.d)
set -eu

PREFIX=${PREFIX:-/usr/local}
DESTDIR=${DESTDIR:-}
SBX_SRC=${SBX_SRC:-$(dirname "$0")}
APPARMOR=${APPARMOR:-auto}
APPARMOR_DIR=${APPARMOR_DIR:-/etc/apparmor.d}

bindir=$DESTDIR$PREFIX/bin
mandir=$DESTDIR$PREFIX/share/man/man1
bashdir=$DESTDIR$PREFIX/share/bash-completion/completions
zshdir=$DESTDIR$PREFIX/share/zsh/site-functions
fishdir=$DESTDIR$PREFIX/share/fish/vendor_completions.d
aadir=$DESTDIR$APPARMOR_DIR

die() { echo "install.sh: $*" >&2; exit 1; }

# want_apparmor: whether to handle the profile (the host, not DESTDIR,
# decides in auto mode: /etc/apparmor.d exists where AppArmor is installed).
want_apparmor() {
	case $APPARMOR in
	yes) return 0 ;;
	no) return 1 ;;
	auto) [ -d "$APPARMOR_DIR" ] ;;
	*) die "APPARMOR=$APPARMOR: want auto, yes or no" ;;
	esac
}

# apparmor_live: loading or unloading profiles applies to this system:
# no DESTDIR, the parser present, AppArmor enabled in the kernel.
apparmor_live() {
	[ -z "$DESTDIR" ] && command -v apparmor_parser >/dev/null 2>&1 &&
		[ -e /sys/kernel/security/apparmor/profiles ]
}

do_install() {
	for f in sbx sbx.1 completions/sbx.bash completions/_sbx completions/sbx.fish apparmor/sbx; do
		[ -f "$SBX_SRC/$f" ] || die "$SBX_SRC/$f missing"
	done
	install -d "$bindir" "$mandir" "$bashdir" "$zshdir" "$fishdir"
	install -m 755 "$SBX_SRC/sbx" "$bindir/sbx"
	install -m 644 "$SBX_SRC/sbx.1" "$mandir/sbx.1"
	install -m 644 "$SBX_SRC/completions/sbx.bash" "$bashdir/sbx"
	install -m 644 "$SBX_SRC/completions/_sbx" "$zshdir/_sbx"
	install -m 644 "$SBX_SRC/completions/sbx.fish" "$fishdir/sbx.fish"
	echo "installed $bindir/sbx, its man page and completions"
	if want_apparmor; then
		# The profile names the binary by path: point it at this one.
		install -d "$aadir"
		sed "s#^profile sbx /usr/local/bin/sbx #profile sbx $PREFIX/bin/sbx #" \
			"$SBX_SRC/apparmor/sbx" >"$aadir/sbx.tmp"
		grep -q "^profile sbx $PREFIX/bin/sbx " "$aadir/sbx.tmp" ||
			{ rm -f "$aadir/sbx.tmp"; die "apparmor/sbx: no 'profile sbx /usr/local/bin/sbx' line to adapt"; }
		chmod 644 "$aadir/sbx.tmp"
		mv "$aadir/sbx.tmp" "$aadir/sbx"
		echo "installed $aadir/sbx (lets $PREFIX/bin/sbx create user namespaces: rootless sbx on Ubuntu 23.10+)"
		if apparmor_live; then
			apparmor_parser -r "$aadir/sbx" ||
				echo "install.sh: warning: apparmor_parser -r $aadir/sbx failed; rootless sbx may be refused user namespaces" >&2
		fi
	fi
}

do_uninstall() {
	rm -f "$bindir/sbx" "$mandir/sbx.1" "$bashdir/sbx" "$zshdir/_sbx" "$fishdir/sbx.fish"
	if [ -f "$aadir/sbx" ]; then
		if apparmor_live; then
			apparmor_parser -R "$aadir/sbx" 2>/dev/null || true
		fi
		rm -f "$aadir/sbx"
	fi
	echo "removed sbx from $DESTDIR$PREFIX"
}

case ${1:-} in
install) do_install ;;
uninstall) do_uninstall ;;
*) die "usage: install.sh install|uninstall" ;;
esac
