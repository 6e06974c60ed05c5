// cact-serve through the official openai npm package: a chat, a tool-call round
// trip, streaming with tool-call deltas (raw chunks and the SDK's own stream
// helper), models, and errors as the SDK's typed exceptions.
//   node test.mjs BASE_URL MODELS_DIR      (BASE_URL ends in /v1)
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import OpenAI from "openai";

const [baseURL, modelsDir] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: "not-needed-on-loopback", maxRetries: 0, timeout: 120_000 });
const readJson = (name) => JSON.parse(readFileSync(`${modelsDir}/${name}`, "utf8"));
const asTools = (list) => list.map((fn) => ({ type: "function", function: fn }));
const demoTools = asTools(readJson("tools.json"));
const catalog = Object.fromEntries(readJson("catalog.json").map((fn) => [fn.name, fn]));
const model = "tools-tiny";
let passed = 0;

async function test(name, body) {
  await body();
  passed += 1;
  console.log(`ok   ${name}`);
}

await test("models.list and models.retrieve", async () => {
  const models = [];
  for await (const m of client.models.list()) models.push(m);
  assert.deepEqual(models.map((m) => m.id), [model]);
  assert.equal((await client.models.retrieve(model)).id, model);
});

await test("chat: a plain answer when no listed tool fits", async () => {
  const done = await client.chat.completions.create({
    model,
    messages: [{ role: "user", content: "how do I get to the office" }],
    tools: asTools([catalog.set_volume]),
  });
  const [choice] = done.choices;
  assert.equal(done.object, "chat.completion");
  assert.equal(choice.finish_reason, "stop");
  assert.equal(choice.message.role, "assistant");
  assert.equal(choice.message.content, "I cannot do that with the tools I have.");
  assert.equal(choice.message.tool_calls, undefined);
  assert.equal(choice.message.reasoning_content, "No tool fits.");
  assert.equal(done.usage.total_tokens, done.usage.prompt_tokens + done.usage.completion_tokens);
});

await test("tool-call round trip: call, tool result, answer", async () => {
  const messages = [{ role: "user", content: "weather in Paris please" }];
  const first = await client.chat.completions.create({ model, messages, tools: demoTools });
  const call = first.choices[0].message.tool_calls?.[0];
  assert.equal(first.choices[0].finish_reason, "tool_calls");
  assert.match(call.id, /^call_/);
  assert.equal(call.type, "function");
  assert.equal(call.function.name, "get_weather");
  assert.deepEqual(JSON.parse(call.function.arguments), { city: "Paris" });
  assert.equal(first.cact.validation[0].ok, true);

  messages.push(first.choices[0].message);
  messages.push({ role: "tool", tool_call_id: call.id, content: JSON.stringify({ temp_c: 21, sky: "sunny" }) });
  const second = await client.chat.completions.create({ model, messages, tools: demoTools });
  assert.equal(second.choices[0].finish_reason, "stop");
  assert.equal(second.choices[0].message.content, "It is 21 degrees and sunny in Paris.");
  assert.ok(second.usage.prompt_tokens_details.cached_tokens > 0, "the follow-up reuses the held conversation");
});

await test("streaming: tool-call deltas in raw chunks", async () => {
  const stream = await client.chat.completions.create({
    model,
    messages: [{ role: "user", content: "set a timer for 10 minutes" }],
    tools: demoTools,
    stream: true,
    stream_options: { include_usage: true },
  });
  const calls = [];
  let finish = null, usage = null, reasoning = "";
  for await (const chunk of stream) {
    assert.equal(chunk.object, "chat.completion.chunk");
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      reasoning += choice.delta.reasoning_content ?? "";
      for (const d of choice.delta.tool_calls ?? []) {
        calls[d.index] ??= { id: "", name: "", arguments: "" };
        calls[d.index].id += d.id ?? "";
        calls[d.index].name += d.function?.name ?? "";
        calls[d.index].arguments += d.function?.arguments ?? "";
      }
      finish = choice.finish_reason ?? finish;
    }
  }
  assert.equal(finish, "tool_calls");
  assert.equal(reasoning, "Use set_timer.");
  assert.equal(calls.length, 1);
  assert.match(calls[0].id, /^call_/);
  assert.equal(calls[0].name, "set_timer");
  assert.deepEqual(JSON.parse(calls[0].arguments), { minutes: 10 });
  assert.ok(usage.completion_tokens > 0);
});

await test("streaming: the SDK's stream helper assembles the call", async () => {
  const runner = client.chat.completions.stream({
    model,
    messages: [{ role: "user", content: "call Ben" }],
    tools: demoTools,
  });
  const final = await runner.finalChatCompletion();
  const [call] = final.choices[0].message.tool_calls;
  assert.equal(final.choices[0].finish_reason, "tool_calls");
  assert.equal(call.function.name, "call_contact");
  assert.deepEqual(JSON.parse(call.function.arguments), { name: "Ben" });
});

await test("errors: a schema outside the subset is a BadRequestError naming the path", async () => {
  const bad = [{ type: "function", function: { name: "f", parameters: {
    type: "object", properties: { code: { type: "string", pattern: "^[a-z]+$" } } } } }];
  await assert.rejects(
    client.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }], tools: bad }),
    (err) => {
      assert.ok(err instanceof OpenAI.BadRequestError, `not a BadRequestError: ${err}`);
      assert.equal(err.status, 400);
      assert.equal(err.param, "tools");
      assert.equal(err.type, "invalid_request_error");
      assert.match(err.message, /parameters\.properties\.code/);
      assert.match(err.message, /pattern/);
      return true;
    });
  await assert.rejects(client.models.retrieve("gpt-4o"), (err) => err instanceof OpenAI.NotFoundError);
  await assert.rejects(
    client.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }], temperature: "hot" }),
    (err) => err instanceof OpenAI.BadRequestError && err.param === "temperature");
});

console.log(`${passed} tests passed`);
