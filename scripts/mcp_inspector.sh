#!/usr/bin/env bash
# Installs the MCP Inspector (npm @modelcontextprotocol/inspector, pinned),
# whose CLI (`mcp-inspector --cli`) lists and calls the tools of
# `axe mcp serve` in tests/it/mcp_serve/inspector.rs, into
# target/mcp/inspector (git-ignored with target/). `make test` runs this
# (scripts/test_deps.sh); what is installed at the pinned version is kept.
# The package asks for node >= 22.19; its CLI runs on node 20 too (npm
# warns, EBADENGINE, and installs).
set -uo pipefail
cd "$(dirname "$0")/.."
DIR=target/mcp/inspector
VERSION=2.12.0
PKG=$DIR/node_modules/@modelcontextprotocol/inspector/package.json
if [ -f "$PKG" ] && grep -q "\"version\": \"$VERSION\"" "$PKG"; then
    echo "mcp: inspector $VERSION already installed"
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "mcp: error: no npm (Debian: apt-get install npm): the MCP Inspector is not installed" >&2
    exit 1
fi
mkdir -p "$DIR"
if (cd "$DIR" && npm install --no-audit --no-fund --ignore-scripts "@modelcontextprotocol/inspector@$VERSION" >/dev/null); then
    echo "mcp: installed the MCP Inspector $VERSION"
else
    echo "mcp: error: npm install @modelcontextprotocol/inspector@$VERSION failed (no registry?)" >&2
    exit 1
fi
