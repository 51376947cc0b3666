// A session's consolidation applies its facts as the dedup job does (dedup.ts): each fact in a
// short transaction with the job's progress, the model asked with no transaction open. Found in
// session 37's review: consolidation ran every fact's dedup pass in its one transaction, so once
// fact 1 was applied its neighbours stayed locked (for no key update) across the model's decision
// on fact 2, with a pooled connection idle in transaction; a user's correction of fact 1's
// neighbour through a request pool with a 2 s statement timeout was a 503 after 2.03 s. Now a 201
// while the model still holds fact 2's answer. A retried consolidation resumes after the facts
// it applied: none twice, the session's model not asked again.
import assert from "node:assert/strict";
import { createSql } from "../supabase/functions/_shared/db-pool.ts";
import { drainQueue } from "../supabase/functions/_shared/drain-queue.ts";
import { hashVector, reply, vectorWithSimilarity } from "./fake_openai.ts";
import { realServerOnly } from "./support/backend.ts";
import { testDatabaseUrl } from "./support/config.ts";
import { memoryWithLlm } from "./support/consolidation.ts";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, seedMemory } from "./support/seed.ts";
import { drainAll, EMBEDDING_MODEL, memoriesOf, patientEnv, type WriteEnv } from "./write_helpers.ts";

const NS = "devai/project/shop";
const CONSOLIDATION_MARK = "The conversation is given as numbered messages";
const N1 = "The shop project deploys with npm run deploy.";
const N2 = "The shop project tests run with jest.";
const F1 = "The shop project deploys with pnpm run release.";
const F2 = "The shop project tests run with vitest.";
const fact = (content: string) => ({
  content,
  type: "semantic",
  namespace: NS,
  source: "discovery",
  priority: "high",
  importance: 4,
  sources: [0],
  entities: [],
});

/** N1 and N2 stored; an ended session whose consolidation proposes F1 (near N1) and F2 (near N2). */
async function sessionOverTwoNeighbours(env: WriteEnv, tenant: string) {
  const ids = [];
  for (const [content, seed] of [[N1, "deploy"], [N2, "tests"]] as const) {
    const base = hashVector(seed);
    ids.push(
      (await seedMemory(env.sql, tenant, { content, namespace: NS, embedding: base, embedding_model: EMBEDDING_MODEL }))
        .id,
    );
    env.fake.setEmbedding(content === N1 ? F1 : F2, vectorWithSimilarity(base, 0.92, seed));
  }
  env.fake.onChat(CONSOLIDATION_MARK, reply.json({ stored: [fact(F1), fact(F2)], filtered: [] }));
  const api = memoryApi(env.sql);
  const r = await api("POST", "/memory/episodes", {
    as: tenant,
    body: {
      session_id: "s1",
      project: "shop",
      messages: [{ role: "user", content: "we moved deploys to pnpm and the tests to vitest" }],
    },
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  assert.equal((await api("POST", "/memory/sessions/s1/end", { as: tenant })).status, 202);
  return { n1: ids[0]!, n2: ids[1]! };
}

Deno.test({
  ...realServerOnly(
    "consolidation: a correction of an applied fact's neighbour completes while the model decides a later fact",
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
    const { n1 } = await sessionOverTwoNeighbours(env, tenant);
    env.fake.onChat(F1, reply.json({ action: "ADD", reason: "another command" }));
    env.fake.onChat(F2, reply.until(released.promise, reply.json({ action: "ADD", reason: "another runner" })));
    const draining = drainAll(deps, tenant);
    drained = draining.catch(() => {});
    // The consolidation call, F1's decision, and F2's (held).
    await env.fake.chatRequestsReceived(3);

    const call = memoryWithLlm(requests, env.config, undefined, env.embedder);
    const corrected = "The shop project deploys with make deploy.";
    env.fake.setEmbedding(corrected, hashVector("corrected"));
    const started = performance.now();
    const res = await call("POST", `/memory/${n1}/correct`, tenant, { content: corrected });
    const waitedMs = performance.now() - started;
    console.log(`correction of F1's neighbour while F2 is decided: ${res.status} after ${waitedMs.toFixed(0)} ms`);
    assert.equal(res.status, 201, `the correction went through: ${JSON.stringify(res.body)}`);

    released.resolve();
    await draining;
    const mems = await memoriesOf(env.sql, tenant);
    for (const f of [F1, F2]) assert.equal(mems.filter((m) => m.content === f && m.is_valid).length, 1, f);
    const [session] = await env
      .sql`select consolidation from public.memory_sessions where session_id = 's1' and owner_id = ${tenant}`;
    assert.equal(session!.consolidation.counts.ADD, 2, JSON.stringify(session!.consolidation));
  } finally {
    released.resolve();
    await drained;
    await requests.end();
    await env.close();
  }
});

Deno.test({
  ...realServerOnly("consolidation: a retried job resumes after the facts it applied", "as the test above"),
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const { env, deps } = await patientEnv();
  try {
    const tenant = newTenant();
    await sessionOverTwoNeighbours(env, tenant);
    env.fake.onChat(F1, reply.json({ action: "ADD", reason: "another command" }));
    // F2's decision fails on the first attempt (the job is retried), then adds.
    env.fake.onChat(F2, [
      ...Array(5).fill(reply.error(500)),
      reply.json({ action: "ADD", reason: "another runner" }),
    ]);
    const first = await drainQueue(deps, { workerId: "w1", maxJobs: 1, backoffBaseMs: 0, ownerId: tenant });
    assert.equal(first.retried, 1, JSON.stringify(first.jobs));
    assert.equal((await memoriesOf(env.sql, tenant)).filter((m) => m.content === F1).length, 1, "F1 applied");

    await drainAll(deps, tenant, "w2");
    const mems = await memoriesOf(env.sql, tenant);
    for (const f of [F1, F2]) assert.equal(mems.filter((m) => m.content === f).length, 1, `${f} once`);
    const asked = (mark: string) => env.fake.chatRequests().filter((r) => JSON.stringify(r.body).includes(mark)).length;
    assert.equal(asked(CONSOLIDATION_MARK), 1, "the session's facts were proposed once");
    assert.equal(asked(F1), 1, "F1 decided once: the retry did not apply it again");
    const [session] = await env
      .sql`select consolidation from public.memory_sessions where session_id = 's1' and owner_id = ${tenant}`;
    assert.equal(session!.consolidation.counts.ADD, 2, JSON.stringify(session!.consolidation));
  } finally {
    await env.close();
  }
});

Deno.test({
  ...realServerOnly(
    "consolidation: a retry whose saved proposal names a purged episode completes",
    "as the test above",
  ),
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const { env, deps } = await patientEnv();
  try {
    const tenant = newTenant();
    await sessionOverTwoNeighbours(env, tenant);
    env.fake.onChat(F1, reply.json({ action: "ADD", reason: "another command" }));
    env.fake.onChat(F2, [
      ...Array(5).fill(reply.error(500)),
      reply.json({ action: "ADD", reason: "another runner" }),
    ]);
    const first = await drainQueue(deps, { workerId: "w1", maxJobs: 1, backoffBaseMs: 0, ownerId: tenant });
    assert.equal(first.retried, 1, JSON.stringify(first.jobs));
    // Between the attempts the session's only episode goes (a forget, then the purge): the saved
    // proposal still names it. The retry's edges would break their key on every attempt.
    const purged = await env.sql`
      delete from public.devai_memories where owner_id = ${tenant} and session_id = 's1' and source = 'conversation'
      returning id`;
    assert.equal(purged.length, 1);

    await drainAll(deps, tenant, "w2");
    const [job] = await env.sql`
      select status from public.memory_jobs where owner_id = ${tenant} and kind = 'consolidate'`;
    assert.equal(job!.status, "done");
    const mems = await memoriesOf(env.sql, tenant);
    for (const f of [F1, F2]) assert.equal(mems.filter((m) => m.content === f).length, 1, `${f} once`);
    const [session] = await env
      .sql`select consolidated_at, consolidation from public.memory_sessions where session_id = 's1' and owner_id = ${tenant}`;
    assert.ok(session!.consolidated_at, "the session is consolidated");
    assert.equal(session!.consolidation.derived_from_edges, 0, JSON.stringify(session!.consolidation));
  } finally {
    await env.close();
  }
});
