"""Checks what axe sends to the providers' batch engines against the
vendors' own SDK types, extras forbidden (tests/it/provider_batch_conformance.rs
writes them, one JSON line each: {"what", "body"}): OpenAI's batch creation
(`openai.types.batch_create_params.BatchCreateParams`), each line of the
uploaded file (its `custom_id`, `method` and `url` as OpenAI's batch guide
gives them, its `body` a `CompletionCreateParamsNonStreaming`), and
Anthropic's batch creation (`anthropic.types.messages.batch_create_params.
BatchCreateParams`, whose requests' `params` are a
`MessageCreateParamsNonStreaming`). Then mutates each so that the types
must refuse it, to show the check is not vacuous.

Usage: provider_batch_conformance.py BODIES.jsonl; prints one JSON object:
each body's errors ("loc: message"), and the mutated bodies taken."""
import copy
import json
import os
import sys

import pydantic
from pydantic import TypeAdapter

import anthropic.types.messages.batch_create_params as anthropic_batch
import openai.types.batch_create_params as openai_batch
import openai.types.chat.completion_create_params as openai_params

# The same forbidding of extra keys as the request bodies' check.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "wires"))
from conformance import forbid  # noqa: E402


SEEN = set()
for t in (
    openai_batch.BatchCreateParams,
    openai_params.CompletionCreateParamsNonStreaming,
    anthropic_batch.BatchCreateParams,
):
    forbid(t, SEEN)
OPENAI_BATCH = TypeAdapter(openai_batch.BatchCreateParams)
OPENAI_BODY = TypeAdapter(openai_params.CompletionCreateParamsNonStreaming)
ANTHROPIC_BATCH = TypeAdapter(anthropic_batch.BatchCreateParams)


def errors_of(adapter, value, prefix=""):
    try:
        validated = adapter.validate_python(value)
    except pydantic.ValidationError as e:
        return ["%s%s: %s" % (prefix, ".".join(str(p) for p in err["loc"]), err["msg"])
                for err in e.errors()]
    # An Iterable field is checked only as it is iterated.
    try:
        json.dumps(validated, default=lambda v: list(v))
    except pydantic.ValidationError as e:
        return ["%s(iterated) %s: %s" % (prefix, ".".join(str(p) for p in err["loc"]), err["msg"])
                for err in e.errors()]
    return []


def line_errors(line):
    """One line of OpenAI's batch input file."""
    errs = []
    if set(line) != {"custom_id", "method", "url", "body"}:
        errs.append("line: keys %s" % sorted(line))
    if not isinstance(line.get("custom_id"), str) or not line.get("custom_id"):
        errs.append("custom_id: not a string")
    if line.get("method") != "POST":
        errs.append("method: not POST")
    if line.get("url") != "/v1/chat/completions":
        errs.append("url: not /v1/chat/completions")
    return errs + errors_of(OPENAI_BODY, line.get("body"), "body.")


def check(what, body):
    if what == "openai batch":
        return errors_of(OPENAI_BATCH, body)
    if what == "openai line":
        return line_errors(body)
    return errors_of(ANTHROPIC_BATCH, body)


MUTATIONS = {
    "openai batch": [
        ("an unknown key", lambda b: b.__setitem__("axe_unknown", 1)),
        ("an endpoint that is none", lambda b: b.__setitem__("endpoint", "/v1/nothing")),
        ("a window that is not 24h", lambda b: b.__setitem__("completion_window", "1h")),
    ],
    "openai line": [
        ("an unknown key", lambda b: b.__setitem__("axe_unknown", 1)),
        ("a method that is GET", lambda b: b.__setitem__("method", "GET")),
        ("an unknown key in the body", lambda b: b["body"].__setitem__("axe_unknown", 1)),
        ("a streamed body", lambda b: b["body"].__setitem__("stream", True)),
    ],
    "anthropic batch": [
        ("an unknown key", lambda b: b.__setitem__("axe_unknown", 1)),
        ("a request with no custom_id", lambda b: b["requests"][0].pop("custom_id")),
        ("an unknown key in params", lambda b: b["requests"][0]["params"].__setitem__("axe_unknown", 1)),
        ("params with no max_tokens", lambda b: b["requests"][0]["params"].pop("max_tokens")),
    ],
}


def main():
    report = {"bodies": [], "mutated": 0, "taken": []}
    with open(sys.argv[1]) as f:
        for line in f:
            item = json.loads(line)
            what, body = item["what"], item["body"]
            errs = check(what, body)
            report["bodies"].append({"what": what, "errors": errs})
            if errs:
                continue
            for name, how in MUTATIONS[what]:
                mutated = copy.deepcopy(body)
                how(mutated)
                report["mutated"] += 1
                if not check(what, mutated):
                    report["taken"].append("%s: %s" % (what, name))
    json.dump(report, sys.stdout)


main()
