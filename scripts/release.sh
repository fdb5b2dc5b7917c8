#!/usr/bin/env bash
# release.sh: build sbx's release into $DIST (default dist/): for each of
# $ARCHES (default "amd64 arm64") a static, reproducible binary with
# libseccomp and glibc linked in (no glibc version floor, no libseccomp.so
# needed), packed with its man page, completions, AppArmor profile, README
# and docs/, licences and an installer into sbx-VERSION-linux-ARCH.tar.gz; then
# SHA256SUMS over the tarballs.
#
# Reproducible: -trimpath, no build id, no VCS stamp, the version from git
# (VERSION), file times in the tarball fixed at SOURCE_DATE_EPOCH (default:
# the commit's time), owners and order normalised, gzip without a name or
# time. The same commit built twice, in any directory, gives the same bytes.
#
# Needs per architecture a C compiler and Debian's libseccomp-dev of that
# architecture (libseccomp.a): for arm64 on amd64, gcc-aarch64-linux-gnu and
# libseccomp-dev:arm64 (after "dpkg --add-architecture arm64").
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
DIST=${DIST:-dist}
ARCHES=${ARCHES:-amd64 arm64}
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
export SOURCE_DATE_EPOCH

die() { echo "release: $*" >&2; exit 1; }

case $VERSION in *dirty*) echo "release: warning: the tree has uncommitted changes ($VERSION): this release cannot be rebuilt from a commit" >&2 ;; esac

hostarch=$($GO env GOHOSTARCH)
tags="seccomp osusergo netgo"
# -linkmode=external -extldflags=-static: one static ELF (libseccomp.a, libc.a);
# osusergo,netgo: Go's own user and DNS lookups, not glibc's NSS, which
# cannot work from a static binary.
ldflags="-s -w -buildid= -X main.version=$VERSION -linkmode=external -extldflags=-static"

# triplet ARCH prints Debian's multiarch triplet of a GOARCH.
triplet() {
	case $1 in
	amd64) echo x86_64-linux-gnu ;;
	arm64) echo aarch64-linux-gnu ;;
	*) die "unsupported architecture $1 (amd64, arm64)" ;;
	esac
}

# build ARCH OUT: the static binary.
build() {
	local arch=$1 out=$2 tri cc
	tri=$(triplet "$arch")
	if [ "$arch" = "$hostarch" ]; then cc=${CC:-gcc}; else cc=$tri-gcc; fi
	command -v "$cc" >/dev/null || die "$arch: no C compiler $cc (apt-get install gcc-$tri)"
	[ -f "/usr/lib/$tri/libseccomp.a" ] || die "$arch: no /usr/lib/$tri/libseccomp.a (dpkg --add-architecture $arch; apt-get update; apt-get install libseccomp-dev:$arch)"
	# CGO_CFLAGS/CGO_LDFLAGS from the environment may point at another
	# libseccomp: see THIRD_PARTY_NOTICES.md on relinking.
	CGO_ENABLED=1 GOOS=linux GOARCH=$arch CC=$cc \
		PKG_CONFIG_LIBDIR="/usr/lib/$tri/pkgconfig:/usr/share/pkgconfig" \
		$GO build -tags "$tags" -trimpath -buildvcs=false -ldflags "$ldflags" -o "$out" ./cmd/sbx
	# Static or nothing: a dynamic binary would carry this host's glibc floor.
	if readelf -lW "$out" | grep -q 'INTERP'; then
		die "$arch: $out has a program interpreter: not static"
	fi
	file -b "$out" | grep -q 'statically linked' || die "$arch: file(1) does not call $out static: $(file -b "$out")"
}

# licenses BINARY DIR: every linked module's licence files, the Go
# toolchain's, the C libraries' copyright files and the LGPL, and what was
# used to build. A module THIRD_PARTY_NOTICES.md does not name stops the
# release: its licence has to be looked at first.
licenses() {
	local bin=$1 dir=$2 arch=$3 mod ver src f n debarch
	mkdir -p "$dir"
	while read -r mod ver; do
		grep -qF "| $mod | $ver |" THIRD_PARTY_NOTICES.md ||
			die "$mod $ver is linked but not listed in THIRD_PARTY_NOTICES.md: check its licence and add it"
		src=$($GO list -m -f '{{.Dir}}' "$mod@$ver") || die "module $mod@$ver: not in the module cache"
		[ -n "$src" ] || die "module $mod@$ver: no directory (go mod download first)"
		n=0
		mkdir -p "$dir/$mod"
		for f in "$src"/*; do
			case ${f##*/} in
			LICENSE* | LICENCE* | License* | COPYING* | NOTICE*) cp "$f" "$dir/$mod/"; n=$((n + 1)) ;;
			esac
		done
		[ "$n" -gt 0 ] || die "module $mod@$ver: no licence file found in $src"
	done < <($GO version -m "$bin" | awk '$1 == "dep" { print $2, $3 }')
	mkdir -p "$dir/go" "$dir/libseccomp" "$dir/glibc" "$dir/libgcc"
	cp "$($GO env GOROOT)/LICENSE" "$dir/go/LICENSE"
	cp /usr/share/doc/libseccomp2/copyright "$dir/libseccomp/copyright"
	cp /usr/share/common-licenses/LGPL-2.1 "$dir/libseccomp/LGPL-2.1"
	cp /usr/share/doc/libc6/copyright "$dir/glibc/copyright"
	cp /usr/share/common-licenses/LGPL-2.1 "$dir/glibc/LGPL-2.1"
	cp /usr/share/doc/gcc-12-base/copyright "$dir/libgcc/copyright" 2>/dev/null ||
		cp /usr/share/doc/libgcc-s1/copyright "$dir/libgcc/copyright"
	debarch=$arch
	{
		echo "sbx $VERSION linux/$arch"
		echo "commit: ${COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
		echo "go: $($GO env GOVERSION)"
		echo "build tags: $tags"
		echo "Debian packages linked statically (source: apt-get source PACKAGE=VERSION, or snapshot.debian.org):"
		dpkg-query -W -f '  ${Package}:${Architecture} ${Version} (source ${source:Package} ${source:Version})\n' \
			"libseccomp-dev:$debarch" 2>/dev/null || echo "  libseccomp-dev:$debarch unknown"
		if [ "$arch" = "$hostarch" ]; then
			dpkg-query -W -f '  ${Package}:${Architecture} ${Version} (source ${source:Package} ${source:Version})\n' "libc6-dev:$debarch" 2>/dev/null || true
		else
			dpkg-query -W -f '  ${Package} ${Version} (source ${source:Package} ${source:Version})\n' "libc6-dev-$debarch-cross" 2>/dev/null || true
		fi
	} >"$dir/BUILD-INFO"
}

# pack DIR TARBALL: a tarball whose bytes depend on the files' contents only.
pack() {
	local dir=$1 tarball=$2
	find "$dir" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
	tar --sort=name --format=gnu --owner=0 --group=0 --numeric-owner \
		--mode='u+rwX,go+rX,go-w' --mtime="@$SOURCE_DATE_EPOCH" \
		-C "$(dirname "$dir")" -cf - "$(basename "$dir")" | gzip -9n >"$tarball"
}

mkdir -p "$DIST"
docsbin=""
tarballs=()
for arch in $ARCHES; do
	name=sbx-$VERSION-linux-$arch
	stage=$DIST/$name
	rm -rf "$stage" "$stage.tar.gz"
	mkdir -p "$stage/completions" "$stage/apparmor"
	echo "release: building $name" >&2
	build "$arch" "$stage/sbx"
	[ "$arch" = "$hostarch" ] && docsbin=$stage/sbx
	licenses "$stage/sbx" "$stage/licenses" "$arch"
	cp README.md SECURITY.md CHANGELOG.md LICENSE NOTICE THIRD_PARTY_NOTICES.md "$stage/"
	cp -R docs "$stage/docs"
	cp contrib/apparmor/sbx "$stage/apparmor/sbx"
	cp contrib/release/install.sh "$stage/install.sh"
	cp contrib/release/Makefile "$stage/Makefile"
	tarballs+=("$name")
done

# The man page and completions come from the CLI itself (sbx __docs): from
# the host's binary, the same source for every architecture.
if [ -z "$docsbin" ]; then
	docsbin=$DIST/.sbx-docs
	$GO build -tags seccomp -trimpath -buildvcs=false -ldflags "-X main.version=$VERSION" -o "$docsbin" ./cmd/sbx
fi
for name in "${tarballs[@]}"; do
	stage=$DIST/$name
	"$docsbin" __docs man >"$stage/sbx.1"
	"$docsbin" __docs bash >"$stage/completions/sbx.bash"
	"$docsbin" __docs zsh >"$stage/completions/_sbx"
	"$docsbin" __docs fish >"$stage/completions/sbx.fish"
done
rm -f "$DIST/.sbx-docs"

for name in "${tarballs[@]}"; do
	pack "$DIST/$name" "$DIST/$name.tar.gz"
done
(cd "$DIST" && sha256sum "${tarballs[@]/%/.tar.gz}" >SHA256SUMS)
cat "$DIST/SHA256SUMS"
