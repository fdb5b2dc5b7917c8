#!/usr/bin/env bash
# make demo: one sandboxed command that works in its workspace and is
# refused everything outside it.
set -uo pipefail
cd "$(dirname "$0")/.."
SBX=$PWD/bin/sbx
ws=$(mktemp -d /tmp/sbx-demo.XXXXXX)
secret=$(mktemp /root/sbx-demo-secret.XXXXXX 2>/dev/null || mktemp /var/tmp/sbx-demo-secret.XXXXXX)
trap 'rm -rf "$ws" "$secret"' EXIT
echo "top secret" >"$secret"
echo 'print("hello from the workspace")' >"$ws/hello.py"
cd "$ws"
step() { printf '\n$ %s\n' "$*"; "$@"; printf '[exit %d]\n' $?; }
echo "workspace: $ws    host secret: $secret"
step "$SBX" run -- python3 hello.py
step "$SBX" run -w -- sh -c 'echo written >out.txt && cat out.txt'
step "$SBX" run -- sh -c 'echo nope >out2.txt'
step "$SBX" run -- cat "$secret"
step "$SBX" run -- ls /run /var
step "$SBX" run -- touch /usr/bin/evil
# The sandbox's loopback is its own (the host's sshd is not there); beyond
# it, the network wall refuses and reports.
step "$SBX" run -- python3 -c 'import socket; socket.create_connection(("127.0.0.1", 22), 1)'
step "$SBX" run -- python3 -c 'import socket; socket.create_connection(("192.0.2.1", 80), 1)'
step "$SBX" run --timeout 1s -- sleep 10
exit 0
