#!/usr/bin/env bash
# `make e2e`: axe against real third-party servers on 127.0.0.1.
#
#   llama.cpp's own server (xllamacpp) with Qwen2.5-Coder 0.5B Instruct and
#     the demo's chat template: the OpenAI, Anthropic and Responses API
#     wire formats with a real model's tool calls       -> AXE_E2E_LLAMA_URL
#   @copilotkit/aimock (OpenAI, Anthropic and Ollama
#     from fixtures/e2e/aimock.json)                    -> AXE_E2E_AIMOCK_URL
#   mcp-server-time (scripts/mcp_servers.sh, in target/mcp), which the
#     MCP cases start over stdio through axe
#   an MCP host nobody here wrote: `llm` with the `llm-tools-mcp` plugin
#     (PyPI, pinned below, in .demo/host), its model the llama.cpp
#     server, its MCP server `axe mcp serve`           -> AXE_E2E_LLM
#
# then `cargo test --test e2e -- --ignored --test-threads=1`. The first run
# installs what is missing into .demo/ (as `make demo` does, and aimock);
# later runs reuse it. Every server is stopped on every exit path. Extra
# arguments go to the test binary (a test name filter, --nocapture).
set -euo pipefail
SAY_PREFIX=e2e
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

trap stop_servers EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cd "$ROOT"
t_start=$(now)

# The MCP host (issue 35), pinned. fast-agent needs Python 3.12 or later;
# llm and its MCP plugin run on the 3.11 that make demo uses.
LLM_VERSION=0.36
LLM_TOOLS_MCP_VERSION=0.4
HOST_MCP_SDK_VERSION=1.26.0
HOST=$DEMO/host
ensure_host() {
    if "$HOST/bin/pip" show llm-tools-mcp 2>/dev/null | grep "^Version: $LLM_TOOLS_MCP_VERSION$" >/dev/null &&
        "$HOST/bin/pip" show llm 2>/dev/null | grep "^Version: $LLM_VERSION$" >/dev/null; then
        say "the MCP host: llm $LLM_VERSION and llm-tools-mcp already installed in .demo/host"
        return
    fi
    local t0 log=$LOGS/host-install.log
    t0=$(now)
    mkdir -p "$LOGS"
    say "installing llm $LLM_VERSION and llm-tools-mcp $LLM_TOOLS_MCP_VERSION (an MCP host) into .demo/host"
    if [ ! -x "$HOST/bin/pip" ]; then
        "$(base_python)" -m venv "$HOST" || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
    fi
    run_child "$HOST/bin/pip" install --disable-pip-version-check --quiet \
        "llm==$LLM_VERSION" "llm-tools-mcp==$LLM_TOOLS_MCP_VERSION" "mcp==$HOST_MCP_SDK_VERSION" >"$log" 2>&1 ||
        { tail -20 "$log" >&2; die "pip install of the MCP host failed (log: $log)"; }
    say "  installed in $(($(now) - t0)) s"
}

ensure_venv
ensure_model
ensure_host
ensure_aimock
# The MCP cases' time server (target/mcp; a no-op once installed).
bash "$ROOT/scripts/mcp_servers.sh"

say "starting llama.cpp's server and aimock on 127.0.0.1"
start_model_server
start_aimock "$ROOT/fixtures/e2e/aimock.json"
say "  llama.cpp: $LLAMA_URL  aimock: $AIMOCK_URL"

export AXE_E2E_LLAMA_URL=$LLAMA_URL
export AXE_E2E_AIMOCK_URL=$AIMOCK_URL
export AXE_E2E_MODEL=$MODEL_ALIAS
export AXE_E2E_LLM=$HOST/bin/llm

status=0
# What the tests could not test here, said at the end (scripts/skips.sh).
export AXE_TEST_SKIPS=$ROOT/target/tmp/e2e-skipped.txt
mkdir -p "$(dirname "$AXE_TEST_SKIPS")"
rm -f "$AXE_TEST_SKIPS"
run_child cargo test --test e2e -- --ignored --test-threads=1 "$@" || status=$?
say "tests exited $status; $(($(now) - t_start)) s in all (server logs: .demo/logs/)"
bash "$ROOT/scripts/skips.sh" "$AXE_TEST_SKIPS" "make e2e" || status=1
exit "$status"
