// The OpenAI embedder against the fake OpenAI-compatible server: batching, order, dimensions, and
// retries with backoff on 429/5xx (never on 4xx).
import assert from "node:assert/strict";
import { EmbeddingError, openAiEmbedder } from "../supabase/functions/_shared/embeddings.ts";
import { FakeOpenAI, reply } from "./fake_openai.ts";

Deno.test("openai embedder: batches, keeps input order, sends dimensions 512", async () => {
  const fake = await FakeOpenAI.start();
  try {
    const e = openAiEmbedder({
      apiKey: "k",
      baseUrl: fake.baseUrl,
      model: "text-embedding-3-small",
      batchSize: 2,
      baseDelayMs: 1,
    });
    const texts = ["a", "b", "c", "d", "e"];
    const out = await e.embed(texts);
    assert.equal(out.length, 5);
    assert.ok(out.every((v) => v.length === 512));
    const reqs = fake.embeddingRequests();
    assert.deepEqual(reqs.map((r) => r.body.input), [["a", "b"], ["c", "d"], ["e"]]);
    assert.ok(reqs.every((r) => r.body.dimensions === 512 && r.body.model === "text-embedding-3-small"));
    assert.deepEqual(out[2], (await e.embed(["c"]))[0], "vector i belongs to text i");
  } finally {
    await fake.close();
  }
});

Deno.test("openai embedder: 429 and 5xx are retried, 4xx is not, and retries give up with EmbeddingError", async () => {
  const fake = await FakeOpenAI.start();
  try {
    const e = openAiEmbedder({ apiKey: "k", baseUrl: fake.baseUrl, model: "m", maxAttempts: 3, baseDelayMs: 1 });
    fake.failEmbeddings(reply.error(429, { retryAfter: 0 }), reply.error(503));
    assert.equal((await e.embed(["x"])).length, 1);
    assert.equal(fake.embeddingRequests().length, 3, "two failures, then success");

    fake.reset();
    fake.failEmbeddings(reply.error(400));
    await assert.rejects(e.embed(["y"]), EmbeddingError);
    assert.equal(fake.embeddingRequests().length, 1, "a 400 is not retried");

    fake.reset();
    fake.failEmbeddings(reply.error(500), reply.error(500), reply.error(500));
    await assert.rejects(e.embed(["z"]), /after 3 attempt/);
    assert.equal(fake.embeddingRequests().length, 3);
  } finally {
    await fake.close();
  }
});

// A 429 saying the request alone is over the limit ("Limit 30,000, Requested 45,512") is a refusal,
// as the model client takes it (llm-retry.ts refusesContent): no wait lets the batch pass, so it is
// not retried and fails as no outage does (not transient). Before, the embedder retried it as a busy
// limit, 4 requests and their waits, before the failure reached the job. A busy limit ("Used") is
// still retried.
Deno.test("openai embedder: a 429 over the limit alone is refused at once, a busy limit is retried", async () => {
  const failing = async (message: string, texts: string[]) => {
    const fake = await FakeOpenAI.start();
    try {
      // The embedder as createEmbedder makes it (4 attempts), its backoff short.
      const e = openAiEmbedder({ apiKey: "k", baseUrl: fake.baseUrl, model: "m", baseDelayMs: 1 });
      fake.failEmbeddings(...Array(4).fill(reply.error(429, { message })));
      const outcome = await e.embed(texts).catch((err) => err);
      return { outcome, requests: fake.embeddingRequests().length };
    } finally {
      await fake.close();
    }
  };
  const refused = await failing(
    "Request too large for text-embedding-3-small in organization org-x on tokens per min (TPM): " +
      "Limit 30,000, Requested 45,512. The input or output tokens must be reduced in order to run successfully.",
    ["a batch over the limit"],
  );
  assert.equal(refused.requests, 1, "one request: the refusal is not retried");
  assert.ok(refused.outcome instanceof EmbeddingError, String(refused.outcome));
  assert.deepEqual([refused.outcome.status, refused.outcome.transient], [429, false], refused.outcome.message);

  const busy = await failing("Rate limit reached: Limit 30,000, Used 29,000, Requested 2,000", ["a text"]);
  assert.equal(busy.requests, 4, "a busy limit: retried until the attempts are spent");
  assert.ok(busy.outcome instanceof EmbeddingError && busy.outcome.transient, String(busy.outcome));
});
