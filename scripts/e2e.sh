#!/usr/bin/env bash
# `make e2e`: axe against real third-party servers on 127.0.0.1.
#
#   llama-cpp-python's server (OpenAI wire format, real tool calls by
#     SmolLM2-135M through chatml-function-calling)   -> AXE_E2E_OPENAI_URL
#   llama.cpp's llama-server (Anthropic /v1/messages)  -> AXE_E2E_ANTHROPIC_URL
#   @copilotkit/aimock (OpenAI, Anthropic and Ollama
#     from fixtures/e2e/aimock.json)                   -> AXE_E2E_AIMOCK_URL
#
# then `cargo test --test e2e -- --ignored --test-threads=1`. The first run
# installs and builds what is missing into .demo/ (the venv, several minutes;
# llama-server, about 20 minutes on 2 cores; aimock, seconds); later runs
# reuse it. Every server is stopped on every exit path. Extra arguments go
# to the test binary (a test name filter, --nocapture).
set -euo pipefail
SAY_PREFIX=e2e
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

trap stop_servers EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cd "$ROOT"
t_start=$(now)

ensure_venv
ensure_aimock
ensure_llama_server

say "starting llama-cpp-python's server, llama-server and aimock on 127.0.0.1"
start_openai_server
start_llama_server
start_aimock "$ROOT/fixtures/e2e/aimock.json"
say "  llama-cpp-python: $OPENAI_URL  llama-server: $LLAMA_SERVER_URL  aimock: $AIMOCK_URL"

export AXE_E2E_OPENAI_URL=$OPENAI_URL
export AXE_E2E_ANTHROPIC_URL=$LLAMA_SERVER_URL
export AXE_E2E_AIMOCK_URL=$AIMOCK_URL
export AXE_E2E_MODEL=$MODEL_ALIAS

status=0
run_child cargo test --test e2e -- --ignored --test-threads=1 "$@" || status=$?
say "tests exited $status; $(($(now) - t_start)) s in all (server logs: .demo/logs/)"
exit "$status"
