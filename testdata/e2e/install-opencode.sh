#!/bin/sh
# install-opencode.sh: the real opencode, a native binary from its
# platform package (npm opencode-ai, pinned at 1.18.33) for the end-to-end
# test of the built-in "opencode" profile; see install-agent.sh.
# Usage: install-opencode.sh [CACHE_DIR]
exec sh "$(dirname "$0")/install-agent.sh" opencode opencode-ai 1.18.33 "$@"
