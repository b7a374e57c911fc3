"""How often the real model does a tool step, over many questions, for the
figures in docs/contributing.md ("End-to-end tests"): `make demo-rates`
(scripts/demo_rates.sh) starts the server and runs this after the demo's rates.

    tool_rates.py AXE CONFIG_DIR TRACE_DIR MODEL [N]

Writes 20 small files with facts no model knows into a fresh workdir, then
asks N questions (default 20), each naming one file, of two agents from
fixtures/e2e/agents (the ones `make e2e` uses): `reader` (read_file) and
`runner` (run_command, a command that prints the fact). Each run's trace
says: did the first response call the tool, did the tool's result hold the
fact (and, for a command, end in exit status 0), did the model then answer
without calling it again, and does the answer hold the fact. The agents
come from CONFIG_DIR/axe/agents; MODEL is provider/model (`--model`).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

# (file, its text, a question naming it, a command printing the fact, the fact)
CASES = [
    ("notes.txt", "Project codename: BLUE HERON\nRelease date: 14 March 2031\nOwner: Marta Kowalczyk\n",
     "What is the project codename in notes.txt?", "grep -n codename notes.txt", "BLUE HERON"),
    ("config.ini", "[server]\nhost = intranet.example\nport = 8417\nworkers = 3\n",
     "Which port is set in config.ini?", "grep port config.ini", "8417"),
    ("team.md", "# Team\nLead: Ingrid Solberg\nDesign: Tomas Ruiz\nOps: Wen Li\n",
     "Who is the lead in team.md?", "grep Lead team.md", "Ingrid Solberg"),
    ("recipe.txt", "Mix the flour and the butter.\nAdd two eggs.\nBake at 215 degrees for 35 minutes.\n",
     "At what temperature does recipe.txt say to bake?", "grep -i bake recipe.txt", "215"),
    ("VERSION", "4.12.9\n",
     "Which version is written in the file VERSION?", "cat VERSION", "4.12.9"),
    ("Cargo.toml", '[package]\nname = "saltmarsh"\nversion = "0.7.3"\nedition = "2021"\n',
     "What is the package name in Cargo.toml?", "grep name Cargo.toml", "saltmarsh"),
    ("package.json", '{\n  "name": "lantern-ui",\n  "version": "2.3.1",\n  "license": "MPL-2.0"\n}\n',
     "Which license does package.json declare?", "grep license package.json", "MPL-2.0"),
    ("shopping.txt", "apples: 6\nflour: 2 kg\nsaffron: 1 jar\nmilk: 3 litres\n",
     "How much saffron is on shopping.txt?", "grep saffron shopping.txt", "1 jar"),
    ("meeting.txt", "Next meeting: Thursday 9 October\nRoom: K-214\nAgenda: the budget\n",
     "Which room is the meeting in, according to meeting.txt?", "cat meeting.txt", "K-214"),
    ("contacts.csv", "name,phone\nAnika Berg,555-0192\nLeo Hart,555-0143\n",
     "What is Leo Hart's phone number in contacts.csv?", "grep Leo contacts.csv", "555-0143"),
    ("CHANGELOG.md", "# Changes\n## 3.1.0\n- Added a night theme called Owl\n## 3.0.2\n- Fixed a crash\n",
     "What is the night theme called, according to CHANGELOG.md?", "grep -i theme CHANGELOG.md", "Owl"),
    ("settings.yaml", "timeout_seconds: 47\nretries: 3\nlog_level: info\n",
     "What timeout does settings.yaml set?", "grep timeout settings.yaml", "47"),
    ("README.txt", "Tidewater: a tide table for sailors.\nMaintainer: Priya Natarajan\n",
     "Who maintains the project according to README.txt?", "grep -i maintainer README.txt", "Priya Natarajan"),
    ("inventory.txt", "bolts 340\nnuts 125\nwashers 990\nscrews 55\n",
     "How many washers are in inventory.txt?", "grep washers inventory.txt", "990"),
    ("motto.txt", "Our motto: Measure twice, ship once.\n",
     "What is the motto in motto.txt?", "cat motto.txt", "measure twice, ship once"),
    ("build.sh", '#!/bin/sh\necho "build id: KESTREL-7431"\n',
     "Which build id does build.sh print?", "sh build.sh", "KESTREL-7431"),
    ("hosts.txt", "db1 10.4.7.21\nweb1 10.4.7.30\ncache1 10.4.7.44\n",
     "What is the address of db1 in hosts.txt?", "grep db1 hosts.txt", "10.4.7.21"),
    ("pets.txt", "Our dog is called Biscuit.\nOur cat is called Pepper.\n",
     "What is the cat called in pets.txt?", "grep cat pets.txt", "Pepper"),
    ("flight.txt", "Flight QF 9 to Perth\nDeparts 21:35 from gate B54\n",
     "From which gate does the flight in flight.txt depart?", "grep gate flight.txt", "B54"),
    ("garden.txt", "Tomatoes: the south bed\nBeans: the east bed\nPumpkins: the north bed\n",
     "In which bed are the pumpkins, according to garden.txt?", "grep -i pumpkin garden.txt", "north bed"),
]

# (agent, its tool, the question of a case: what the agent is asked)
AGENTS = [
    ("reader", "read_file", lambda c: c[2]),
    ("runner", "run_command", lambda c: f"What does `{c[3]}` print?"),
]

KEYS = ["ok", "called", "result_has_fact", "one_call", "answer_has_fact"]


def trace_row(trace, tool, fact, answer, ok):
    events = [json.loads(l) for l in open(trace, encoding="utf-8")] if os.path.exists(trace) else []
    responses = [e for e in events if e["event"] == "response" and e["depth"] == 0]
    first = responses[0] if responses else {}
    results = [e for e in events if e["event"] == "tool_result" and e["depth"] == 0]
    calls = sum(e.get("tool_calls", 0) for e in responses)
    result = results[0].get("content", "") if results else ""
    good = bool(results) and not results[0].get("is_error") and fact.lower() in result.lower()
    if tool == "run_command":
        good = good and result.rstrip().splitlines()[-1].startswith("[exit status 0, ")
    return {
        "ok": ok,
        "called": any(c.get("name") == tool for c in first.get("calls", [])),
        "result_has_fact": good,
        # The model answered after one call, without calling again.
        "one_call": calls == 1 and len(responses) == 2,
        "answer_has_fact": fact.lower() in answer.lower(),
    }


def main():
    axe, config, traces, model = sys.argv[1:5]
    n = int(sys.argv[5]) if len(sys.argv) > 5 else 20
    os.makedirs(traces, exist_ok=True)
    work = tempfile.mkdtemp(prefix="axe-tool-rates-")
    try:
        for name, text, *_ in CASES:
            with open(os.path.join(work, name), "w", encoding="utf-8") as f:
                f.write(text)
        env = dict(os.environ, XDG_CONFIG_HOME=config)
        for agent, tool, ask in AGENTS:
            counts = dict.fromkeys(KEYS, 0)
            took = []
            print(f"\n{agent} ({tool}) on {model}:", flush=True)
            for i in range(n):
                case = CASES[i % len(CASES)]
                trace = os.path.join(traces, f"{agent}{i:02}.jsonl")
                if os.path.exists(trace):
                    os.remove(trace)
                t0 = time.monotonic()
                run = subprocess.run(
                    [axe, "run", agent, "--model", model, "--workdir", work,
                     "--timeout", "120", "--trace", trace, "--trace-bodies", "-p", ask(case)],
                    capture_output=True, text=True, env=env,
                )
                took.append(time.monotonic() - t0)
                row = trace_row(trace, tool, case[4], run.stdout.strip(), run.returncode == 0)
                for k, v in row.items():
                    counts[k] += int(v)
                marks = " ".join(k for k, v in row.items() if v)
                print(f"  {case[0]:14} {took[-1]:5.1f} s  {marks}  | {run.stdout.strip()[:70]!r}", flush=True)
            print(f"  over {n} questions (mean {sum(took) / n:.1f} s a run):")
            for k, v in counts.items():
                print(f"    {k:16} {v}/{n}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
