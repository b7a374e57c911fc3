#!/usr/bin/env bash
# Installs the client the tests in tests/it/serve/ drive axe serve with:
# the official `openai` Python package (PyPI), pinned, into
# target/serve-client/venv (git-ignored with target/). `make test` runs this
# first (scripts/test_deps.sh) and fails when it cannot install it (no
# registry, no python3); a test that finds it missing skips, and make test
# fails on that too, unless AXE_TEST_ALLOW_SKIP=1 (tests/common/skips.rs).
# Safe to run again: what is installed at the pinned version is kept.
set -uo pipefail
cd "$(dirname "$0")/.."
DIR=target/serve-client
OPENAI_VERSION=3.57.0
mkdir -p "$DIR"

if [ -x "$DIR/venv/bin/python" ] &&
    "$DIR/venv/bin/pip" show openai 2>/dev/null | grep "^Version: $OPENAI_VERSION$" >/dev/null; then
    echo "serve: openai $OPENAI_VERSION already installed"
elif ! command -v python3 >/dev/null 2>&1; then
    echo "serve: error: no python3 (Debian: apt-get install python3-venv): the openai client cannot be installed" >&2
    exit 1
elif { [ -x "$DIR/venv/bin/pip" ] || python3 -m venv "$DIR/venv"; } &&
    "$DIR/venv/bin/pip" install --quiet --disable-pip-version-check "openai==$OPENAI_VERSION"; then
    echo "serve: installed openai $OPENAI_VERSION"
else
    echo "serve: error: python3 -m venv or pip install failed (no registry, or no venv: Debian's python3-venv): the openai client is not installed" >&2
    exit 1
fi
