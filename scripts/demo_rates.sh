#!/usr/bin/env bash
# `make demo-rates`: the demo's agents over DEMO_RUNS inputs (default 20)
# against the local server, with the rates of scripts/demo_rates.py; then the
# tool step of `make e2e`'s agents (fixtures/e2e/agents: read_file and
# run_command) over as many questions, with the rates of
# scripts/tool_rates.py. Uses what `make demo` installed (and installs it
# when missing); DEMO_SIZE and DEMO_PROVIDER as for `make demo`.
set -euo pipefail
SAY_PREFIX=demo-rates
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

trap stop_servers EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cd "$ROOT"
PROVIDER=${DEMO_PROVIDER:-openai}
ensure_venv
ensure_model
cargo build --release
CONFIG=$DEMO/config-rates
rm -rf "$CONFIG/axe"
mkdir -p "$CONFIG"
cp -R examples/demo/axe "$CONFIG/axe"
for f in "$CONFIG"/axe/agents/*.toml; do
    sed -i "s#^model = .*#model = \"$PROVIDER/$MODEL_ALIAS\"#" "$f"
done
export XDG_CONFIG_HOME=$CONFIG
start_model_server
export AXE_OPENAI_BASE_URL=$LLAMA_URL AXE_ANTHROPIC_BASE_URL=$LLAMA_URL
export OPENAI_API_KEY=sk-local-demo-no-key-needed ANTHROPIC_API_KEY=sk-local-demo-no-key-needed
say "$MODEL_FILE on the $PROVIDER wire, $SLOTS slots"
run_child "$VENV/bin/python" "$ROOT/scripts/demo_rates.py" "$ROOT/target/release/axe" \
    "$LOGS/rates" "${DEMO_RUNS:-20}"

# The tool step: its agents name no model (--model gives it) and no workdir
# (the script makes one).
TOOLS_CONFIG=$DEMO/config-tool-rates
rm -rf "$TOOLS_CONFIG/axe"
mkdir -p "$TOOLS_CONFIG/axe"
cp -R fixtures/e2e/agents "$TOOLS_CONFIG/axe/agents"
say "the tool step: fixtures/e2e/agents on the $PROVIDER wire"
run_child "$VENV/bin/python" "$ROOT/scripts/tool_rates.py" "$ROOT/target/release/axe" \
    "$TOOLS_CONFIG" "$LOGS/tool-rates" "$PROVIDER/$MODEL_ALIAS" "${DEMO_RUNS:-20}"
