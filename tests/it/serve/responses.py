"""Drives axe serve's /v1/responses with the official `openai` package, as
a user would.

    responses.py BASE_URL ACTION AGENT

prints one JSON object: what came back, or the error the client raised
(its class, status and body). ACTION: create, stream (the raw events),
helper (`responses.stream` and its final response), parse (a pydantic
model), tools (a request with a tool, which axe refuses).
"""
import json
import sys

import openai
import pydantic
from openai.types.responses import Response, ResponseStreamEvent

# The SDK builds its objects without checking them: these check what axe
# sent against the SDK's own types (a missing or mistyped field fails).
valid_response = pydantic.TypeAdapter(Response).validate_python
valid_event = pydantic.TypeAdapter(ResponseStreamEvent).validate_python

base, action, agent = sys.argv[1], sys.argv[2], sys.argv[3]
client = openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0, timeout=30)


def out(v):
    print(json.dumps(v))
    sys.stdout.flush()


class Count(pydantic.BaseModel):
    n: int


try:
    if action == "create":
        raw = client.responses.with_raw_response.create(
            model=agent, input="Say hello.", instructions="Be brief.")
        valid_response(raw.http_response.json())
        r = raw.parse()
        out({"id": r.id, "model": r.model, "status": r.status, "text": r.output_text,
             "output": [o.model_dump() for o in r.output], "usage": r.usage.model_dump()})
    elif action == "stream":
        events = []
        for e in client.responses.create(model=agent, input="Say hello.", stream=True):
            events.append(e.model_dump())
            valid_event(e.to_dict())
        out({"events": events})
    elif action == "helper":
        deltas = []
        with client.responses.stream(model=agent, input="Say hello.") as s:
            for e in s:
                if e.type == "response.output_text.delta":
                    deltas.append(e.delta)
            final = s.get_final_response()
        out({"deltas": deltas, "text": final.output_text, "status": final.status,
             "usage": final.usage.model_dump()})
    elif action == "parse":
        r = client.responses.parse(model=agent, input="Count.", text_format=Count)
        out({"parsed": r.output_parsed.model_dump(), "type": type(r.output_parsed).__name__})
    elif action == "tools":
        tool = {"type": "function", "name": "get_time", "parameters": {"type": "object", "properties": {}}}
        r = client.responses.create(model=agent, input="What time is it?", tools=[tool])
        out({"text": r.output_text})
except pydantic.ValidationError as e:
    out({"error": "not the SDK's type", "message": str(e)})
except openai.APIStatusError as e:
    out({"error": type(e).__name__, "status": e.status_code, "body": e.body})
except openai.APIError as e:
    out({"error": type(e).__name__, "message": str(e)})
