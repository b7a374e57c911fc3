// Drives axe serve with the Vercel AI SDK (`ai` and `@ai-sdk/openai`), as a
// user would: `createOpenAI({baseURL, apiKey})` and the SDK's defaults (two
// retries of a 5xx).
//
//     node client_ai.mjs BASE_URL KEY ACTION [ARG]
//
// prints one JSON object: what came back, or the error the SDK raised (its
// name, the status and message of the last call, and how many calls it
// made). The packages are found in $AXE_NODE_MODULES
// (target/serve-client/node/node_modules). ACTION: text, system, stream,
// object, tools (over /v1/chat/completions, `provider.chat(model)`) and
// responses, responses_stream (the default `provider(model)`, which posts
// to /v1/responses).
import { createRequire } from "node:module";

const require = createRequire(process.env.AXE_NODE_MODULES + "/");
const { createOpenAI } = require("@ai-sdk/openai");
const { generateText, streamText, generateObject, tool } = require("ai");
const { z } = require("zod");

const [base, key, action, arg = "helper"] = process.argv.slice(2);
const provider = createOpenAI({ baseURL: base + "/v1", apiKey: key });
const prompt = "Say hello.";
const out = (v) => console.log(JSON.stringify(v));

async function stream(model) {
  const pieces = [];
  const errors = [];
  const r = streamText({ model, prompt, onError: ({ error }) => errors.push(error) });
  for await (const piece of r.textStream) pieces.push(piece);
  if (errors.length > 0) throw errors[0];
  return { pieces, finish: await r.finishReason, usage: await r.usage };
}

async function main() {
  switch (action) {
    case "text": {
      const r = await generateText({ model: provider.chat(arg), prompt });
      return { text: r.text, finish: r.finishReason, usage: r.usage };
    }
    case "system": {
      const r = await generateText({ model: provider.chat(arg), system: "Answer in French.", prompt });
      return { text: r.text };
    }
    case "stream":
      return stream(provider.chat(arg));
    case "object": {
      const r = await generateObject({
        model: provider.chat(arg), prompt, schema: z.object({ n: z.number().int() }),
      });
      return { object: r.object, usage: r.usage };
    }
    case "tools": {
      const r = await generateText({
        model: provider.chat(arg), prompt,
        tools: {
          get_weather: tool({
            description: "The weather", inputSchema: z.object({}), execute: async () => "sunny",
          }),
        },
      });
      return { text: r.text, tool_calls: r.toolCalls };
    }
    case "responses": {
      const r = await generateText({ model: provider(arg), system: "Be brief.", prompt });
      return { text: r.text, finish: r.finishReason, usage: r.usage };
    }
    case "responses_stream":
      return stream(provider(arg));
    default:
      throw new Error("unknown action " + action);
  }
}

try {
  out(await main());
} catch (e) {
  // After its retries the SDK throws a RetryError holding each call's.
  const last = e.lastError ?? e;
  out({
    error: e.name, status: last.statusCode ?? null, message: last.message ?? String(e),
    attempts: e.errors ? e.errors.length : 1,
  });
}
