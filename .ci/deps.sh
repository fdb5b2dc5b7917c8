#!/usr/bin/env bash
# Installs what building and testing sbx needs on a fresh Debian 12 machine
# (run as root). Idempotent: skips apt when everything is already there.
set -euo pipefail
pkgs=(libseccomp-dev gcc make pkg-config clang llvm libbpf-dev bpftool
      bubblewrap hyperfine util-linux tmux busybox-static cpio qemu-system-x86
      iproute2 curl python3 netcat-openbsd gcc-multilib
      debootstrap e2fsprogs sudo file man-db zsh fish socat ripgrep nodejs)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
command -v go >/dev/null || { echo "deps: Go 1.26 is required (expected at /usr/local/go)" >&2; exit 1; }
# golangci-lint for "make lint" (part of make test), pinned in the Makefile:
# installed once into .cache/bin with go install (not a module dependency).
make -s -C "$(dirname "$0")/.." lint-tool
