#!/usr/bin/env bash
# Installs what tests/it/wires/conformance.rs checks axe's request bodies
# against: the vendors' own Python SDKs, `openai`, `anthropic` and `ollama`
# (PyPI), pinned, into target/conformance/venv (git-ignored with target/).
# `make test` runs this first (scripts/test_deps.sh) and fails when it
# cannot install them (no registry, no python3); the test that finds them
# missing skips, and make test fails on that too, unless
# AXE_TEST_ALLOW_SKIP=1 (tests/common/skips.rs). Safe to run again: what is
# installed at the pinned versions is kept.
set -uo pipefail
cd "$(dirname "$0")/.."
DIR=target/conformance
PINS=(openai==3.57.0 anthropic==2.14.0 ollama==0.6.3 opentelemetry-proto==1.39.1)
mkdir -p "$DIR"

installed() {
    local pin
    for pin in "${PINS[@]}"; do
        "$DIR/venv/bin/pip" show "${pin%%==*}" 2>/dev/null |
            grep "^Version: ${pin##*==}$" >/dev/null || return 1
    done
}

if [ -x "$DIR/venv/bin/python" ] && installed; then
    echo "conformance: ${PINS[*]} already installed"
elif ! command -v python3 >/dev/null 2>&1; then
    echo "conformance: error: no python3 (Debian: apt-get install python3-venv): the SDKs cannot be installed" >&2
    exit 1
elif { [ -x "$DIR/venv/bin/pip" ] || python3 -m venv "$DIR/venv"; } &&
    "$DIR/venv/bin/pip" install --quiet --disable-pip-version-check "${PINS[@]}"; then
    echo "conformance: installed ${PINS[*]}"
else
    echo "conformance: error: python3 -m venv or pip install failed (no registry, or no venv: Debian's python3-venv): the SDKs are not installed" >&2
    exit 1
fi
