#!/usr/bin/env bash
# `make demo`: a real model, end to end, without an API key.
#
# Builds axe, starts llama-cpp-python's OpenAI-compatible server on a free
# loopback port with SmolLM2-135M-Instruct (a 135M-parameter model shipped in
# a PyPI package), and runs the example agents of examples/demo: `lead`
# delegates to `summarizer` and `critic` through call_agent. Everything it
# downloads or builds stays in .demo/ (git-ignored); a second run reuses it.
#
# Environment:
#   DEMO_INPUT   the text handed to `lead` (default: examples/demo/input.txt)
#   DEMO_MODEL   provider/model for all three agents instead of the local
#                server, e.g. anthropic/claude-haiku-4-5 with ANTHROPIC_API_KEY
#                set, or openai/gpt-4o-mini with OPENAI_API_KEY: nothing is
#                installed and no server is started then.
set -euo pipefail
SAY_PREFIX=demo
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

trap stop_servers EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cd "$ROOT"
t_start=$(now)

if [ -n "${DEMO_MODEL:-}" ]; then
    case $DEMO_MODEL in
    */*) ;;
    *) die "DEMO_MODEL must be provider/model, e.g. anthropic/claude-haiku-4-5" ;;
    esac
else
    ensure_venv
fi

say "building axe (cargo build --release)"
cargo build --release --quiet
AXE=$ROOT/target/release/axe

# The example agents, copied so that the demo never writes into examples/.
CONFIG=$DEMO/config
rm -rf "$CONFIG/axe"
mkdir -p "$CONFIG"
cp -R examples/demo/axe "$CONFIG/axe"
export XDG_CONFIG_HOME=$CONFIG

if [ -n "${DEMO_MODEL:-}" ]; then
    for f in "$CONFIG"/axe/agents/*.toml; do
        sed -i "s#^model = .*#model = \"$DEMO_MODEL\"#" "$f"
    done
    say "agents on $DEMO_MODEL (keys and base URLs from your environment)"
else
    say "starting the local model server (llama-cpp-python, SmolLM2-135M-Instruct Q4_1)"
    t0=$(now)
    start_openai_server
    say "server ready at $OPENAI_URL in $(($(now) - t0)) s (log: .demo/logs/llama-cpp-python-server.log)"
    export AXE_OPENAI_BASE_URL=$OPENAI_URL
    # llama.cpp ignores the key; axe's OpenAI provider requires one.
    export OPENAI_API_KEY=sk-local-demo-no-key-needed
fi

# The default input is shared with tests/e2e.rs.
INPUT=${DEMO_INPUT:-$(cat examples/demo/input.txt)}

say "config: XDG_CONFIG_HOME=.demo/config ($(cd "$CONFIG/axe/agents" && echo *.toml))"
say "running: axe run lead --verbose -p \"$INPUT\""
echo >&2
t0=$(now)
status=0
# One deadline for the whole tree: a model that keeps delegating cannot
# hold the demo for long.
mkdir -p "$LOGS"
TRACE=$LOGS/trace.jsonl
rm -f "$TRACE"
run_child "$AXE" run lead --verbose --timeout 180 --trace "$TRACE" --trace-bodies \
    -p "$INPUT" >"$LOGS/answer.txt" || status=$?
answer=$(cat "$LOGS/answer.txt")
echo >&2
say "axe exited $status after $(($(now) - t0)) s"
# What each sub-agent handed back to lead, read from the trace (the tool
# results lead's model received).
if [ -s "$TRACE" ]; then
    echo "--- what the sub-agents returned (from .demo/logs/trace.jsonl) ---"
    python3 - "$TRACE" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("event") == "tool_result" and e.get("depth") == 0:
        flag = " (error)" if e.get("is_error") else ""
        print(f"{e.get('agent_called')}{flag}: {e.get('content', '').strip()}")
PY
fi
if [ "$status" = 0 ]; then
    echo "--- answer from lead ---"
    if [ -n "$answer" ]; then
        printf '%s\n' "$answer"
    else
        echo "(empty: the model ended its turn without text)"
    fi
    echo "------------------------"
else
    say "no answer: axe failed (its error line is above)"
fi
if [ -z "${DEMO_MODEL:-}" ]; then
    say "the model is tiny (135M parameters): expect weak answers; the delegation above is real."
    if [ "$status" != 0 ]; then
        say "this model sometimes keeps delegating until the deadline; try another DEMO_INPUT"
    fi
fi
say "done in $(($(now) - t_start)) s"
exit "$status"
