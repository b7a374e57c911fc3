#!/usr/bin/env bash
# scripts/single_run_order.sh: writes scripts/single_run.order, the
# functions a single run executes, which the release link places together
# (build.rs; docs/contributing.md, Performance). Run it again when a run's path changed much: a
# function the file does not name is only placed elsewhere, never missed.
#
# It builds the release code with its symbols (`cargo build --profile
# sizes`), runs it under valgrind's callgrind against a fake OpenAI
# provider on loopback (python3), three times: a single run, a parent that
# delegates once to a sub-agent (the code of a fan-out's sub-agents), and a
# parent whose answer calls four at once (the fan-out's own: its helper
# threads, the answers gathered), and lists every function of axe's binary
# a run entered, in that order.
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in valgrind python3 nm; do
    command -v "$tool" >/dev/null || { echo "single_run_order: needs $tool" >&2; exit 1; }
done
AXE_KEEP_SYMBOLS=1 cargo build --profile sizes
bin=target/sizes/axe
tmp=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$tmp"' EXIT

cat >"$tmp/provider.py" <<'EOF'
import http.server, json, sys
def answer(content=None, calls=None):
    message = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return {"id": "x", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
class Provider(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers["content-length"])))
        msgs = req["messages"]
        calls = {"lead": 1, "fan": 4}.get(json.dumps(msgs[0]).split("You are ")[-1].split(".")[0], 0)
        if calls and not any(m["role"] == "tool" for m in msgs):
            body = answer(calls=[{"id": f"c{i}", "type": "function", "function": {
                "name": "call_agent", "arguments": json.dumps({"agent": "solo", "task": "hi"})}}
                for i in range(calls)])
        else:
            body = answer("hello")
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Provider)
print(server.server_address[1], flush=True)
server.serve_forever()
EOF
python3 "$tmp/provider.py" >"$tmp/port" &
server=$!
for _ in $(seq 50); do [ -s "$tmp/port" ] && break; sleep 0.1; done
port=$(cat "$tmp/port")

mkdir -p "$tmp/home/axe/agents"
for name in solo lead fan; do
    extra=""
    [ "$name" != solo ] && extra='sub_agents = ["solo"]'
    printf 'name = "%s"\nmodel = "openai/m"\nsystem_prompt = "You are %s."\n%s\n' \
        "$name" "$name" "$extra" >"$tmp/home/axe/agents/$name.toml"
done
for agent in solo lead fan; do
    echo hi | env -i PATH="$PATH" HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/home" \
        XDG_STATE_HOME="$tmp/home/state" OPENAI_API_KEY=sk-order \
        AXE_OPENAI_BASE_URL="http://127.0.0.1:$port" \
        valgrind -q --tool=callgrind --demangle=no --callgrind-out-file="$tmp/$agent.cg" \
        "$bin" run "$agent" >/dev/null
done

# callgrind names a function once, `fn=(id) name` (or cfn=, a callee), and
# by its id after; the order is the first run's, then what each next adds.
nm --defined-only "$bin" | awk '$2 ~ /^[tTwW]$/ { print $3 }' | sort -u >"$tmp/symbols"
cat "$tmp/solo.cg" "$tmp/lead.cg" "$tmp/fan.cg" |
    sed -n 's/^c\{0,1\}fn=([0-9]*) \(.*\)$/\1/p' |
    awk '!seen[$0]++' |
    grep -Fxf "$tmp/symbols" >scripts/single_run.order
echo "single_run_order: $(wc -l <scripts/single_run.order) functions in scripts/single_run.order" >&2
