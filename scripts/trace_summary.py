"""What a `make demo` run did, read from its trace (`--trace`, JSON Lines):
what each sub-agent returned to the lead, and when each ran, relative to
the first sub-agent's start, so that calls that ran side by side show.

    trace_summary.py TRACE
"""

import json
import sys
from datetime import datetime


def when(event):
    return datetime.fromisoformat(event["ts"].replace("Z", "+00:00")).timestamp()


def main():
    events = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
    results = [e for e in events if e["event"] == "tool_result" and e["depth"] == 0]
    if results:
        print("--- what the sub-agents returned to lead ---")
        for e in results:
            flag = " (error)" if e.get("is_error") else ""
            text = " ".join(e.get("content", "").split())
            print(f"{e['agent_called']}{flag}: {text}")
    starts = {e["path"]: when(e) for e in events if e["event"] == "run_start" and e["depth"] == 1}
    ends = {e["path"]: when(e) for e in events if e["event"] == "run_end" and e["depth"] == 1}
    if starts:
        zero = min(starts.values())
        print("--- when the sub-agents ran (seconds from the first start) ---")
        for path in sorted(starts, key=starts.get):
            end = ends.get(path)
            span = f"{end - zero:5.2f}" if end is not None else "  ?  "
            print(f"{path:28} {starts[path] - zero:5.2f} .. {span}")
        spans = [(starts[p], ends[p]) for p in starts if p in ends]
        overlap = any(a < d and c < b for i, (a, b) in enumerate(spans) for (c, d) in spans[i + 1 :])
        if len(spans) > 1:
            print("(side by side)" if overlap else "(one after another)")


if __name__ == "__main__":
    main()
