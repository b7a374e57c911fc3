// Drives axe serve with the official `openai` package for Node, as a user
// would (its defaults: two retries of a 5xx, the SDK's own timeouts).
//
//     node client_node.mjs BASE_URL KEY ACTION [ARG]
//
// prints one JSON object: what came back, or the error the client raised
// (its class, status, message and body). The packages are found in
// $AXE_NODE_MODULES (target/serve-client/node/node_modules). ACTION:
// models, retrieve, complete, system, stream, parse, tools, responses,
// responses_stream.
import { createRequire } from "node:module";

const require = createRequire(process.env.AXE_NODE_MODULES + "/");
const OpenAI = require("openai");
const { zodResponseFormat } = require("openai/helpers/zod");
const { z } = require("zod");

const [base, key, action, arg = "helper"] = process.argv.slice(2);
const client = new OpenAI({ baseURL: base + "/v1", apiKey: key });
const messages = [{ role: "user", content: "Say hello." }];
const out = (v) => console.log(JSON.stringify(v));

async function main() {
  switch (action) {
    case "models": {
      const ids = [];
      for await (const m of client.models.list()) ids.push(m.id);
      return { ids };
    }
    case "retrieve": {
      const m = await client.models.retrieve(arg);
      return { id: m.id, object: m.object, owned_by: m.owned_by };
    }
    case "complete": {
      const r = await client.chat.completions.create({ model: arg, messages });
      const c = r.choices[0];
      return { id: r.id, model: r.model, content: c.message.content, finish: c.finish_reason, usage: r.usage };
    }
    case "system": {
      const r = await client.chat.completions.create({
        model: arg,
        messages: [{ role: "system", content: "Answer in French." }, ...messages],
      });
      return { content: r.choices[0].message.content };
    }
    case "stream": {
      const pieces = [];
      let finish = null;
      let usage = null;
      const stream = await client.chat.completions.create({
        model: arg, messages, stream: true, stream_options: { include_usage: true },
      });
      for await (const chunk of stream) {
        if (chunk.usage) usage = chunk.usage;
        for (const c of chunk.choices) {
          if (c.delta.content) pieces.push(c.delta.content);
          if (c.finish_reason) finish = c.finish_reason;
        }
      }
      return { pieces, finish, usage };
    }
    case "parse": {
      const r = await client.chat.completions.parse({
        model: arg, messages,
        response_format: zodResponseFormat(z.object({ n: z.number().int() }), "count"),
      });
      return { parsed: r.choices[0].message.parsed };
    }
    case "tools": {
      const r = await client.chat.completions.create({
        model: arg, messages,
        tools: [{ type: "function", function: { name: "get_weather", parameters: { type: "object", properties: {} } } }],
      });
      return { content: r.choices[0].message.content, tool_calls: r.choices[0].message.tool_calls ?? null };
    }
    case "responses": {
      const r = await client.responses.create({ model: arg, instructions: "Be brief.", input: "Say hello." });
      return { id: r.id, status: r.status, text: r.output_text, usage: r.usage };
    }
    case "responses_stream": {
      const deltas = [];
      let done = null;
      const stream = await client.responses.create({ model: arg, input: "Say hello.", stream: true });
      for await (const ev of stream) {
        if (ev.type === "response.output_text.delta") deltas.push(ev.delta);
        // `output_text` is the SDK's own sum on a whole response, not a
        // field of the wire's: the completed event's text is its items'.
        const text = (r) =>
          r.output.flatMap((o) => o.content ?? []).filter((c) => c.type === "output_text").map((c) => c.text).join("");
        if (ev.type === "response.completed") done = { text: text(ev.response), usage: ev.response.usage };
      }
      return { deltas, done };
    }
    default:
      throw new Error("unknown action " + action);
  }
}

try {
  out(await main());
} catch (e) {
  if (e instanceof OpenAI.APIError) {
    out({ error: e.constructor.name, status: e.status ?? null, message: e.message, body: e.error ?? null });
  } else {
    out({ error: e.constructor.name, message: String(e) });
  }
}
