"""Drives axe serve with the official `openai` package, as a user would.

    client.py BASE_URL KEY ACTION [ARG]

prints one JSON object: what came back, or the error the client raised
(its class, status and body). ACTION: models, complete, stream, schema,
cancel (read the first content chunk of a stream, then close it),
complete_retrying (complete with the client's default retries), image
(complete with a PNG as an image_url part's data: URL).
"""
import json
import sys

import openai

base, key, action = sys.argv[1], sys.argv[2], sys.argv[3]
arg = sys.argv[4] if len(sys.argv) > 4 else "helper"
client = openai.OpenAI(base_url=base + "/v1", api_key=key, max_retries=0, timeout=30)
msgs = [{"role": "user", "content": "Say hello."}]


def out(v):
    print(json.dumps(v))
    sys.stdout.flush()


try:
    if action == "models":
        out({"ids": [m.id for m in client.models.list()]})
    elif action == "complete":
        r = client.chat.completions.create(model=arg, messages=msgs)
        out({"id": r.id, "model": r.model, "content": r.choices[0].message.content,
             "finish": r.choices[0].finish_reason, "usage": r.usage.model_dump()})
    elif action == "image":
        png = "data:image/png;base64,iVBORw0KGgpJSERS"
        r = client.chat.completions.create(model=arg, messages=[{"role": "user", "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": png, "detail": "low"}}]}])
        out({"content": r.choices[0].message.content})
    elif action == "complete_retrying":
        retrying = openai.OpenAI(base_url=base + "/v1", api_key=key, timeout=30)
        r = retrying.chat.completions.create(model=arg, messages=msgs)
        out({"content": r.choices[0].message.content})
    elif action == "stream":
        pieces, finish, usage = [], None, None
        stream = client.chat.completions.create(
            model=arg, messages=msgs, stream=True, stream_options={"include_usage": True})
        for chunk in stream:
            if chunk.usage is not None:
                usage = chunk.usage.model_dump()
            for c in chunk.choices:
                if c.delta.content:
                    pieces.append(c.delta.content)
                if c.finish_reason:
                    finish = c.finish_reason
        out({"pieces": pieces, "finish": finish, "usage": usage})
    elif action == "schema":
        schema = {"type": "object", "properties": {"n": {"type": "integer"}},
                  "required": ["n"], "additionalProperties": False}
        r = client.chat.completions.create(
            model=arg, messages=msgs,
            response_format={"type": "json_schema",
                             "json_schema": {"name": "count", "schema": schema, "strict": True}})
        out({"content": r.choices[0].message.content})
    elif action == "cancel":
        stream = client.chat.completions.create(model=arg, messages=msgs, stream=True)
        for chunk in stream:
            if any(c.delta.content for c in chunk.choices):
                break
        stream.close()
        out({"closed": True})
except openai.APIStatusError as e:
    out({"error": type(e).__name__, "status": e.status_code, "body": e.body})
except openai.APIError as e:
    out({"error": type(e).__name__, "message": str(e)})
