#!/bin/sh
# install-claude.sh: the real Claude Code CLI, a native binary from its
# platform package (npm @anthropic-ai/claude-code, pinned at 2.1.332) for
# the end-to-end test of the built-in "claude" profile; see install-
# agent.sh.
# Usage: install-claude.sh [CACHE_DIR]
exec sh "$(dirname "$0")/install-agent.sh" claude @anthropic-ai/claude-code 2.1.332 "$@"
