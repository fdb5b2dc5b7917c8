#!/usr/bin/env bash
# ci-test.sh TARBALL: run contrib/ci/sbx-ci.sh (the GitHub Action's logic)
# the way a GitHub-hosted runner runs it, and check what it promises:
#   - as user "runner" (created if missing) with passwordless sudo and
#     HOME=/home/runner, in a new session without a TTY (setsid, stdin
#     /dev/null), the job's tools on PATH under /opt/hostedtoolcache;
#   - secrets in the job's environment (MY_SECRET, GITHUB_TOKEN) are not
#     visible inside the sandbox, nor files of the real home;
#   - the sandboxed command's exit status is the script's;
#   - a file the command writes lands in the workspace, owned by runner.
# Needs root. Installs into a temporary prefix and removes it, the test
# tool and the sudoers entry afterwards; the user "runner" stays.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "ci-test: $*" >&2; exit 1; }
[ $# = 1 ] || die "usage: ci-test.sh TARBALL"
[ "$(id -u)" = 0 ] || die "needs root (creates the user runner, sudoers entry)"
tarball=$(realpath "$1")
command -v sudo >/dev/null || die "sudo missing (apt-get install sudo)"
script=$PWD/contrib/ci/sbx-ci.sh

id runner >/dev/null 2>&1 || useradd -m -s /bin/bash runner
sudoers=/etc/sudoers.d/sbx-ci-test-runner
echo 'runner ALL=(ALL) NOPASSWD: ALL' >"$sudoers"
chmod 440 "$sudoers"
tool=/opt/hostedtoolcache/sbx-ci-test/1.0.0/x64
prefix=$(mktemp -d /tmp/sbx-ci-prefix.XXXXXX)
chmod 755 "$prefix"
mkdir -m 755 "$prefix/apparmor.d" # as /etc/apparmor.d on an Ubuntu runner
ws=/home/runner/work/sbx-ci-test/repo
out=$(mktemp -d)
cleanup() {
	rm -rf "$prefix" "$out" /opt/hostedtoolcache/sbx-ci-test /home/runner/work/sbx-ci-test /home/runner/.ssh/sbx-ci-test-key /home/runner/runner-temp
	rm -f "$sudoers"
	rmdir /opt/hostedtoolcache 2>/dev/null || true
}
trap cleanup EXIT

mkdir -p "$tool/bin" "$ws" /home/runner/.ssh /home/runner/runner-temp
printf '#!/bin/sh\necho "hello-tool ok"\n' >"$tool/bin/hello-tool"
chmod 755 "$tool/bin/hello-tool"
echo "PRIVATE-KEY-sbx-ci-test" >/home/runner/.ssh/sbx-ci-test-key
echo "source" >"$ws/README"
chown -R runner: /home/runner/work /home/runner/.ssh /home/runner/runner-temp

secret="s3cr3t-$$-$RANDOM"
# runjob NAME SBX_RUN [VAR=VALUE...]: the script as the runner would start
# it (the VARs override the defaults); prints its exit status.
runjob() {
	local name=$1 cmd=$2 st=0
	shift 2
	setsid sudo -u runner -H env -i \
		HOME=/home/runner USER=runner LOGNAME=runner \
		PATH="$tool/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin" \
		CI=true GITHUB_ACTIONS=true GITHUB_WORKSPACE="$ws" RUNNER_TEMP=/home/runner/runner-temp \
		MY_SECRET="$secret" GITHUB_TOKEN="ghs_$secret" \
		SBX_TARBALL="$tarball" SBX_PREFIX="$prefix" SBX_APPARMOR_DIR="$prefix/apparmor.d" SBX_RUN="$cmd" \
		"$@" "$script" </dev/null >"$out/$name.out" 2>"$out/$name.err" || st=$?
	echo "$st"
}

fails=0
expect() { # expect DESCRIPTION TEST...
	local what=$1
	shift
	if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fails=$((fails + 1)); fi
}
show() { echo "---- $1.out"; cat "$out/$1.out"; echo "---- $1.err"; cat "$out/$1.err"; }

# shellcheck disable=SC2016 # expanded inside the sandbox, not here
st=$(runjob main 'echo "secret=[${MY_SECRET:-}] token=[${GITHUB_TOKEN:-}]"; env; hello-tool; echo "user=$(id -un) home=$HOME"; if [ -t 0 ] || [ -t 1 ]; then echo tty; else echo notty; fi; cat ~/.ssh/sbx-ci-test-key 2>/dev/null || echo "no-real-home-key"; echo built > out.txt')
expect "job exits 0 (got $st)" test "$st" = 0
expect "secrets not in the sandbox's environment" grep -qF 'secret=[] token=[]' "$out/main.out"
expect "the secret's value appears nowhere in the output" sh -c "! grep -qF '$secret' '$out/main.out' '$out/main.err'"
expect "tools under /opt/hostedtoolcache on PATH inside" grep -qx 'hello-tool ok' "$out/main.out"
expect "runs as runner" grep -q '^user=runner ' "$out/main.out"
expect "no TTY" grep -qx notty "$out/main.out"
expect "the real home's files are not visible" grep -qx no-real-home-key "$out/main.out"
expect "output file written to the workspace" test -f "$ws/out.txt"
expect "output file owned by runner" test "$(stat -c %U "$ws/out.txt" 2>/dev/null)" = runner
expect "AppArmor profile installed for the prefix's binary" grep -q "^profile sbx $prefix/bin/sbx " "$prefix/apparmor.d/sbx"
[ "$fails" = 0 ] || show main

st=$(runjob fail 'exit 3')
expect "the command's exit status passes through (3, got $st)" test "$st" = 3

st=$(runjob net 'exec 3<>/dev/tcp/1.1.1.1/443')
expect "no network without --allow-host (status $st, want non-zero)" test "$st" != 0

# rootless mode: sbx as the runner itself (user namespace, Landlock).
# shellcheck disable=SC2016 # expanded inside the sandbox, not here
st=$(runjob rootless 'echo "secret=[${MY_SECRET:-}]"; echo built > rootless.txt' SBX_MODE=rootless)
expect "rootless mode: status 0 (got $st)" test "$st" = 0
expect "rootless mode: secret not inside" grep -qF 'secret=[]' "$out/rootless.out"
expect "rootless mode: file written, owned by runner" test "$(stat -c %U "$ws/rootless.txt" 2>/dev/null)" = runner
[ "$st" = 0 ] || show rootless

# The url input, with a file:// URL (no network here) and the sha256 check.
cp "$tarball" /home/runner/runner-temp/
base=$(basename "$tarball")
url="file:///home/runner/runner-temp/${base/-linux-amd64/-linux-\{arch\}}"
sum=$(sha256sum "$tarball" | cut -d' ' -f1)
st=$(runjob url 'true' SBX_TARBALL= SBX_URL="$url" SBX_SHA256="$sum")
expect "url input ({arch} filled in) with the right sha256: status 0 (got $st)" test "$st" = 0
st=$(runjob badsum 'true' SBX_TARBALL= SBX_URL="$url" SBX_SHA256="0000$sum")
expect "a wrong sha256 stops it before installing: status 125 (got $st)" test "$st" = 125
expect "... saying so" grep -q 'sha256 of' "$out/badsum.err"

[ "$fails" = 0 ] || die "$fails check(s) failed"
echo "ci-test: all checks passed"
