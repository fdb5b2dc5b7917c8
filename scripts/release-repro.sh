#!/usr/bin/env bash
# release-repro.sh: prove the release is reproducible. Builds it twice:
# once from this tree, once from a clean "git archive" export of HEAD in
# another directory with an empty Go build cache, same VERSION and
# SOURCE_DATE_EPOCH; the two SHA256SUMS must be identical. ARCHES as for
# release.sh. The tree must be clean (the export is HEAD).
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "release-repro: $*" >&2; exit 1; }
[ -z "$(git status --porcelain --untracked-files=no)" ] || die "uncommitted changes: commit first (the second build is of HEAD)"

export VERSION=${VERSION:-$(git describe --tags --always)}
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
COMMIT=$(git rev-parse HEAD)
export COMMIT
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT

echo "release-repro: build 1: this tree, the usual build cache" >&2
DIST=$tmp/a ./scripts/release.sh >/dev/null

echo "release-repro: build 2: git archive HEAD in $tmp/src, empty GOCACHE" >&2
mkdir -p "$tmp/src"
git archive HEAD | tar -x -C "$tmp/src"
(cd "$tmp/src" && GOCACHE=$tmp/gocache DIST=$tmp/b ./scripts/release.sh >/dev/null)

cat "$tmp/a/SHA256SUMS"
if cmp -s "$tmp/a/SHA256SUMS" "$tmp/b/SHA256SUMS"; then
	echo "release-repro: identical: both builds gave the SHA256SUMS above"
else
	echo "release-repro: the second build differs:" >&2
	diff "$tmp/a/SHA256SUMS" "$tmp/b/SHA256SUMS" >&2 || true
	for d in "$tmp"/a/sbx-*/; do
		n=$(basename "$d")
		diff -r "$tmp/a/$n" "$tmp/b/$n" >&2 || true
	done
	exit 1
fi
