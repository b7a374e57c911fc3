#!/usr/bin/env bash
# Installs the MCP reference servers the tests in tests/it/mcp/ run against,
# pinned, into target/mcp (git-ignored with target/):
#   target/mcp/npm    @modelcontextprotocol/server-everything (npm)
#   target/mcp/venv   mcp-server-time and mcp-server-git (PyPI)
# The tests find them there; where this script could not install them (no
# registry, no node or python), those tests print SKIPPED and pass.
# Safe to run again: what is installed at the pinned version is kept.
set -uo pipefail
cd "$(dirname "$0")/.."
DIR=target/mcp
EVERYTHING_VERSION=2026.1.26
TIME_VERSION=2026.1.26
GIT_VERSION=2026.1.14
# Their SDK, pinned too: mcp 2.x broke these releases (ImportError at start).
MCP_SDK_VERSION=1.26.0
mkdir -p "$DIR"
status=0

everything_js=$DIR/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js
if [ -f "$everything_js" ] && grep -q "\"version\": \"$EVERYTHING_VERSION\"" \
    "$DIR/npm/node_modules/@modelcontextprotocol/server-everything/package.json" 2>/dev/null; then
    echo "mcp: server-everything $EVERYTHING_VERSION already installed"
elif ! command -v npm >/dev/null 2>&1; then
    echo "mcp: WARNING: no npm: the server-everything tests will be SKIPPED" >&2
    status=1
elif npm install --prefix "$DIR/npm" --no-audit --no-fund --silent \
    "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" >&2; then
    echo "mcp: installed server-everything $EVERYTHING_VERSION"
else
    echo "mcp: WARNING: npm install failed: the server-everything tests will be SKIPPED" >&2
    status=1
fi

if [ -x "$DIR/venv/bin/mcp-server-time" ] && [ -x "$DIR/venv/bin/mcp-server-git" ] &&
    "$DIR/venv/bin/pip" show mcp-server-time 2>/dev/null | grep -q "^Version: $TIME_VERSION$" &&
    "$DIR/venv/bin/pip" show mcp 2>/dev/null | grep -q "^Version: $MCP_SDK_VERSION$"; then
    echo "mcp: mcp-server-time $TIME_VERSION and mcp-server-git already installed"
elif ! command -v python3 >/dev/null 2>&1; then
    echo "mcp: WARNING: no python3: the mcp-server-time tests will be SKIPPED" >&2
    status=1
elif { [ -x "$DIR/venv/bin/pip" ] || python3 -m venv "$DIR/venv"; } &&
    "$DIR/venv/bin/pip" install --quiet --disable-pip-version-check \
        "mcp-server-time==$TIME_VERSION" "mcp-server-git==$GIT_VERSION" "mcp==$MCP_SDK_VERSION"; then
    echo "mcp: installed mcp-server-time $TIME_VERSION, mcp-server-git $GIT_VERSION, mcp $MCP_SDK_VERSION"
else
    echo "mcp: WARNING: pip install failed: the mcp-server-time tests will be SKIPPED" >&2
    status=1
fi
exit $status
