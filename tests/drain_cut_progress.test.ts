// A job the drain's deadline cuts after it recorded progress is handed back with its attempt given
// back (migration 20261201300000, docs/operations.md#a-drains-deadline): a job needing more drain
// windows than it has attempts goes on where it stopped instead of dying, or settling for the rule
// at its last attempt. Real Postgres, the fake model at the HTTP boundary: each drain's first
// decision is answered, its second hangs until the cut (the probe is answered: no outage). The
// drain's clock is the test's (support/clock.ts): the cut comes once the fake provider has the
// request that hangs, with the defaults' room for the probe (15 s), not after a share of a
// wall-clock budget a loaded machine spends first (the probe was given the last 56 ms of 300 ms).
import assert from "node:assert/strict";
import { withTenant } from "../supabase/functions/_shared/db.ts";
import { DEFAULT_DRAIN_BUDGET_MS } from "../supabase/functions/_shared/drain-deadline.ts";
import { enqueueJob } from "../supabase/functions/_shared/jobs.ts";
import { hashVector, reply, vectorWithSimilarity } from "./fake_openai.ts";
import { drainCutAt } from "./support/clock.ts";
import { newTenant, seedMemory } from "./support/seed.ts";
import { EMBEDDING_MODEL, jobsOf, memoriesOf, type WriteEnv, writeEnv } from "./write_helpers.ts";

const CANDIDATES = 6;

/** A dedup job of an agent's candidates saying `contents`, in the project's namespace. */
async function queueDedupJob(env: WriteEnv, tenant: string, key: string, contents: string[]) {
  const candidates = contents.map((content) => ({
    content,
    type: "semantic",
    namespace: "devai/project/shop",
    source: "discovery",
    priority: "medium",
    importance: 3,
  }));
  await withTenant(
    env.sql,
    { tenantId: tenant, actor: "test" },
    (tx) => enqueueJob(tx, { ownerId: tenant, kind: "dedup", idempotencyKey: key, payload: { candidates } }),
  );
}

/** One drain of the tenant's job, the defaults' budget (120 s) on the test's clock (drainCutAt). */
const drainOpts = (tenant: string) => ({
  workerId: "w",
  maxJobs: 1,
  backoffBaseMs: 0,
  ownerId: tenant,
  budgetMs: DEFAULT_DRAIN_BUDGET_MS,
});

Deno.test("a dedup job of six decisions, one decided a drain before the cut: handed back each time, all six decided by the model", async () => {
  const env = await writeEnv({ llmTimeoutMs: 60_000 });
  try {
    const tenant = newTenant();
    const contents = Array.from({ length: CANDIDATES }, (_, i) => `Service ${i} deploys with make ship-${i} now.`);
    for (const [i, content] of contents.entries()) {
      const base = hashVector(`neighbour ${i}`);
      await seedMemory(env.sql, tenant, {
        content: `Service ${i} used to deploy by hand.`,
        namespace: "devai/project/shop",
        embedding: base,
        embedding_model: EMBEDDING_MODEL,
      });
      env.fake.setEmbedding(content, vectorWithSimilarity(base, 0.92, `c${i}`));
    }
    const add = reply.json({ action: "ADD", reason: "a new detail" });
    env.fake.onChat(() => true, [...Array.from({ length: CANDIDATES - 1 }, () => [add, reply.hang()]).flat(), add]);
    await queueDedupJob(env, tenant, "long", contents);
    for (let i = 1; i < CANDIDATES; i++) {
      const { report } = await drainCutAt(env, drainOpts(tenant), 2 * i); // the drain's first decision answered, its second hanging
      const [job] = await jobsOf(env.sql, tenant, ["dedup"]);
      // Before: each cut counted; the fifth was the job's last attempt, so its later candidates were
      // decided by the rule without the model (model_failures), or the job died.
      assert.deepEqual(
        [report.handed_back, report.cut, job!.status, job!.attempts],
        [1, 1, "queued", 0],
        `drain ${i}: ${JSON.stringify(report)}`,
      );
      assert.match(job!.last_error ?? "", /^cut by the drain's deadline after progress/);
    }
    assert.equal((await drainCutAt(env, drainOpts(tenant))).report.done, 1);
    const [job] = await jobsOf(env.sql, tenant, ["dedup"]);
    const result = job!.result as { counts: { ADD: number }; model_failures: number };
    assert.deepEqual([result.counts.ADD, result.model_failures], [CANDIDATES, 0], JSON.stringify(result));
    const stored = (await memoriesOf(env.sql, tenant)).filter((m) => contents.includes(m.content));
    assert.equal(stored.length, CANDIDATES, "every candidate stored");
  } finally {
    await env.close();
  }
});

Deno.test("a job cut before any progress still counts its attempt (a message whose requests always hang dies)", async () => {
  const env = await writeEnv({ llmTimeoutMs: 60_000 });
  try {
    const tenant = newTenant();
    const base = hashVector("neighbour");
    await seedMemory(env.sql, tenant, {
      content: "The api used to deploy by hand.",
      namespace: "devai/project/shop",
      embedding: base,
      embedding_model: EMBEDDING_MODEL,
    });
    const content = "The api deploys with make ship now.";
    env.fake.setEmbedding(content, vectorWithSimilarity(base, 0.92, "c"));
    env.fake.onChat(() => true, reply.hang());
    await queueDedupJob(env, tenant, "stuck", [content]);
    const { report } = await drainCutAt(env, drainOpts(tenant), 1);
    const [job] = await jobsOf(env.sql, tenant, ["dedup"]);
    assert.deepEqual([report.handed_back, report.cut, job!.attempts], [0, 1, 1], JSON.stringify(report));
  } finally {
    await env.close();
  }
});
