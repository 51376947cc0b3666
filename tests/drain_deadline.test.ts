// A drain keeps inside its wall-clock budget (WORKER_DRAIN_BUDGET_MS, drain-deadline.ts): on hosted
// Supabase the memory-worker function is stopped at its wall-clock limit (150 s on the Free plan), and a
// provider that hangs held a drain's first job for 4 x LLM_TIMEOUT_MS, the backoff and a 15 s probe;
// the runtime then killed the worker before the job was postponed, and the expired lease counted the
// attempt: five such drains killed the job. Now the job's requests are cut at the drain's deadline,
// the job handed back in time, and no job is claimed once too little of the budget is left.
// docs/operations.md#a-drains-deadline. Real Postgres, the fake model at the HTTP boundary. The drain's
// clock is the test's (support/clock.ts): its cut comes once the fake provider has the request that
// hangs, so what the drain did at the cut is counted, not timed (on the wall clock, a loaded machine
// sent the request after the cut of a 300 ms budget, or gave the probe no room in the last 225 ms).
import assert from "node:assert/strict";
import { z } from "zod";
import { withTenant } from "../supabase/functions/_shared/db.ts";
import { drainQueue } from "../supabase/functions/_shared/drain-queue.ts";
import { DEFAULT_DRAIN_BUDGET_MS, DrainDeadline } from "../supabase/functions/_shared/drain-deadline.ts";
import { enqueueJob } from "../supabase/functions/_shared/jobs.ts";
import { EmbeddingError, openAiEmbedder } from "../supabase/functions/_shared/embeddings.ts";
import { createLlm, LlmRequestError } from "../supabase/functions/_shared/llm.ts";
import { reply } from "./fake_openai.ts";
import { drainCutAt, ManualClock } from "./support/clock.ts";
import { postExtract } from "./support/extract.ts";
import { newTenant } from "./support/seed.ts";
import { EMBEDDING_MODEL, jobsOf, WRITE_AND_GRAPH_KINDS, type WriteEnv, writeEnv } from "./write_helpers.ts";

const drainOpts = (tenant: string, budgetMs: number) => ({
  workerId: "w",
  maxJobs: 50,
  backoffBaseMs: 0,
  ownerId: tenant,
  budgetMs,
});
const drain = (env: WriteEnv, tenant: string, budgetMs: number) => drainQueue(env.deps, drainOpts(tenant, budgetMs));

/** The postponed job's wait is over (postpone_job set run_after ahead): what time passing does. */
const waitIsOver = (env: WriteEnv, tenant: string) =>
  env.sql`update public.memory_jobs set run_after = now() where owner_id = ${tenant} and status = 'queued'`;

/** A test with its own fake provider and database connections, and a new tenant. */
const inEnv = (test: (env: WriteEnv, tenant: string) => Promise<void>, llmTimeoutMs?: number) => async () => {
  // The client's retries as configured: 3 after the first try.
  const env = await writeEnv({ llmTimeoutMs });
  try {
    await test(env, newTenant());
  } finally {
    await env.close();
  }
};

/** A dedup job of the tenant's, as POST memory-dedup queues one. */
const queueDedup = (env: WriteEnv, tenant: string, key: string, candidates: unknown[]) =>
  withTenant(
    env.sql,
    { tenantId: tenant, actor: "test" },
    (tx) => enqueueJob(tx, { ownerId: tenant, kind: "dedup", idempotencyKey: key, payload: { candidates } }),
  );

async function queueExtract(env: WriteEnv, tenant: string) {
  const res = await postExtract(env, tenant, {
    session_id: "s-deadline",
    project: "shop",
    messages: [{ role: "user", content: "Fact: service 1 listens on port 8001." }, {
      role: "assistant",
      content: "Noted.",
    }],
  });
  assert.equal(res.status, 202, JSON.stringify(res.body));
}

Deno.test(
  "a provider that hangs, a drain's budget (300 ms) shorter than one request's timeout (60 s): each drain cuts the job's one request, sends no retry, and hands the job back postponed; six drains later it is queued with no attempt spent",
  inEnv(async (env, tenant) => {
    env.fake.chatOutage = reply.hang(); // the probe hangs too (given up after what is left: 56 ms)
    await queueExtract(env, tenant);
    for (let i = 1; i <= 6; i++) {
      const [asked, probed] = [env.fake.chatRequests().length, env.fake.probeRequests().length];
      const { report, cutAt } = await drainCutAt(env, drainOpts(tenant, 300), asked + 1);
      assert.equal(cutAt, 225, "the cut: the budget less its reserve, a quarter of it");
      assert.deepEqual(
        [report.claimed, report.postponed, report.dead, report.cut],
        [1, 1, 0, 1],
        JSON.stringify(report),
      );
      // Without the deadline: 4 requests of 2 s each (the retries), then a probe of 15 s.
      assert.equal(env.fake.chatRequests().length - asked, 1, `drain ${i}: the job's one request, cut, no retry`);
      assert.ok(env.fake.probeRequests().length - probed <= 1, "at most one probe, within what is left");
      assert.match(report.jobs[0]!.error ?? "", /DrainCutError|deadline/);
      await waitIsOver(env, tenant);
    }
    const [job] = await jobsOf(env.sql, tenant, ["extract"]);
    assert.deepEqual([job!.status, job!.attempts], ["queued", 0], job!.last_error ?? "");
    assert.match(job!.last_error ?? "", /^provider unavailable: /);
  }, 60_000),
);

Deno.test(
  "a message whose request always hangs while the provider answers the probe: the cut counts the attempt, so the job is still given up after its attempts (the defaults: a budget of 120 s, requests of 60 s)",
  inEnv(async (env, tenant) => {
    env.fake.onChat(() => true, reply.hang()); // every request of the job; the probe is answered
    await queueExtract(env, tenant);
    const statuses: string[] = [];
    for (let i = 1; i <= 5; i++) {
      const [asked, probed] = [env.fake.chatRequests().length, env.fake.probeRequests().length];
      const { report, cutAt } = await drainCutAt(env, drainOpts(tenant, DEFAULT_DRAIN_BUDGET_MS), asked + 1);
      assert.equal(cutAt, 100_000, "the cut: the budget less its reserve of 20 s, 15 s of it the probe's");
      assert.deepEqual([report.claimed, report.postponed, report.cut], [1, 0, 1], JSON.stringify(report));
      assert.equal(env.fake.probeRequests().length - probed, 1, "the probe ran within what was left, and was answered");
      statuses.push(report.jobs[0]!.status);
    }
    assert.deepEqual(statuses, ["queued", "queued", "queued", "queued", "dead"]);
    const [job] = await jobsOf(env.sql, tenant, ["extract"]);
    assert.deepEqual([job!.status, job!.attempts], ["dead", 5]);
  }, 60_000),
);

Deno.test(
  "embeddings that hang, a dedup job's first request: cut at the drain's deadline, one embedding request and at most one probe, the job postponed with its attempt given back",
  inEnv(async (env, tenant) => {
    env.fake.failEmbeddings(reply.hang(), reply.hang());
    await queueDedup(env, tenant, "hang", [{
      content: "The api deploys with make ship.",
      type: "semantic",
      namespace: "devai/project/x",
      source: "discovery",
      priority: "low",
      importance: 3,
    }]);
    const report = await drain(env, tenant, 300);
    assert.deepEqual([report.postponed, report.dead, report.cut], [1, 0, 1], JSON.stringify(report));
    // Without the deadline: 4 requests of 30 s each (the embedder's attempts), then a probe of 15 s.
    assert.ok(env.fake.embeddingRequests().length <= 2, "the job's request and at most one probe");
    const [job] = await jobsOf(env.sql, tenant, ["dedup"]);
    assert.deepEqual([job!.status, job!.attempts], ["queued", 0]);
  }),
);

Deno.test(
  "many quick jobs: a drain stops claiming once half of its window before the cut is spent, and the rest wait queued, no attempt spent",
  inEnv(async (env, tenant) => {
    for (let i = 0; i < 10; i++) {
      await queueDedup(env, tenant, `quick-${i}`, []);
    }
    // A clock that moves 10 s each time the drain reads it: the budget of 60 s is spent by the reads.
    const report = await drainQueue(env.deps, {
      workerId: "w",
      maxJobs: 50,
      ownerId: tenant,
      kinds: WRITE_AND_GRAPH_KINDS,
      budgetMs: 60_000,
      clock: new ManualClock(10_000),
    });
    assert.ok(report.claimed >= 1 && report.claimed < 10, JSON.stringify(report));
    assert.equal(report.done, report.claimed);
    assert.equal(report.out_of_time, true);
    const jobs = await jobsOf(env.sql, tenant, ["dedup"]);
    assert.deepEqual(
      jobs.filter((j) => j.status === "queued").map((j) => j.attempts),
      Array(10 - report.claimed).fill(0),
    );
  }),
);

Deno.test(
  "the clients start no retry whose backoff would end past the deadline they are given: one request, the failure at once, still a transient one",
  inEnv(async (env) => {
    const slowBackoff = { baseDelayMs: 10_000, maxDelayMs: 10_000 }; // each retry would wait 10 s
    const llm = createLlm(env.config, { retry: { maxRetries: 3, ...slowBackoff } })!;
    env.fake.onChat(() => true, reply.error(503));
    const failure = await llm.completeJson(z.object({ ok: z.boolean() }), [{ role: "user", content: "hi" }], {
      deadline: Date.now() + 5_000,
    }).catch((e) => e);
    assert.ok(failure instanceof LlmRequestError && failure.retryable, String(failure));
    assert.equal(env.fake.chatRequests().length, 1, "no retry: its wait ends past the deadline");

    const embedder = openAiEmbedder({
      apiKey: "k",
      baseUrl: env.fake.baseUrl,
      model: EMBEDDING_MODEL,
      baseDelayMs: 10_000,
    });
    env.fake.failEmbeddings(reply.error(503));
    const cut = await embedder.embed(["a text"], { deadline: Date.now() + 5_000 }).catch((e) => e);
    assert.ok(cut instanceof EmbeddingError && cut.transient, String(cut));
    assert.equal(env.fake.embeddingRequests().length, 1);
  }),
);

Deno.test("drain deadline: a job is claimed only while one model request's own timeout (and 5 s) is left before the cut", () => {
  const clock = new ManualClock();
  // The defaults: 120 s budget, the cut at 100 s, LLM_TIMEOUT_MS 60 s: claims until 35 s, not half the window (50 s).
  const deadline = new DrainDeadline(120_000, clock, 60_000);
  try {
    const claimable = (at: number) => (clock.set(at), deadline.roomForAJob());
    assert.deepEqual([0, 35_000, 35_001, 50_000].map(claimable), [true, true, false, false]);
  } finally {
    deadline.end();
  }
  // A budget shorter than one request's timeout has room for no second job (drainQueue claims the first anyway).
  const short = new DrainDeadline(20_000, new ManualClock(), 60_000);
  try {
    assert.equal(short.roomForAJob(), false);
  } finally {
    short.end();
  }
});
