#!/bin/sh
# install-gemini.sh: install the real Gemini CLI (npm
# @google/gemini-cli, a Node.js program)
# for the end-to-end test of the built-in "gemini" profile. No root, npm
# registry only.
#
# Everything lands in one npm prefix, testdata/e2e/.cache/gemini-env/
# (gitignored): node_modules/.bin/gemini.
#
# Pinned version: @google/gemini-cli 0.61.0.
#
# Idempotent: when the prefix holds this version nothing is done. A new
# install is built beside the prefix and renamed into place. Concurrent
# runs are serialised with flock.
#
# Usage: install-gemini.sh [CACHE_DIR]   (default: the .cache beside this script)
# Prints the prefix on stdout. Exit status: 0 installed or already present,
# 3 the npm registry cannot be reached (callers may skip), 1 any other error.
set -eu

PKG=@google/gemini-cli
VERSION=0.61.0

here=$(cd "$(dirname "$0")" && pwd)
cache=${1:-$here/.cache}
prefix=$cache/gemini-env

die() { echo "install-gemini: $*" >&2; exit 1; }

mkdir -p "$cache"
exec 9>"$cache/gemini-env.lock"
flock 9

installed() {
	[ -x "$prefix/node_modules/.bin/gemini" ] &&
		grep -q "\"version\": \"$VERSION\"" "$prefix/node_modules/$PKG/package.json" 2>/dev/null
}
if installed; then
	echo "$prefix"
	exit 0
fi
command -v npm >/dev/null || die "npm is required"
if ! npm view "$PKG@$VERSION" version >/dev/null 2>&1; then
	echo "install-gemini: the npm registry cannot be reached" >&2
	exit 3
fi
tmp=$(mktemp -d "$cache/gemini-env.new.XXXXXX")
chmod 755 "$tmp" # mktemp makes it 0700: the rootless test pass runs the agent as another user
trap 'rm -rf "$tmp"' EXIT
npm install --silent --no-audit --no-fund --prefix "$tmp" "$PKG@$VERSION" >&2 ||
	die "npm install $PKG@$VERSION failed"
[ -x "$tmp/node_modules/.bin/gemini" ] || die "no node_modules/.bin/gemini after the install"
"$tmp/node_modules/.bin/gemini" --version >/dev/null 2>&1 || die "gemini --version fails"
rm -rf "$prefix"
mv "$tmp" "$prefix"
trap - EXIT
echo "$prefix"
