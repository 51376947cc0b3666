// _shared/llm.ts against the fake OpenAI server through the real SDK: structured output, one
// repair round trip, typed failures, retries with backoff on 429 (Retry-After honoured within the
// cap) / 5xx / timeouts, and usage accounting.
import assert from "node:assert/strict";
import { z } from "zod";
import { createLlm, LlmOutputError, LlmRequestError } from "../supabase/functions/_shared/llm.ts";
import { FakeOpenAI, reply } from "./fake_openai.ts";
import { testConfig } from "./support/config.ts";

const Schema = z.object({ answer: z.number() });
const ask = [{ role: "user" as const, content: "What is six times seven?" }];

async function setup(retry = { maxRetries: 3, baseDelayMs: 10, maxDelayMs: 1_500 }, timeoutMs = 2_000) {
  const fake = await FakeOpenAI.start();
  const waits: number[] = [];
  const llm = createLlm(testConfig({ llm: { apiKey: "k", baseUrl: fake.baseUrl, model: "fake-llm", timeoutMs } }), {
    retry,
    // The waits are recorded, not slept: what the client waited is asserted, not the wall clock.
    sleep: (ms) => (waits.push(ms), Promise.resolve()),
  })!;
  return { fake, llm, waits };
}

Deno.test("llm: no key and no base URL → no LLM (rule-based paths take over)", () => {
  assert.equal(createLlm(testConfig({ llm: { apiKey: undefined, baseUrl: undefined } })), undefined);
});

Deno.test("llm: valid JSON is parsed and validated; usage is recorded; JSON mode and schema are sent", async () => {
  const { fake, llm } = await setup();
  try {
    fake.onChat("six times seven", {
      kind: "content",
      content: '{"answer":42}',
      usage: { prompt_tokens: 30, completion_tokens: 5 },
    });
    const out = await llm.completeJson(Schema, ask);
    assert.deepEqual(out.value, { answer: 42 });
    assert.equal(out.repaired, false);
    assert.deepEqual({
      p: out.usage.promptTokens,
      c: out.usage.completionTokens,
      t: out.usage.totalTokens,
      r: out.usage.requests,
    }, { p: 30, c: 5, t: 35, r: 1 });
    assert.equal(llm.totalUsage.totalTokens, 35);
    const body = fake.chatRequests()[0]!.body;
    assert.equal(body.model, "fake-llm");
    assert.deepEqual(body.response_format, { type: "json_object" });
    assert.match(body.messages[0].content, /JSON schema/);
    assert.equal(fake.chatRequests()[0]!.headers.authorization, "Bearer k");
  } finally {
    await fake.close();
  }
});

Deno.test("llm: invalid JSON → one repair round trip with the error → success", async () => {
  const { fake, llm } = await setup();
  try {
    fake.onChat("six times seven", [reply.text("forty-two"), reply.json({ answer: 42 })]);
    const out = await llm.completeJson(Schema, ask);
    assert.deepEqual(out.value, { answer: 42 });
    assert.equal(out.repaired, true);
    const repair = fake.chatRequests()[1]!.body.messages;
    assert.equal(repair.at(-2).role, "assistant");
    assert.equal(repair.at(-2).content, "forty-two");
    assert.match(repair.at(-1).content, /not valid JSON/);
    assert.equal(out.usage.requests, 2);
  } finally {
    await fake.close();
  }
});

Deno.test("llm: schema mismatch twice → LlmOutputError (no endless repairs)", async () => {
  const { fake, llm } = await setup();
  try {
    fake.onChat("six times seven", reply.json({ answer: "42" }));
    const err = await llm.completeJson(Schema, ask).catch((e) => e);
    assert.ok(err instanceof LlmOutputError);
    assert.match(err.message, /answer: Invalid input: expected number/);
    assert.equal(fake.chatRequests().length, 2);
  } finally {
    await fake.close();
  }
});

Deno.test("llm: 429 is retried after the server's Retry-After, then succeeds", async () => {
  const { fake, llm, waits } = await setup();
  try {
    fake.onChat("six times seven", [
      reply.error(429, { retryAfter: 1 }),
      reply.error(429, { retryAfter: 1 }),
      reply.json({ answer: 42 }),
    ]);
    const out = await llm.completeJson(Schema, ask);
    assert.deepEqual(out.value, { answer: 42 });
    assert.equal(fake.chatRequests().length, 3);
    assert.deepEqual(waits, [1000, 1000], "each retry waited the server's Retry-After (1 s)");
    assert.equal(out.usage.requests, 3);
  } finally {
    await fake.close();
  }
});

Deno.test("llm: Retry-After beyond the cap is capped; 5xx backs off exponentially; gives up with LlmRequestError", async () => {
  const { fake, llm, waits } = await setup({ maxRetries: 3, baseDelayMs: 20, maxDelayMs: 100 });
  try {
    fake.onChat("six times seven", [
      reply.error(429, { retryAfter: 3600 }),
      reply.error(500),
      reply.error(503),
      reply.error(502),
    ]);
    const err = await llm.completeJson(Schema, ask).catch((e) => e);
    assert.ok(err instanceof LlmRequestError);
    assert.equal(err.status, 502);
    assert.equal(err.retryable, true);
    assert.equal(fake.chatRequests().length, 4);
    assert.equal(waits[0], 100, "capped Retry-After");
    assert.ok(waits[1]! >= 40 && waits[1]! <= 48, `2nd wait ${waits[1]}`); // 20·2^1 + ≤20% jitter
    assert.ok(waits[2]! >= 80 && waits[2]! <= 96, `3rd wait ${waits[2]}`);
  } finally {
    await fake.close();
  }
});

/** An instant in asctime's HTTP-date form, "Sun Nov  6 08:49:37 1994" (GMT, though it does not say so). */
function asctime(at: Date): string {
  const [day, dd, mon, yyyy, time] = at.toUTCString().replace(",", "").split(" ");
  return `${day} ${mon} ${dd!.replace(/^0/, " ")} ${time} ${yyyy}`;
}

Deno.test("llm: a Retry-After date is GMT whatever the process's time zone, asctime's form too", async () => {
  const { fake, llm, waits } = await setup({ maxRetries: 2, baseDelayMs: 10, maxDelayMs: 100_000_000 });
  const zone = Deno.env.get("TZ");
  try {
    Deno.env.set("TZ", "America/St_Johns"); // Deno resets V8's zone when TZ is set
    const inAMinute = new Date(Math.ceil(Date.now() / 1000) * 1000 + 60_000);
    fake.onChat("six times seven", [
      { kind: "error", status: 429, headers: { "retry-after": asctime(inAMinute) } },
      reply.json({ answer: 42 }),
    ]);
    assert.deepEqual((await llm.completeJson(Schema, ask)).value, { answer: 42 });
    assert.ok(waits[0]! > 55_000 && waits[0]! <= 61_000, `waited ${waits[0]} ms for ${asctime(inAMinute)}`);
  } finally {
    if (zone === undefined) Deno.env.delete("TZ");
    else Deno.env.set("TZ", zone);
    await fake.close();
  }
});

Deno.test("llm: a hanging server times out and is retried; a slow answer within the timeout is fine", async () => {
  const { fake, llm } = await setup({ maxRetries: 2, baseDelayMs: 10, maxDelayMs: 100 }, 300);
  try {
    fake.onChat("six times seven", [reply.hang(), reply.slow(100, reply.json({ answer: 42 }))]);
    const out = await llm.completeJson(Schema, ask);
    assert.deepEqual(out.value, { answer: 42 });
    assert.equal(fake.chatRequests().length, 2);
  } finally {
    await fake.close();
  }
});

Deno.test("llm: a 400 is not retried", async () => {
  const { fake, llm } = await setup();
  try {
    fake.onChat("six times seven", reply.error(400, { message: "bad model" }));
    const err = await llm.completeJson(Schema, ask).catch((e) => e);
    assert.ok(err instanceof LlmRequestError);
    assert.equal(err.retryable, false);
    assert.equal(fake.chatRequests().length, 1);
  } finally {
    await fake.close();
  }
});
