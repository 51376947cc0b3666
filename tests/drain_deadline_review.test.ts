// Review of the drain's deadline (docs/operations.md#a-drains-deadline): what a cut must not do.
// Real Postgres, the fake model at the HTTP boundary. The drains' clock is the test's (support/clock.ts):
// the cut comes once the fake provider has the request that hangs, with the defaults' room for the
// probe (15 s); on the wall clock (a 300 ms budget) a loaded machine sent the request after the cut,
// or left the probe no room and the job was postponed as in an outage.
import assert from "node:assert/strict";
import { withTenant } from "../supabase/functions/_shared/db.ts";
import { DEFAULT_DRAIN_BUDGET_MS } from "../supabase/functions/_shared/drain-deadline.ts";
import { enqueueJob } from "../supabase/functions/_shared/jobs.ts";
import { EmbeddingError, openAiEmbedder } from "../supabase/functions/_shared/embeddings.ts";
import { FakeOpenAI, hashVector, reply, vectorWithSimilarity } from "./fake_openai.ts";
import { drainCutAt } from "./support/clock.ts";
import { newTenant, seedMemory } from "./support/seed.ts";
import { drainAll, EMBEDDING_MODEL, jobsOf, memoriesOf, writeEnv } from "./write_helpers.ts";
import { postExtract } from "./support/extract.ts";

Deno.test(
  "a dedup job of the user's statements cut by the drain's deadline: the statements after the cut are not decided without the model, the job is handed back",
  async () => {
    const env = await writeEnv({ llmTimeoutMs: 60_000 });
    try {
      const tenant = newTenant();
      const contents = ["The api deploys with make ship now.", "The web app deploys with make web now."];
      for (const [i, content] of contents.entries()) {
        const base = hashVector(`neighbour ${i}`);
        await seedMemory(env.sql, tenant, {
          content: `Old fact ${i} about deploys.`,
          namespace: "devai/user",
          embedding: base,
          embedding_model: EMBEDDING_MODEL,
        });
        env.fake.setEmbedding(content, vectorWithSimilarity(base, 0.92, `c${i}`));
      }
      // The first decision hangs (a slow provider; the probe is answered); the second is never asked.
      env.fake.onChat(() => true, reply.hang());
      const candidates = contents.map((content) => ({
        content,
        type: "semantic",
        namespace: "devai/user",
        source: "user_stated",
        priority: "high",
        importance: 3,
      }));
      await withTenant(
        env.sql,
        { tenantId: tenant, actor: "test" },
        (tx) => enqueueJob(tx, { ownerId: tenant, kind: "dedup", idempotencyKey: "cut", payload: { candidates } }),
      );
      const budgetMs = DEFAULT_DRAIN_BUDGET_MS;
      const { report } = await drainCutAt(env, {
        workerId: "w",
        maxJobs: 5,
        backoffBaseMs: 0,
        ownerId: tenant,
        budgetMs,
      }, 1);
      const [job] = await jobsOf(env.sql, tenant, ["dedup"]);
      const result = job!.result as { model_failures?: number; outcomes?: { reason: string }[] } | null;
      assert.equal(env.fake.chatRequests().length, 1, "one decision asked, cut");
      // Before a fix: the job is done, both statements decided by the rule ("model_failed"),
      // the second one without the model ever being asked, and the report counts no cut.
      assert.notEqual(job!.status, "done", JSON.stringify({ report, result }));
      assert.equal(report.cut, 1, JSON.stringify(report));
      assert.equal((await memoriesOf(env.sql, tenant)).length, 2, "no statement stored without its decision");
    } finally {
      await env.close();
    }
  },
);

Deno.test(
  "an extract job's last attempt cut by the drain's deadline with the context: no request without the context was sent, so none is recorded as failed (dead-runs.ts would judge the part as failing on its own)",
  async () => {
    const env = await writeEnv({ llmTimeoutMs: 60_000 });
    try {
      const tenant = newTenant();
      const first = [{ role: "user", content: "We use pnpm here." }, { role: "assistant", content: "Noted." }];
      const body = (messages: unknown[]) => ({ session_id: "s-cut", project: "shop", messages });
      env.fake.onChat(() => true, reply.json({ stored: [], filtered: [] }));
      assert.equal((await postExtract(env, tenant, body(first))).status, 202);
      await drainAll(env.deps, tenant);
      const second = [...first, { role: "user", content: "The api listens on 8001." }, {
        role: "assistant",
        content: "Ok.",
      }];
      assert.equal((await postExtract(env, tenant, body(second))).status, 202);
      // This attempt is the job's last (as the fifth of five is): the one with context is asked first.
      await env.sql`update public.memory_jobs set max_attempts = 1 where owner_id = ${tenant} and status = 'queued'`;
      env.fake.reset();
      env.fake.onChat(() => true, reply.hang()); // the job's requests hang; the probe is answered
      const budgetMs = DEFAULT_DRAIN_BUDGET_MS;
      const { report } = await drainCutAt(env, { workerId: "w", maxJobs: 1, ownerId: tenant, budgetMs }, 1);
      assert.equal(report.cut, 1, JSON.stringify(report));
      const sent = env.fake.chatRequests().length;
      const jobs = await jobsOf(env.sql, tenant, ["extract"]);
      assert.deepEqual(jobs.map((j) => j.status), ["done", "dead"], "the part with context died of the cut");
      const job = jobs[1];
      const model = (job!.result as { model?: Record<string, unknown> }).model;
      assert.equal(sent, 1, "one request, with the context, cut; none without it");
      assert.equal(model?.failed_without_context, undefined, JSON.stringify(model));
    } finally {
      await env.close();
    }
  },
);

Deno.test(
  "an embedding request aborted by its signal (a probe's timeout, a drain's cut) is not retried: the embedder gives up at once, still a transient failure",
  async () => {
    const fake = await FakeOpenAI.start();
    try {
      // Aborted once the provider has the request (a timeout of 50 ms fired, on a loaded machine,
      // before the request was sent: no request to retry).
      const cut = new AbortController();
      fake.failEmbeddings(reply.dynamic(() => (cut.abort(), reply.hang())));
      const embedder = openAiEmbedder({ apiKey: "k", baseUrl: fake.baseUrl, model: EMBEDDING_MODEL });
      const failure = await embedder.embed(["a text"], { signal: cut.signal }).catch((e) => e);
      assert.ok(failure instanceof EmbeddingError && failure.transient, String(failure));
      // Before: three more attempts, each after a backoff sleep (about 1.7 s), with the signal already aborted.
      assert.match(failure.message, /after 1 attempt\(s\)/);
      assert.equal(fake.embeddingRequests().length, 1);
    } finally {
      await fake.close();
    }
  },
);
