#!/bin/sh
# install-gemini.sh: the real Gemini CLI, a Node.js program (npm
# @google/gemini-cli, pinned at 0.61.0) for the end-to-end test of the
# built-in "gemini" profile; see install-agent.sh.
# Usage: install-gemini.sh [CACHE_DIR]
exec sh "$(dirname "$0")/install-agent.sh" gemini @google/gemini-cli 0.61.0 "$@"
