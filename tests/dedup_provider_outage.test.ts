// A dedup job whose candidate needs the model's decision is postponed while the model provider is
// unavailable (down, or refusing the key), however long: it never dies and loses its candidates;
// once the provider answers, the candidate is decided and stored. docs/operations.md#an-outage-of-the-model-provider.
// Real Postgres, the fake model at the HTTP boundary, scripted embeddings (a near neighbour).
import assert from "node:assert/strict";
import { hashVector, reply, vectorWithSimilarity } from "./fake_openai.ts";
import { newTenant, seedMemory } from "./support/seed.ts";
import {
  drainAll,
  EMBEDDING_MODEL,
  jobsOf,
  memoriesOf,
  queueDedupCandidate,
  type WriteEnv,
  writeEnv,
} from "./write_helpers.ts";

const NS = "devai/project/taskforge";
const base = hashVector("base memory");
const TEXT = "The task-api deploy needs the APPWRITE_KEY variable.";

/** A dedup job holding TEXT, a candidate of the tenant's. */
const queueCandidate = (env: WriteEnv, tenant: string, key: string) => queueDedupCandidate(env, tenant, key, TEXT, NS);

for (
  const [what, failure] of [["down (503)", reply.error(503)], ["refusing the key (403)", reply.error(403)]] as const
) {
  Deno.test(`dedup, the provider ${what} for longer than the job's attempts: postponed, never dead; the candidate is stored once it answers`, async () => {
    const env = await writeEnv({ llm: { retry: { maxRetries: 0 } } });
    try {
      const tenant = newTenant();
      await seedMemory(env.sql, tenant, {
        content: "The task-api deploys with npm run deploy.",
        namespace: NS,
        embedding: base,
        embedding_model: EMBEDDING_MODEL,
      });
      env.fake.setEmbedding(TEXT, vectorWithSimilarity(base, 0.9, "add"));
      env.fake.onChat("NEW candidate", reply.json({ action: "ADD", reason: "new detail" }));
      env.fake.chatOutage = failure;
      await queueCandidate(env, tenant, "outage");
      // Seven drains, each after the job's wait: more than its five attempts.
      for (let i = 0; i < 7; i++) {
        const report = await drainAll(env.deps, tenant);
        assert.deepEqual([report.postponed, report.dead], [1, 0], JSON.stringify(report));
        await env.sql`update public.memory_jobs set run_after = now() where owner_id = ${tenant} and status = 'queued'`;
      }
      const [job] = await jobsOf(env.sql, tenant, ["dedup"]);
      assert.deepEqual([job!.status, job!.attempts], ["queued", 0]);
      assert.match(
        job!.last_error ?? "",
        /^provider unavailable: model fake-llm \(127\.0\.0\.1:\d+\): LlmRequestError/,
      );
      assert.equal((job!.result as { provider_unavailable: { times: number } }).provider_unavailable.times, 7);

      env.fake.chatOutage = undefined;
      assert.equal((await drainAll(env.deps, tenant)).done, 1);
      assert.ok((await memoriesOf(env.sql, tenant)).some((m) => m.content === TEXT), "the candidate is stored");
    } finally {
      await env.close();
    }
  });
}

// By default the embeddings come from the same provider and key as the model (OPENAI_API_KEY,
// OPENAI_BASE_URL: env.ts embeddingProvider): a refused key or an outage fails the dedup job's
// embedding request before any model request.
Deno.test("dedup, a key the provider refuses (401) for both the model and the embeddings: postponed, never dead; the candidate is stored once the key is fixed", async () => {
  const env = await writeEnv({ llm: { retry: { maxRetries: 0 } } });
  try {
    const tenant = newTenant();
    env.fake.onChat(() => true, reply.json({ action: "ADD", reason: "new" }));
    env.fake.requireKey = "the-rotated-key";
    await queueCandidate(env, tenant, "refused-key");
    for (let i = 0; i < 7; i++) {
      await drainAll(env.deps, tenant);
      await env.sql`update public.memory_jobs set run_after = now() where owner_id = ${tenant} and status = 'queued'`;
    }
    const [job] = await jobsOf(env.sql, tenant, ["dedup"]);
    assert.equal(job!.status, "queued", `${job!.status} after 7 drains: ${job!.last_error}`);
    env.fake.requireKey = undefined;
    await drainAll(env.deps, tenant);
    assert.ok((await memoriesOf(env.sql, tenant)).some((m) => m.content === TEXT), "the candidate is stored");
  } finally {
    await env.close();
  }
});

// The embeddings have their watch in a drain, as the model has (llm-outage.ts EmbeddingsWatch): once
// found unavailable, the drain's later jobs neither send it their request nor probe it again.
Deno.test("dedup, the embeddings provider down for a drain of three jobs: one embedding request and one probe, all three postponed", async () => {
  const env = await writeEnv({ llm: { retry: { maxRetries: 0 } } });
  try {
    const tenant = newTenant();
    env.fake.onChat(() => true, reply.json({ action: "ADD", reason: "new" }));
    env.fake.requireKey = "the-rotated-key";
    for (const key of ["a", "b", "c"]) await queueCandidate(env, tenant, `embeddings-down-${key}`);
    const report = await drainAll(env.deps, tenant);
    assert.deepEqual([report.claimed, report.postponed, report.dead], [3, 3, 0], JSON.stringify(report));
    const embeddings = env.fake.embeddingRequests();
    const probes = embeddings.filter((r) => JSON.stringify(r.body?.input).includes("provider_probe"));
    // Before the watch: 6 (each job its request and a probe of its own).
    assert.deepEqual([embeddings.length, probes.length], [2, 1], "one job's request and one probe a drain");
    assert.match(report.provider_unavailable ?? "", /^embeddings text-embedding-3-small \(127\.0\.0\.1:\d+\): /);
    for (const job of await jobsOf(env.sql, tenant, ["dedup"])) {
      assert.deepEqual([job.status, job.attempts], ["queued", 0]);
    }
  } finally {
    await env.close();
  }
});

// A probe is one request (llm-outage.ts oneRequest): the embedder's own retries (4 attempts) are the
// job's request's, not the probe's. Before, a 503 from a down embeddings provider got each probe 4
// requests and their waits: a drain of three dedup jobs sent 8 embedding requests, 4 of them probes.
Deno.test("dedup, the embeddings provider down (503) for a drain of three jobs, the embedder retrying as configured: its probe is one request", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    env.fake.onChat(() => true, reply.json({ action: "ADD", reason: "new" }));
    env.fake.failEmbeddings(...Array(20).fill(reply.error(503)));
    for (const key of ["a", "b", "c"]) await queueCandidate(env, tenant, `embeddings-503-${key}`);
    const report = await drainAll(env.deps, tenant);
    assert.deepEqual([report.claimed, report.postponed, report.dead], [3, 3, 0], JSON.stringify(report));
    const embeddings = env.fake.embeddingRequests();
    const probes = embeddings.filter((r) => JSON.stringify(r.body?.input).includes("provider_probe"));
    assert.deepEqual([embeddings.length - probes.length, probes.length], [4, 1], "the job's 4 attempts, one probe");
    // Which provider: the embeddings', its model and host, in the report and the postponed job's error.
    const named = /^embeddings text-embedding-3-small \(127\.0\.0\.1:\d+\): embedding request failed/;
    assert.match(report.provider_unavailable ?? "", named);
    for (const job of await jobsOf(env.sql, tenant, ["dedup"])) {
      assert.match(
        job.last_error ?? "",
        /^provider unavailable: embeddings text-embedding-3-small \(127\.0\.0\.1:\d+\): /,
      );
    }
  } finally {
    await env.close();
  }
});

// A 429 of the embeddings is a rate limit, "not now", as the model's is (llm-outage.ts): postponed
// without a probe, since one text embedded passes a limit that the job's batch does not. Before, the
// probe was answered, the attempt counted, and five busy drains killed the job, its candidates lost.
Deno.test("dedup, the embeddings rate-limited (429) in each of six drains while a probe would pass: postponed without a probe, never dead; stored once the limit lets it", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    env.fake.onChat(() => true, reply.json({ action: "ADD", reason: "new" }));
    await queueCandidate(env, tenant, "embeddings-429");
    const busy = reply.error(429, {
      retryAfter: 0,
      message: "Rate limit reached for text-embedding-3-small on tokens per min (TPM): Limit 1,000,000, " +
        "Used 999,800, Requested 400.",
    });
    for (let drain = 1; drain <= 6; drain++) {
      env.fake.failEmbeddings(busy, busy, busy, busy); // the embedder's 4 attempts; a probe would pass
      const report = await drainAll(env.deps, tenant);
      assert.deepEqual(
        [report.postponed, report.retried, report.dead],
        [1, 0, 0],
        `drain ${drain}: ${JSON.stringify(report)}`,
      );
      await env.sql`update public.memory_jobs set run_after = now() where owner_id = ${tenant} and status = 'queued'`;
    }
    const probes = env.fake.embeddingRequests().filter((r) => JSON.stringify(r.body?.input).includes("provider_probe"));
    assert.equal(probes.length, 0, "a rate limit is not probed");
    const [job] = await jobsOf(env.sql, tenant, ["dedup"]);
    assert.deepEqual([job!.status, job!.attempts], ["queued", 0]);
    assert.equal((await drainAll(env.deps, tenant)).done, 1);
    assert.ok((await memoriesOf(env.sql, tenant)).some((m) => m.content === TEXT), "the candidate is stored");
  } finally {
    await env.close();
  }
});
