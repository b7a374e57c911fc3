#!/usr/bin/env bash
# Installs the MCP reference servers the tests in tests/it/mcp/ run against,
# pinned, into target/mcp (git-ignored with target/):
#   target/mcp/npm    @modelcontextprotocol/server-everything (npm)
#   target/mcp/venv   mcp-server-time and mcp-server-git (PyPI)
#   target/mcp/venv2  the Python SDK 2.x (PyPI), whose server speaks the
#                     stateless revision 2026-07-28 (tests/it/mcp/stateless.rs);
#                     a venv of its own: the one above pins the 1.x SDK
# The tests find them there. `make test` runs this first (scripts/test_deps.sh)
# and fails when it cannot install them (no registry, no node or python);
# a test that finds its server missing skips, and make test fails on that
# too, unless AXE_TEST_ALLOW_SKIP=1 (tests/common/skips.rs).
# Safe to run again: what is installed at the pinned version is kept.
set -uo pipefail
cd "$(dirname "$0")/.."
DIR=target/mcp
EVERYTHING_VERSION=2026.1.26
TIME_VERSION=2026.1.26
GIT_VERSION=2026.1.14
# Their SDK, pinned too: mcp 2.x broke these releases (ImportError at start).
MCP_SDK_VERSION=1.26.0
# The SDK whose stateless server axe's client uses (issue 35).
MCP_SDK2_VERSION=2.3.0
mkdir -p "$DIR"
status=0

everything_js=$DIR/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js
if [ -f "$everything_js" ] && grep -q "\"version\": \"$EVERYTHING_VERSION\"" \
    "$DIR/npm/node_modules/@modelcontextprotocol/server-everything/package.json" 2>/dev/null; then
    echo "mcp: server-everything $EVERYTHING_VERSION already installed"
elif ! command -v npm >/dev/null 2>&1; then
    echo "mcp: error: no npm (Debian: apt-get install npm): server-everything cannot be installed" >&2
    status=1
elif npm install --prefix "$DIR/npm" --no-audit --no-fund --silent \
    "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" >&2; then
    echo "mcp: installed server-everything $EVERYTHING_VERSION"
else
    echo "mcp: error: npm install failed: server-everything is not installed" >&2
    status=1
fi

if [ -x "$DIR/venv/bin/mcp-server-time" ] && [ -x "$DIR/venv/bin/mcp-server-git" ] &&
    "$DIR/venv/bin/pip" show mcp-server-time 2>/dev/null | grep "^Version: $TIME_VERSION$" >/dev/null &&
    "$DIR/venv/bin/pip" show mcp 2>/dev/null | grep "^Version: $MCP_SDK_VERSION$" >/dev/null; then
    echo "mcp: mcp-server-time $TIME_VERSION and mcp-server-git already installed"
elif ! command -v python3 >/dev/null 2>&1; then
    echo "mcp: error: no python3 (Debian: apt-get install python3-venv): mcp-server-time and mcp-server-git cannot be installed" >&2
    status=1
elif { [ -x "$DIR/venv/bin/pip" ] || python3 -m venv "$DIR/venv"; } &&
    "$DIR/venv/bin/pip" install --quiet --disable-pip-version-check \
        "mcp-server-time==$TIME_VERSION" "mcp-server-git==$GIT_VERSION" "mcp==$MCP_SDK_VERSION"; then
    echo "mcp: installed mcp-server-time $TIME_VERSION, mcp-server-git $GIT_VERSION, mcp $MCP_SDK_VERSION"
else
    echo "mcp: error: python3 -m venv or pip install failed (no registry, or no venv: Debian's python3-venv): mcp-server-time and mcp-server-git are not installed" >&2
    status=1
fi

if "$DIR/venv2/bin/pip" show mcp 2>/dev/null | grep "^Version: $MCP_SDK2_VERSION$" >/dev/null; then
    echo "mcp: mcp $MCP_SDK2_VERSION (stateless servers) already installed"
elif ! command -v python3 >/dev/null 2>&1; then
    echo "mcp: error: no python3 (Debian: apt-get install python3-venv): mcp $MCP_SDK2_VERSION cannot be installed" >&2
    status=1
elif { [ -x "$DIR/venv2/bin/pip" ] || python3 -m venv "$DIR/venv2"; } &&
    "$DIR/venv2/bin/pip" install --quiet --disable-pip-version-check "mcp==$MCP_SDK2_VERSION"; then
    echo "mcp: installed mcp $MCP_SDK2_VERSION (stateless servers)"
else
    echo "mcp: error: python3 -m venv or pip install failed (no registry, or no venv: Debian's python3-venv): mcp $MCP_SDK2_VERSION is not installed" >&2
    status=1
fi
exit $status
