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
