#!/usr/bin/env bash
# make test's set-up (the Makefile's `deps`, which `unit` needs): installs,
# pinned, from the package registries, what the tests need that a fresh
# machine lacks, so that `make test` runs every test:
#   the MCP reference servers   scripts/mcp_servers.sh  (npm and PyPI, target/mcp)
#   the Python SDK 2.x's server scripts/mcp_servers.sh  (PyPI, target/mcp/venv2: mcp 2.3.0,
#                               stateless 2026-07-28, beside the 1.26.0 pin above)
#   the serve clients           scripts/serve_client.sh (PyPI and npm,
#                               target/serve-client): openai for Python
#                               and Node, llm, the Vercel AI SDK
#   the vendors' SDK types      scripts/conformance_deps.sh (PyPI, target/conformance)
#   the static build            scripts/static.sh (rustup's musl target,
#                               Debian's musl-tools, a release build)
#   the MCP Inspector           scripts/mcp_inspector.sh (npm, target/mcp/inspector)
# Each keeps what is installed at its pinned version: a second run takes
# seconds (the static build is cargo's incremental one: a minute or two
# after a change to src/). First it checks the commands the tests run
# (python3, node, perl, curl, git, util-linux's unshare, setpriv, script).
#
# What cannot be had fails here, naming it and how to get it, before the
# tests. AXE_TEST_ALLOW_SKIP=1 installs nothing and fails on nothing: the
# tests that need what is missing skip, and make test lists them at the end
# (scripts/skips.sh) without failing. For a developer who skips them
# knowingly; CI never sets it (.ci/run).
set -uo pipefail
cd "$(dirname "$0")/.."

if [ "${AXE_TEST_ALLOW_SKIP:-}" = 1 ]; then
    echo "make test: AXE_TEST_ALLOW_SKIP=1: nothing installed; the tests that need what is missing skip (listed at the end)"
    exit 0
fi

failed=()
# command | what the tests run it for | Debian's package
while IFS='|' read -r cmd why get; do
    command -v "$cmd" >/dev/null 2>&1 ||
        failed+=("no \`$cmd\` (for $why): apt-get install $get")
done <<'LIST'
python3|the MCP and wall servers, the openai client and llm|python3 python3-venv
node|the MCP reference server-everything, the openai Node client and the AI SDK|nodejs npm
npm|installing server-everything and the Node serve clients|npm
perl|the sandbox's network probes|perl
curl|the serve wall's curl client|curl
git|the git MCP server's test|git
unshare|namespaces of the tests' own|util-linux
setpriv|a normal user's walls under root|util-linux
script|a pseudo-terminal for the progress line|bsdutils
LIST

step() {
    local what=$1 how=$2 t0=$SECONDS
    shift 2
    echo "make test: $what"
    if "$@"; then
        echo "make test:   ready in $((SECONDS - t0)) s"
    else
        failed+=("$what failed (its error is above): $how")
    fi
}
step "the MCP reference servers (scripts/mcp_servers.sh)" \
    "it needs npm and python3 -m venv, and npm's and PyPI's registries" \
    bash scripts/mcp_servers.sh
step "the serve clients (scripts/serve_client.sh)" \
    "it needs python3 -m venv, npm, and PyPI's and npm's registries" \
    bash scripts/serve_client.sh
step "the vendors' SDKs (scripts/conformance_deps.sh)" \
    "it needs python3 -m venv and PyPI's registry" \
    bash scripts/conformance_deps.sh
step "the MCP Inspector (scripts/mcp_inspector.sh)" \
    "it needs npm and npm's registry" \
    bash scripts/mcp_inspector.sh
step "the static build (scripts/static.sh)" \
    "it needs rustup (the musl target) and apt-get or musl-gcc (musl-tools)" \
    bash scripts/static.sh

if [ ${#failed[@]} -gt 0 ]; then
    echo "make test: FAILED: what the tests need is missing:" >&2
    printf '  %s\n' "${failed[@]}" >&2
    echo "  install it and run make test again, or run AXE_TEST_ALLOW_SKIP=1 make test to skip the tests that need it knowingly" >&2
    exit 1
fi
