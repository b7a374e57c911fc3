#!/usr/bin/env bash
# Installs the client the tests in tests/it/serve/ drive axe serve with:
# the official `openai` Python package (PyPI), pinned, into
# target/serve-client/venv (git-ignored with target/). Where it cannot be
# installed (no registry, no python3), those tests print SKIPPED and pass.
# Safe to run again: what is installed at the pinned version is kept.
set -uo pipefail
cd "$(dirname "$0")/.."
DIR=target/serve-client
OPENAI_VERSION=3.57.0
mkdir -p "$DIR"

if [ -x "$DIR/venv/bin/python" ] &&
    "$DIR/venv/bin/pip" show openai 2>/dev/null | grep -q "^Version: $OPENAI_VERSION$"; then
    echo "serve: openai $OPENAI_VERSION already installed"
elif ! command -v python3 >/dev/null 2>&1; then
    echo "serve: WARNING: no python3: the axe serve client tests will be SKIPPED" >&2
    exit 1
elif { [ -x "$DIR/venv/bin/pip" ] || python3 -m venv "$DIR/venv"; } &&
    "$DIR/venv/bin/pip" install --quiet --disable-pip-version-check "openai==$OPENAI_VERSION"; then
    echo "serve: installed openai $OPENAI_VERSION"
else
    echo "serve: WARNING: pip install failed: the axe serve client tests will be SKIPPED" >&2
    exit 1
fi
