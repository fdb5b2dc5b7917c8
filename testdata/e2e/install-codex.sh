#!/bin/sh
# install-codex.sh: the real Codex CLI, a native binary from its platform
# package (npm @openai/codex, pinned at 0.171.0) for the end-to-end test
# of the built-in "codex" profile; see install-agent.sh.
# Usage: install-codex.sh [CACHE_DIR]
exec sh "$(dirname "$0")/install-agent.sh" codex @openai/codex 0.171.0 "$@"
