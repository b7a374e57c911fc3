#!/usr/bin/env bash
# `make demo-rates`: the demo's agents over DEMO_RUNS inputs (default 20)
# against the local server, with the rates of scripts/demo_rates.py. Uses
# what `make demo` installed (and installs it when missing); DEMO_SIZE and
# DEMO_PROVIDER as for `make demo`.
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
cargo build --release --quiet
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
