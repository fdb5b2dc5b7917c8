#!/usr/bin/env bash
# sbx-ci.sh: install a static sbx release and run one command inside
# "sbx run", non-interactively, the way a CI job (the GitHub Action in
# action.yml) needs it. See docs/ci.md.
#
# Environment (the action's inputs):
#   SBX_TARBALL    local path of sbx-VERSION-linux-ARCH.tar.gz, or
#   SBX_URL        URL of it ("{arch}" is replaced by amd64 or arm64)
#   SBX_SHA256     expected sha256 of the tarball (checked when given)
#   SBX_RUN        the command line to run in the sandbox (bash -c)
#   SBX_ARGS       extra "sbx run" flags, split on blanks (default: --write)
#   SBX_MODE       root (default; through sudo: every tier, the program
#                  runs as the calling user) or rootless (needs user
#                  namespaces; on Ubuntu 23.10+ the AppArmor profile the
#                  installer loads)
#   SBX_WORKSPACE  the sandbox's workspace (default: GITHUB_WORKSPACE, else
#                  the current directory)
#   SBX_PREFIX     install prefix (default /usr/local)
#   SBX_APPARMOR_DIR  where the AppArmor profile goes (default /etc/apparmor.d)
# Exit status: the sandboxed command's (sbx run's), or 125 when sbx could
# not be installed or started.
set -euo pipefail

die() { echo "sbx-ci: $*" >&2; exit 125; }

[ "$(uname -s)" = Linux ] || die "sbx runs on Linux only (this runner is $(uname -s)); see README.md"
case $(uname -m) in
x86_64) arch=amd64 ;;
aarch64 | arm64) arch=arm64 ;;
*) die "no sbx release for $(uname -m) (amd64, arm64)" ;;
esac
[ -n "${SBX_RUN:-}" ] || die "SBX_RUN (the action's 'run' input) is empty"

prefix=${SBX_PREFIX:-/usr/local}
mode=${SBX_MODE:-root}
workspace=${SBX_WORKSPACE:-${GITHUB_WORKSPACE:-$PWD}}
work=$(mktemp -d "${RUNNER_TEMP:-/tmp}/sbx-ci.XXXXXX")
trap 'rm -rf "$work"' EXIT

# asroot CMD...: as root, without a password prompt (no TTY here: sudo -n
# fails instead of waiting for one).
asroot() {
	if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi
}

# 1. The release tarball.
if [ -n "${SBX_TARBALL:-}" ]; then
	tarball=$SBX_TARBALL
	[ -f "$tarball" ] || die "SBX_TARBALL $tarball: no such file"
elif [ -n "${SBX_URL:-}" ]; then
	tarball=$work/sbx.tar.gz
	curl -fsSL --retry 3 -o "$tarball" "${SBX_URL//\{arch\}/$arch}" || die "download ${SBX_URL//\{arch\}/$arch} failed"
else
	die "give SBX_TARBALL (a local path) or SBX_URL (the action's 'tarball' or 'url' input)"
fi
if [ -n "${SBX_SHA256:-}" ]; then
	echo "$SBX_SHA256  $tarball" | sha256sum -c --quiet - >&2 || die "sha256 of $tarball is not $SBX_SHA256"
fi

# 2. Install (binary, man page, completions, AppArmor profile where
# AppArmor is present; the installer loads it).
tar -xzf "$tarball" -C "$work"
src=$(echo "$work"/sbx-*-linux-*)
[ -f "$src/Makefile" ] || die "$tarball is not an sbx release (no sbx-*/Makefile)"
case $src in *-linux-"$arch") ;; *) die "$tarball is not for linux/$arch" ;; esac
asroot make -s -C "$src" install PREFIX="$prefix" ${SBX_APPARMOR_DIR:+APPARMOR_DIR="$SBX_APPARMOR_DIR"} >&2 || die "install failed (sudo -n make -C $src install)"
sbx=$prefix/bin/sbx
echo "sbx-ci: $("$sbx" version) installed at $sbx" >&2

if [ "$(cat /proc/sys/kernel/apparmor_restrict_unprivileged_userns 2>/dev/null || echo 0)" = 1 ]; then
	echo "sbx-ci: AppArmor restricts unprivileged user namespaces here (Ubuntu 23.10+); rootless sbx relies on the profile $(ls /etc/apparmor.d/sbx 2>/dev/null || echo '(missing!)')" >&2
fi

# 3. What this runner can enforce (informative: the run itself refuses to
# start without its tiers).
echo "::group::sbx doctor ($mode)" >&2
if [ "$mode" = root ]; then asroot "$sbx" doctor >&2 || true; else "$sbx" doctor >&2 || true; fi
echo "::endgroup::" >&2

# 4. The command. sbx gives the program a clean environment (PATH, HOME,
# USER, TERM, LANG, LC_*, TZ, SBX=1 and what --env names): the job's
# secrets (GITHUB_TOKEN, ACTIONS_*, anything from "secrets.") stay out.
# PATH is passed explicitly because sudo resets it, and the job's PATH is
# where setup-* actions put tools (/opt/hostedtoolcache, visible read-only).
read -r -a args <<<"${SBX_ARGS---write}"
cd "$workspace"
st=0
case $mode in
root) asroot env PATH="$PATH" "$sbx" run --workspace "$workspace" "${args[@]}" -- bash -c "$SBX_RUN" </dev/null || st=$? ;;
rootless) "$sbx" run --workspace "$workspace" "${args[@]}" -- bash -c "$SBX_RUN" </dev/null || st=$? ;;
*) die "SBX_MODE=$mode: want root or rootless" ;;
esac
exit "$st"
