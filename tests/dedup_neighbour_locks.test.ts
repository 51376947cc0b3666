// The dedup worker decides outside its transactions and applies in a short one (dedup.ts): while
// the model decides about a candidate, the candidate's neighbours are not locked, so a user's
// correction of one of them goes through at once. Found in session 37: the worker locked the
// neighbours and then waited for the model inside the same transaction, so a correction of a
// neighbour waited for the whole LLM call (a 503 once past the request's statement timeout) and
// the worker held a pooled connection idle in transaction. Reproduced with the fake model holding
// its answer until the test releases it, and a request pool whose statement timeout is 2 s: the
// correction was a 503 after 2.04 s (after 15.04 s with the default 15 s timeout); now a 201 in
// tens of milliseconds. A neighbour that changed while the model decided makes the candidate be
// decided again on what is there now: the stale decision is never applied.
import assert from "node:assert/strict";
import { withTenant } from "../supabase/functions/_shared/db.ts";
import { createSql } from "../supabase/functions/_shared/db-pool.ts";
import { enqueueJob } from "../supabase/functions/_shared/jobs.ts";
import type { Candidate } from "../supabase/functions/_shared/candidates.ts";
import { hashVector, reply, vectorWithSimilarity } from "./fake_openai.ts";
import { realServerOnly } from "./support/backend.ts";
import { testDatabaseUrl } from "./support/config.ts";
import { memoryWithLlm } from "./support/consolidation.ts";
import { newTenant, seedMemory } from "./support/seed.ts";
import { drainQueue } from "../supabase/functions/_shared/drain-queue.ts";
import { drainAll, EMBEDDING_MODEL, memoriesOf, patientEnv, writeEnv } from "./write_helpers.ts";

const NS = "devai/project/taskforge";
const base = hashVector("neighbour lock base");

Deno.test({
  ...realServerOnly(
    "dedup: a correction of a neighbour completes while the model decides; the stale decision is decided again",
    "the worker's transactions and the request's on two connections at once",
  ),
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const { env, deps } = await patientEnv();
  const requests = createSql(testDatabaseUrl(), { max: 2, statementTimeoutMs: 2_000 });
  const released = Promise.withResolvers<void>();
  let drained: Promise<unknown> | undefined;
  try {
    const tenant = newTenant();
    const { old, text } = await seedNeighbourAndJob(env, tenant);
    const corrected = "The task-api deploys with yarn deploy.";
    env.fake.setEmbedding(corrected, vectorWithSimilarity(base, 0.93, "corr"));
    // First decision (held): merge into the old memory. Second one: the candidate is new.
    env.fake.onChat("NEW candidate", [
      reply.until(released.promise, reply.json({ action: "UPDATE", target: 0, content: "Merged: pnpm." })),
      reply.json({ action: "ADD", reason: "another tool" }),
    ]);
    const draining = drainAll(deps, tenant);
    drained = draining.catch(() => {}); // awaited below (and after a failure, before closing)
    await env.fake.chatRequestsReceived(1);

    // The model has not answered: the user corrects the neighbour it is deciding about.
    const call = memoryWithLlm(requests, env.config, undefined, env.embedder);
    const started = performance.now();
    const res = await call("POST", `/memory/${old.id}/correct`, tenant, { content: corrected });
    const waitedMs = performance.now() - started;
    console.log(`correction of a neighbour while the model decides: ${res.status} after ${waitedMs.toFixed(0)} ms`);
    assert.equal(res.status, 201, `the correction went through: ${JSON.stringify(res.body)}`);
    assert.equal(env.fake.chatRequests().length, 1, "still the first decision, unanswered");

    released.resolve();
    const report = await draining;
    assert.equal(report.done, 1);
    // The held UPDATE was about a memory the user has replaced since: decided again, on the correction.
    const prompts = env.fake.chatRequests().map((r) => String(r.body.messages.at(-1).content));
    assert.equal(prompts.length, 2, "the candidate was decided again");
    const shown = prompts[1]!.split("EXISTING")[1]!;
    assert.match(shown, /yarn deploy/);
    assert.doesNotMatch(shown, /with npm run deploy/, "the replaced memory is no neighbour any more");
    const mems = await memoriesOf(env.sql, tenant);
    assert.equal(mems.find((m) => m.content === "Merged: pnpm."), undefined, "the stale merge was not applied");
    const oldRow = mems.find((m) => m.id === old.id)!;
    const correction = mems.find((m) => m.content === corrected)!;
    assert.equal(oldRow.superseded_by, correction.id, "the user's correction replaced the old memory");
    assert.equal(correction.is_valid, true);
    assert.equal(mems.find((m) => m.content === text)?.is_valid, true, "the candidate was added beside it");
    const [job] = await env.sql`select result from public.memory_jobs where owner_id = ${tenant} and kind = 'dedup'`;
    assert.equal(job!.result.counts.ADD, 1);
    assert.equal(job!.result.outcomes[0].redecided, 1);
  } finally {
    released.resolve();
    await drained;
    await requests.end();
    await env.close();
  }
});

/** The base memory, a candidate near it, and a dedup job for the candidate. */
async function seedNeighbourAndJob(env: Awaited<ReturnType<typeof writeEnv>>, tenant: string) {
  const old = await seedMemory(env.sql, tenant, {
    content: "The task-api deploys with npm run deploy.",
    namespace: NS,
    embedding: base,
    embedding_model: EMBEDDING_MODEL,
  });
  const text = "The task-api deploys with pnpm run deploy.";
  env.fake.setEmbedding(text, vectorWithSimilarity(base, 0.92, "cand"));
  const candidate: Candidate = {
    content: text,
    type: "semantic",
    namespace: NS,
    source: "discovery",
    priority: "low",
    importance: 3,
  };
  const job = await withTenant(env.sql, { tenantId: tenant, actor: "test" }, (tx) =>
    enqueueJob(tx, {
      ownerId: tenant,
      kind: "dedup",
      idempotencyKey: crypto.randomUUID(),
      payload: { candidates: [candidate], origin: "api" },
    }));
  return { old, text, jobId: job.id };
}

Deno.test({
  ...realServerOnly(
    "dedup: a neighbour forgotten while the model decides is not merged into: the candidate is decided again",
    "the worker and the test's requests on two connections at once",
  ),
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const { env, deps } = await patientEnv();
  const released = Promise.withResolvers<void>();
  try {
    const tenant = newTenant();
    const { old, text } = await seedNeighbourAndJob(env, tenant);
    env.fake.onChat("NEW candidate", [
      reply.until(released.promise, reply.json({ action: "UPDATE", target: 0, content: "Merged: pnpm." })),
      reply.json({ action: "ADD", reason: "unexpected second call" }),
    ]);
    const draining = drainAll(deps, tenant);
    await env.fake.chatRequestsReceived(1);
    const call = memoryWithLlm(env.sql, env.config, undefined, env.embedder);
    assert.equal((await call("POST", `/memory/${old.id}/forget`, tenant)).status, 200);
    released.resolve();
    assert.equal((await draining).done, 1);

    // No neighbour is left: the candidate is added by the rule, without a second model call.
    assert.equal(env.fake.chatRequests().length, 1);
    const mems = await memoriesOf(env.sql, tenant);
    assert.equal(mems.find((m) => m.content === "Merged: pnpm."), undefined, "the stale merge was not applied");
    assert.equal(mems.find((m) => m.id === old.id)!.superseded_by, null, "the forgotten memory was not superseded");
    assert.equal(mems.find((m) => m.content === text)?.is_valid, true);
  } finally {
    released.resolve();
    await env.close();
  }
});

Deno.test({
  ...realServerOnly(
    "dedup: a neighbour that changes under each of 3 decisions fails the job; its retry decides and applies once",
    "the worker and the test's requests on two connections at once",
  ),
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const { env, deps } = await patientEnv();
  const gates = [0, 1, 2].map(() => Promise.withResolvers<void>());
  try {
    const tenant = newTenant();
    const { old, text, jobId } = await seedNeighbourAndJob(env, tenant);
    const merge = reply.json({ action: "UPDATE", target: 0, content: "Merged: pnpm." });
    env.fake.onChat("NEW candidate", [
      ...gates.map((g) => reply.until(g.promise, merge)),
      reply.json({ action: "ADD", reason: "another tool" }),
    ]);
    const first = drainQueue(deps, { workerId: "w1", maxJobs: 1, backoffBaseMs: 0, ownerId: tenant });
    first.catch(() => {}); // awaited below
    const call = memoryWithLlm(env.sql, env.config, undefined, env.embedder);
    for (const [i, gate] of gates.entries()) {
      await env.fake.chatRequestsReceived(i + 1);
      // The user pins, unpins, pins the neighbour while each decision is pending.
      assert.equal((await call("POST", `/memory/${old.id}/${i % 2 === 0 ? "pin" : "unpin"}`, tenant)).status, 200);
      gate.resolve();
    }
    const report = await first;
    assert.equal(report.retried, 1);
    assert.match(report.jobs[0]!.error!, /NeighboursChangingError/);
    assert.equal((await memoriesOf(env.sql, tenant)).length, 1, "no stale decision applied");

    assert.equal((await drainAll(deps, tenant, "w2")).done, 1);
    assert.equal(env.fake.chatRequests().length, 4);
    const mems = await memoriesOf(env.sql, tenant);
    assert.equal(mems.filter((m) => m.content === text).length, 1);
    assert.equal(mems.find((m) => m.id === old.id)!.is_valid, true);
    const [job] = await env.sql`select status, attempts from public.memory_jobs where id = ${jobId}`;
    assert.deepEqual({ ...job }, { status: "done", attempts: 2 });
  } finally {
    for (const g of gates) g.resolve();
    await env.close();
  }
});
