"""How often the demo's lead does what it should, over many inputs, for the
figures in docs/guide/getting-started.md ("The demo"): `make demo-rates`
(scripts/demo_rates.sh) starts the server and runs this.

    demo_rates.py AXE TRACE_DIR [N]

Runs `axe run lead` (the agents of $XDG_CONFIG_HOME) once per input and
reads each run's trace: did the lead delegate on its first turn, call both
sub-agents in that one response, did they answer, did the sub-agents run
side by side, is the lead's answer non-empty, and does it use what a
sub-agent returned (it shares a run of six words with a result); also, did
the critic's verdict come back in its [output] shape, and how many repair
turns that took over all runs.
"""

import json
import os
import subprocess
import sys
import time

INPUTS = [
    "axe 0.2 is out: sub-agents now run side by side, a failed request is retried, and every run can write a trace. Agent files need no change.",
    "It rained all morning, so the school fair moved into the gym, where the band played until six.",
    "Our team will move the weekly meeting from Monday to Friday, because two people are away on Mondays.",
    "The new bridge opens next week; it cuts the drive to the airport from forty minutes to fifteen.",
    "Cats sleep up to sixteen hours a day, mostly because their bodies save energy for short hunts.",
    "The library will stay open until ten on weekdays during exams, and coffee is allowed in the hall.",
    "Sales grew by eight percent this quarter, led by the new small model, while returns fell slightly.",
    "The train was late again this morning; the company blames a signal fault near the central station.",
    "Our garden produced so many tomatoes this year that we gave bags of them to all the neighbours.",
    "The museum reopens on Saturday after a year of repairs, with a new room for old maps of the city.",
    "A small bakery on the corner now sells bread made with local flour, and it sells out by noon.",
    "The software update fixes the crash on startup and makes the search twice as fast on old phones.",
    "After the storm, volunteers cleared the beach of plastic and found a message in a bottle from 1998.",
    "The city plans to plant a thousand trees along the river to cool the streets in summer.",
    "Our cat learned to open the kitchen door, so we now keep the food in a box with a lid.",
    "The band's new album was recorded in a barn over three weeks, and it sounds warmer than the last.",
    "The council voted to make the market street car-free on Saturdays, starting in the spring.",
    "A new study says short walks after meals help keep blood sugar steady in older adults.",
    "The ferry will run every hour in summer instead of every two hours, but tickets cost a bit more.",
    "The old cinema was sold to a theatre group that wants to stage plays there from next autumn.",
]


def words(text):
    return "".join(c.lower() if c.isalnum() else " " for c in text).split()


def shares_six_words(answer, results):
    a = words(answer)
    grams = {tuple(a[i : i + 6]) for i in range(len(a) - 5)}
    for r in results:
        w = words(r)
        if any(tuple(w[i : i + 6]) in grams for i in range(len(w) - 5)):
            return True
    return False


def is_verdict(text):
    """The critic's [output] shape: an object with its two keys."""
    try:
        v = json.loads(text)
    except ValueError:
        return False
    return isinstance(v, dict) and isinstance(v.get("weakest_point"), str) and isinstance(v.get("serious"), bool)


def main():
    axe, traces = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    os.makedirs(traces, exist_ok=True)
    counts = dict.fromkeys(
        ["ok", "delegated", "both_at_once", "answered", "shaped", "side_by_side", "non_empty", "uses_result"], 0
    )
    took = []
    repairs = 0
    for i in range(n):
        text = INPUTS[i % len(INPUTS)]
        trace = os.path.join(traces, f"run{i:02}.jsonl")
        if os.path.exists(trace):
            os.remove(trace)
        t0 = time.monotonic()
        run = subprocess.run(
            [axe, "run", "lead", "--timeout", "120", "--trace", trace, "--trace-bodies", "-p", text],
            capture_output=True,
            text=True,
        )
        took.append(time.monotonic() - t0)
        events = [json.loads(l) for l in open(trace, encoding="utf-8")] if os.path.exists(trace) else []
        first = next((e for e in events if e["event"] == "response" and e["depth"] == 0), {})
        results = [e for e in events if e["event"] == "tool_result" and e["depth"] == 0]
        texts = [e.get("content", "") for e in results if not e.get("is_error")]
        starts = {e["path"]: e["ts"] for e in events if e["event"] == "run_start" and e["depth"] == 1}
        ends = {e["path"]: e["ts"] for e in events if e["event"] == "run_end" and e["depth"] == 1}
        spans = [(starts[p], ends[p]) for p in starts if p in ends]
        overlap = any(a < d and c < b for j, (a, b) in enumerate(spans) for (c, d) in spans[j + 1 :])
        answer = run.stdout.strip()
        critic = [e.get("content", "") for e in results if e.get("agent_called") == "critic" and not e.get("is_error")]
        repairs += sum(1 for e in events if e["event"] == "repair")
        row = {
            "ok": run.returncode == 0,
            "delegated": first.get("tool_calls", 0) >= 1,
            "both_at_once": first.get("tool_calls", 0) >= 2,
            "answered": bool(texts),
            # The critic's verdict came back in its [output] shape.
            "shaped": any(is_verdict(c) for c in critic),
            "side_by_side": overlap,
            "non_empty": bool(answer),
            "uses_result": bool(answer) and shares_six_words(answer, texts),
        }
        for k, v in row.items():
            counts[k] += int(v)
        marks = " ".join(k for k, v in row.items() if v)
        print(f"run {i + 1:2}: {took[-1]:5.1f} s  {marks}", flush=True)
    print(f"\nover {n} runs (mean {sum(took) / n:.1f} s a run):")
    for k, v in counts.items():
        print(f"  {k:13} {v}/{n}")
    print(f"  repair turns  {repairs} in all")


if __name__ == "__main__":
    main()
