#!/usr/bin/env bash
# Installs the clients the tests in tests/it/serve/ drive axe serve with,
# pinned, into target/serve-client (git-ignored with target/):
#   venv      the official `openai` Python package (PyPI)
#   llm       simonw's `llm` (PyPI), a venv of its own: it pins its own openai
#   node      the official `openai` Node package and the Vercel AI SDK (`ai`,
#             `@ai-sdk/openai`, `zod`): `npm ci` from tests/it/serve/node's
#             package.json and lock, npm's cache in target/serve-client/npm
# `make test` runs this first (scripts/test_deps.sh) and fails when it
# cannot install them (no registry, no python3 or npm); a test that finds
# its client missing skips, and make test fails on that too, unless
# AXE_TEST_ALLOW_SKIP=1 (tests/common/skips.rs).
# Safe to run again: what is installed at the pinned version is kept.
set -uo pipefail
cd "$(dirname "$0")/.."
DIR=target/serve-client
OPENAI_VERSION=3.57.0
LLM_VERSION=0.36
mkdir -p "$DIR"
status=0

# venv_package NAME VERSION VENV: `pip install NAME==VERSION` into VENV.
venv_package() {
    local name=$1 version=$2 venv=$3
    # The package's metadata directory says its version (pip show takes
    # seconds to start, each time make test runs).
    if [ -x "$venv/bin/python" ] &&
        compgen -G "$venv/lib/python3*/site-packages/$name-$version.dist-info" >/dev/null; then
        echo "serve: $name $version already installed"
    elif ! command -v python3 >/dev/null 2>&1; then
        echo "serve: error: no python3 (Debian: apt-get install python3-venv): $name cannot be installed" >&2
        status=1
    elif { [ -x "$venv/bin/pip" ] || python3 -m venv "$venv"; } &&
        "$venv/bin/pip" install --quiet --disable-pip-version-check "$name==$version"; then
        echo "serve: installed $name $version"
    else
        echo "serve: error: python3 -m venv or pip install failed (no registry, or no venv: Debian's python3-venv): $name is not installed" >&2
        status=1
    fi
}
venv_package openai "$OPENAI_VERSION" "$DIR/venv"
venv_package llm "$LLM_VERSION" "$DIR/llm"

# The Node clients: installed again only when the lock changed.
LOCK=tests/it/serve/node/package-lock.json
if [ -d "$DIR/node/node_modules" ] && cmp -s "$LOCK" "$DIR/node/package-lock.json"; then
    echo "serve: the Node clients already installed ($LOCK)"
elif ! command -v npm >/dev/null 2>&1; then
    echo "serve: error: no npm (Debian: apt-get install npm): the Node clients cannot be installed" >&2
    status=1
elif mkdir -p "$DIR/node" && cp tests/it/serve/node/package.json "$LOCK" "$DIR/node/" &&
    npm ci --prefix "$DIR/node" --cache "$DIR/npm" --no-audit --no-fund --silent >&2; then
    echo "serve: installed the Node clients ($LOCK)"
else
    # A failed install is not kept as installed.
    rm -f "$DIR/node/package-lock.json"
    echo "serve: error: npm ci failed (no registry?): the Node clients are not installed" >&2
    status=1
fi
exit $status
