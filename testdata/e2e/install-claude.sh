#!/bin/sh
# install-claude.sh: install the real Claude Code CLI (npm
# @anthropic-ai/claude-code, a native binary from its platform package)
# for the end-to-end test of the built-in "claude" profile. No root, npm
# registry only.
#
# Everything lands in one npm prefix, testdata/e2e/.cache/claude-env/
# (gitignored): node_modules/.bin/claude.
#
# Pinned version: @anthropic-ai/claude-code 2.1.332.
#
# Idempotent: when the prefix holds this version nothing is done. A new
# install is built beside the prefix and renamed into place. Concurrent
# runs are serialised with flock.
#
# Usage: install-claude.sh [CACHE_DIR]   (default: the .cache beside this script)
# Prints the prefix on stdout. Exit status: 0 installed or already present,
# 3 the npm registry cannot be reached (callers may skip), 1 any other error.
set -eu

PKG=@anthropic-ai/claude-code
VERSION=2.1.332

here=$(cd "$(dirname "$0")" && pwd)
cache=${1:-$here/.cache}
prefix=$cache/claude-env

die() { echo "install-claude: $*" >&2; exit 1; }

mkdir -p "$cache"
exec 9>"$cache/claude-env.lock"
flock 9

installed() {
	[ -x "$prefix/node_modules/.bin/claude" ] &&
		grep -q "\"version\": \"$VERSION\"" "$prefix/node_modules/$PKG/package.json" 2>/dev/null
}
if installed; then
	echo "$prefix"
	exit 0
fi
command -v npm >/dev/null || die "npm is required"
if ! npm view "$PKG@$VERSION" version >/dev/null 2>&1; then
	echo "install-claude: the npm registry cannot be reached" >&2
	exit 3
fi
tmp=$(mktemp -d "$cache/claude-env.new.XXXXXX")
chmod 755 "$tmp" # mktemp makes it 0700: the rootless test pass runs the agent as another user
trap 'rm -rf "$tmp"' EXIT
npm install --silent --no-audit --no-fund --prefix "$tmp" "$PKG@$VERSION" >&2 ||
	die "npm install $PKG@$VERSION failed"
[ -x "$tmp/node_modules/.bin/claude" ] || die "no node_modules/.bin/claude after the install"
"$tmp/node_modules/.bin/claude" --version >/dev/null 2>&1 || die "claude --version fails"
rm -rf "$prefix"
mv "$tmp" "$prefix"
trap - EXIT
echo "$prefix"
