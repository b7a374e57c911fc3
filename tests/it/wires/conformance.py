"""Checks request bodies axe sent against the vendors' own SDK types, with
extras forbidden (tests/it/wires/conformance.rs writes them, one JSON line
each: {"wire", "case", "body"}): `openai`'s CompletionCreateParams and,
for the Responses API, its ResponseCreateParams; `anthropic`'s
MessageCreateParams, `ollama`'s ChatRequest (and, since that takes any
mapping as a message or options, each message as its Message and the
options as its Options). Lines {"wire": "responses", "case", "reply"}
are what the fake answered on that API: each a `Response` or, streamed, a
`ResponseStreamEvent`, checked the same way (what axe reads is what the
API sends). Then mutates every valid body in ways the types refuse, to
show the check is not vacuous.

Usage: conformance.py BODIES.jsonl; prints one JSON object: for each body
its errors ("loc: message"), and the mutated bodies the types took."""
import copy
import json
import sys
import typing

import pydantic
import typing_extensions
from pydantic import BaseModel, TypeAdapter

import anthropic.types.message_create_params as anthropic_params
import openai.types.chat.completion_create_params as openai_params
import openai.types.responses.response_create_params as responses_params
from openai.types.responses import Response, ResponseStreamEvent
import ollama._types as ollama_types


def forbid(tp, seen):
    """Forbids extra keys in `tp` and every TypedDict and model it holds,
    except where the SDK itself allows them (a schema's own keywords)."""
    if id(tp) in seen:
        return
    seen.add(id(tp))
    for arg in typing.get_args(tp):
        if not isinstance(arg, (str, int, bool, bytes)) and arg is not None:
            forbid(arg, seen)
    if typing_extensions.is_typeddict(tp):
        for hint in typing_extensions.get_type_hints(tp, include_extras=True).values():
            forbid(hint, seen)
        config = dict(tp.__dict__.get("__pydantic_config__") or {})
        if "extra" not in config:
            tp.__pydantic_config__ = pydantic.ConfigDict(**config, extra="forbid")
    elif isinstance(tp, type) and issubclass(tp, BaseModel):
        for field in tp.model_fields.values():
            forbid(field.annotation, seen)
        if tp.model_config.get("extra") != "allow":
            tp.model_config["extra"] = "forbid"
            tp.model_rebuild(force=True)


SEEN = set()
for t in (
    openai_params.CompletionCreateParams,
    responses_params.ResponseCreateParamsNonStreaming,
    responses_params.ResponseCreateParamsStreaming,
    Response,
    anthropic_params.MessageCreateParams,
    ollama_types.ChatRequest,
    ollama_types.Message,
    ollama_types.Options,
):
    forbid(t, SEEN)
# Built after every type is: a model's schema holds its fields' as they were.
OPENAI = {
    False: TypeAdapter(openai_params.CompletionCreateParamsNonStreaming),
    True: TypeAdapter(openai_params.CompletionCreateParamsStreaming),
}
ANTHROPIC = {
    False: TypeAdapter(anthropic_params.MessageCreateParamsNonStreaming),
    True: TypeAdapter(anthropic_params.MessageCreateParamsStreaming),
}
RESPONSES = {
    False: TypeAdapter(responses_params.ResponseCreateParamsNonStreaming),
    True: TypeAdapter(responses_params.ResponseCreateParamsStreaming),
}
REPLIES = {"response": TypeAdapter(Response), "event": TypeAdapter(ResponseStreamEvent)}
OLLAMA = TypeAdapter(ollama_types.ChatRequest)
OLLAMA_MESSAGE = TypeAdapter(ollama_types.Message)
OLLAMA_OPTIONS = TypeAdapter(ollama_types.Options)


def consume(value, path, out):
    """Pydantic checks an `Iterable` field (the SDKs' `messages`, `tools`,
    a message's blocks) only as it is iterated: iterates every one."""
    if isinstance(value, dict):
        for k, v in value.items():
            consume(v, path + [str(k)], out)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            consume(v, path + [str(i)], out)
    elif hasattr(value, "__next__"):
        i = 0
        while True:
            try:
                item = next(value)
            except StopIteration:
                return
            except pydantic.ValidationError as e:
                out.extend(described(e, path + [str(i)]))
                return
            consume(item, path + [str(i)], out)
            i += 1


def described(e, path):
    out = []
    for err in e.errors():
        loc = ".".join(path + [str(p) for p in err["loc"]])
        out.append("%s: %s" % (loc, err["msg"]))
    return out


def extras(value, path, out):
    """The keys of `value` its model does not have: the `openai` package's
    models take any (extra "allow"), and keep them as `model_extra`."""
    if isinstance(value, BaseModel):
        for k in value.model_extra or {}:
            out.append("%s: Extra inputs are not permitted" % ".".join(path + [k]))
        for k in type(value).model_fields:
            extras(getattr(value, k), path + [k], out)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            extras(v, path + [str(i)], out)


def reply_errors(kind, value):
    try:
        validated = REPLIES[kind].validate_python(value)
    except pydantic.ValidationError as e:
        return described(e, [])
    out = []
    extras(validated, [], out)
    return out


def errors_of(adapter, value, prefix=""):
    base = [prefix.rstrip(".")] if prefix else []
    try:
        validated = adapter.validate_python(value)
    except pydantic.ValidationError as e:
        return described(e, base)
    out = []
    consume(validated, base, out)
    return out


def check(wire, body):
    streamed = body.get("stream") is True
    if wire == "openai":
        return errors_of(OPENAI[streamed], body)
    if wire == "anthropic":
        return errors_of(ANTHROPIC[streamed], body)
    if wire == "responses":
        return errors_of(RESPONSES[streamed], body)
    errs = errors_of(OLLAMA, body)
    for i, m in enumerate(body.get("messages") or []):
        errs += errors_of(OLLAMA_MESSAGE, m, "messages.%d." % i)
    if isinstance(body.get("options"), dict):
        errs += errors_of(OLLAMA_OPTIONS, body["options"], "options.")
    return errs


def first_tool_property(wire, body):
    tool = body["tools"][0]
    if wire == "anthropic":
        return tool["input_schema"]["properties"]
    if wire == "responses":
        return tool["parameters"]["properties"]
    return tool["function"]["parameters"]["properties"]


def mutations(wire, body):
    """(name, how) pairs, each a change the wire's type refuses."""
    # The Responses API's every key is optional; its messages are `input`.
    required = {"openai": "messages", "anthropic": "max_tokens", "ollama": "model"}.get(wire)
    messages = "input" if wire == "responses" else "messages"
    out = [
        ("an unknown key", lambda b: b.__setitem__("axe_unknown", 1)),
        ("a model that is a number", lambda b: b.__setitem__("model", 42)),
        # Ollama's role is any string.
        ("a role that is no role", lambda b: b[messages][0].__setitem__("role", 5 if wire == "ollama" else "wizard")),
        ("an unknown key in a message", lambda b: b[messages][0].__setitem__("axe_unknown", 1)),
    ]
    if required:
        out.append(("a required key left out", lambda b: b.pop(required)))
    if wire == "responses":
        out.append(("store that is not a bool", lambda b: b.__setitem__("store", [1])))
        out.append(("an include no API has", lambda b: b.__setitem__("include", ["axe.unknown"])))
    if body.get("tools"):
        if wire == "responses":
            out.append(("an unknown key in a tool", lambda b: b["tools"][0].__setitem__("axe_unknown", 1)))
            out.append(("strict that is not a bool", lambda b: b["tools"][0].__setitem__("strict", [1])))
        elif wire == "anthropic":
            out.append(("an unknown key in a tool", lambda b: b["tools"][0].__setitem__("axe_unknown", 1)))
        else:
            out.append(("an unknown key in a tool's function", lambda b: b["tools"][0]["function"].__setitem__("axe_unknown", 1)))
        if wire == "ollama":
            out.append(("a property's key Ollama does not model", lambda b: next(iter(first_tool_property(wire, b).values())).__setitem__("title", "T")))
    if wire == "anthropic" and isinstance(body.get("tool_choice"), dict):
        out.append(("a tool_choice flag that is not a bool", lambda b: b["tool_choice"].__setitem__("disable_parallel_tool_use", "sometimes")))
    if wire in ("openai", "responses") and "parallel_tool_calls" in body:
        out.append(("parallel_tool_calls that is not a bool", lambda b: b.__setitem__("parallel_tool_calls", [1])))
    return out


def main():
    report = {"bodies": [], "replies": [], "mutated": 0, "taken": []}
    with open(sys.argv[1]) as f:
        for line in f:
            item = json.loads(line)
            if "reply" in item:
                kind = "event" if "sequence_number" in item["reply"] else "response"
                errs = reply_errors(kind, item["reply"])
                report["replies"].append({"case": item["case"], "kind": kind, "errors": errs})
                continue
            wire, body = item["wire"], item["body"]
            errs = check(wire, body)
            report["bodies"].append({"wire": wire, "case": item["case"], "errors": errs})
            if errs:
                continue
            for name, how in mutations(wire, body):
                mutated = copy.deepcopy(body)
                how(mutated)
                report["mutated"] += 1
                if not check(wire, mutated):
                    report["taken"].append("%s %s: %s" % (wire, item["case"], name))
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    main()
