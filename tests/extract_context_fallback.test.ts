// Which requests a job sends for a chunk with context when they fail, and what it takes from them
// (_shared/extraction.ts answerChunk): a scripted model, no database. docs/extraction.md#a-failing-context.
import assert from "node:assert/strict";
import { extractWithModel } from "../supabase/functions/_shared/extraction.ts";
import { emptyUsage, type Llm, LlmOutputError, LlmRequestError } from "../supabase/functions/_shared/llm.ts";

/** A request's outcome: answered, an HTTP status, a timeout or a reset (no status), output that is not valid. */
type Step = "ok" | number | "timeout" | "invalid";

/** A model answering each request with the next step; `sent` says whether each held the context. */
function scripted(steps: Step[]) {
  const sent: boolean[] = [];
  const llm = {
    model: "scripted",
    totalUsage: emptyUsage(),
    completeJson(_schema: unknown, messages: { content: string }[]) {
      sent.push(messages.map((m) => m.content).join("\n").includes("EARLIER IN THIS CONVERSATION"));
      const step = steps.shift() ?? "ok";
      const usage = { ...emptyUsage(), requests: 1 };
      if (step === "ok") {
        return Promise.resolve({ value: { stored: [], filtered: [] }, usage, model: "s", repaired: false });
      }
      if (step === "invalid") return Promise.reject(new LlmOutputError("invalid", "{}", usage));
      if (step === "timeout") {
        return Promise.reject(new LlmRequestError("LLM request failed (timeout)", undefined, true, usage));
      }
      const retryable = step === 408 || step === 409 || step === 429 || step >= 500;
      return Promise.reject(new LlmRequestError(`HTTP ${step}`, step, retryable, usage));
    },
  } as unknown as Llm;
  return { llm, sent };
}

/** One attempt of a job whose part has context, in `chunks` chunks. */
async function attempt(steps: Step[], at: { lastAttempt?: boolean; retry?: boolean; chunks?: number } = {}) {
  const { llm, sent } = scripted(steps);
  let failedWithoutContext = false;
  const messages = Array.from({ length: at.chunks ?? 1 }, (_, i) => ({
    role: "user" as const,
    content: `CHUNK-${i} ${"x ".repeat(400)}`,
  }));
  const payload = { session_id: "s", messages, context: [{ role: "user" as const, content: "earlier message" }] };
  try {
    const out = await extractWithModel(payload, [], {
      llm,
      namespaceRoot: "devai",
      categories: [],
      chunkTokens: 300,
      lastAttempt: at.lastAttempt,
      retry: at.retry,
      onFailedWithoutContext: () => (failedWithoutContext = true),
    });
    return { out, sent, failedWithoutContext };
  } catch (error) {
    return { error, sent, failedWithoutContext };
  }
}

const last = { lastAttempt: true, retry: true };

Deno.test("extract fallback: the last attempt asks the chunk the earlier attempts failed at without the context first; a 5xx or invalid output with it then drops the context", async () => {
  for (const failure of [500, 503, "invalid"] as const) {
    const r = await attempt(["ok", failure], last);
    assert.deepEqual(r.sent, [false, true], String(failure));
    assert.equal(r.out?.stats.context_dropped, true, String(failure));
    assert.equal(r.out?.stats.llm_calls, 2);
  }
});

Deno.test("extract fallback: a provider back at the last attempt answers with the context, which is kept", async () => {
  const r = await attempt(["ok", "ok"], last);
  assert.deepEqual([r.sent, r.out?.stats.context_dropped], [[false, true], false]);
});

Deno.test("extract fallback: a 429, a timeout (or a reset), a 408 or a 409 with the context after the answer without it says nothing of the context: kept, the attempt fails", async () => {
  for (const failure of [429, "timeout", 408, 409] as const) {
    const r = await attempt(["ok", failure], last);
    assert.deepEqual(r.sent, [false, true], String(failure));
    assert.ok(r.error instanceof LlmRequestError, `${failure}: the attempt fails with it, the context not dropped`);
    assert.equal(r.failedWithoutContext, false, "the request without the context was answered");
  }
  // The same in a chunk the attempt asks with the context first (a flapping provider: 503, ok, 429).
  const r = await attempt([503, "ok", 429], { lastAttempt: true });
  assert.deepEqual(r.sent, [true, false, true]);
  assert.ok(r.error instanceof LlmRequestError && r.error.status === 429);
});

Deno.test("extract fallback: at the last attempt, a failure without the context ends it at once and is reported", async () => {
  const r = await attempt([500], last);
  assert.deepEqual(r.sent, [false]);
  assert.ok(r.error instanceof LlmRequestError);
  assert.equal(r.failedWithoutContext, true);
});

Deno.test("extract fallback: a chunk the earlier attempts did not fail at is asked with the context first, at the last attempt too", async () => {
  // Not the attempt's first chunk: with (500), without (answered), with again (500): dropped.
  const later = await attempt(["ok", "ok", 500, "ok", 500], { ...last, chunks: 2 });
  assert.deepEqual(later.sent, [false, true, true, false, true]);
  assert.equal(later.out?.stats.context_dropped, true);
  // A job's first attempt that is also its last (max_attempts 1): nothing failed before.
  const only = await attempt(["ok"], { lastAttempt: true });
  assert.deepEqual(only.sent, [true]);
});

Deno.test("extract fallback: a key or a model refused (401, 403, 404) is not asked without the context", async () => {
  for (const status of [401, 403, 404]) {
    const r = await attempt([status, "ok"]);
    assert.deepEqual(r.sent, [true], String(status));
    assert.ok(r.error instanceof LlmRequestError && r.error.status === status);
  }
});

Deno.test("extract fallback: stats.llm_calls counts the attempt's requests, each chunk's with and without the context", async () => {
  // A refusal with the context at the first chunk (2 requests), the two chunks after it without (1 each).
  const r = await attempt([400, "ok", "ok", "ok"], { chunks: 3 });
  assert.deepEqual(r.sent, [true, false, false, false]);
  assert.deepEqual([r.out?.stats.chunks, r.out?.stats.llm_calls, r.out?.usage.requests], [3, 4, 4]);
});
