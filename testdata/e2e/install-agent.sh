#!/bin/sh
# install-agent.sh: install a real coding agent's CLI from npm for the
# end-to-end test of its built-in profile (install-claude.sh,
# install-codex.sh, install-gemini.sh and install-opencode.sh name the
# agent, its package and the pinned version). No root, npm registry only.
#
# Everything lands in one npm prefix, CACHE_DIR/NAME-env/ (default:
# testdata/e2e/.cache, gitignored): node_modules/.bin/NAME.
#
# Idempotent: when the prefix holds this version nothing is done. A new
# install is built beside the prefix and renamed into place. Concurrent
# runs are serialised with flock.
#
# Usage: install-agent.sh NAME PACKAGE VERSION [CACHE_DIR]
# Prints the prefix on stdout. Exit status: 0 installed or already present,
# 3 the npm registry cannot be reached (callers may skip), 1 any other error.
set -eu

[ $# -ge 3 ] || { echo "usage: install-agent.sh NAME PACKAGE VERSION [CACHE_DIR]" >&2; exit 1; }
NAME=$1
PKG=$2
VERSION=$3

here=$(cd "$(dirname "$0")" && pwd)
cache=${4:-$here/.cache}
prefix=$cache/$NAME-env
bin=node_modules/.bin/$NAME

die() { echo "install-$NAME: $*" >&2; exit 1; }

mkdir -p "$cache"
exec 9>"$cache/$NAME-env.lock"
flock 9

installed() {
	[ -x "$prefix/$bin" ] &&
		grep -q "\"version\": \"$VERSION\"" "$prefix/node_modules/$PKG/package.json" 2>/dev/null
}
if installed; then
	echo "$prefix"
	exit 0
fi
command -v npm >/dev/null || die "npm is required"
if ! npm view "$PKG@$VERSION" version >/dev/null 2>&1; then
	echo "install-$NAME: the npm registry cannot be reached" >&2
	exit 3
fi
tmp=$(mktemp -d "$cache/$NAME-env.new.XXXXXX")
chmod 755 "$tmp" # mktemp makes it 0700: the rootless test pass runs the agent as another user
trap 'rm -rf "$tmp"' EXIT
npm install --silent --no-audit --no-fund --prefix "$tmp" "$PKG@$VERSION" >&2 ||
	die "npm install $PKG@$VERSION failed"
[ -x "$tmp/$bin" ] || die "no $bin after the install"
"$tmp/$bin" --version >/dev/null 2>&1 || die "$NAME --version fails"
rm -rf "$prefix"
mv "$tmp" "$prefix"
trap - EXIT
echo "$prefix"
