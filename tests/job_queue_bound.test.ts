// A tenant's queued jobs are bounded (docs/operations.md#a-tenants-queued-jobs): a request that would
// queue a new job while its tenant has job_queue_tenant_max jobs queued is answered 429 queue_full
// with Retry-After and writes nothing; the same request again (its job's key) is answered as
// before; another tenant is not affected; the worker's own jobs (an extract job's dedup jobs) are
// queued past the bound, so nothing an extract job found is lost; once the backlog drains the
// tenant queues again. Before, every one of 2,000 memory-dedup POSTs queued its job. Ending a
// session in a request (its consolidation job) is held to the bound as well.
import assert from "node:assert/strict";
import { createHandler } from "../supabase/functions/memory-dedup/handler.ts";
import { drainAll, jobsOf, memoriesOf, writeEnv } from "./write_helpers.ts";
import { userHeaders } from "./support/auth.ts";
import { postExtract } from "./support/extract.ts";
import { overrideSettings } from "./support/lifecycle.ts";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, testSql } from "./support/seed.ts";

const fact = (i: number) => ({
  candidates: [{
    content: `The billing service number ${i} listens on port ${8000 + i}.`,
    type: "semantic",
    source: "discovery",
    priority: "low",
    importance: 3,
  }],
});

Deno.test("job queue bound: past job_queue_tenant_max a tenant's request is 429 queue_full and queues nothing", async () => {
  const env = await writeEnv({ withLlm: false });
  const settings = await overrideSettings(env.sql, { job_queue_tenant_max: 3, job_fair_step_seconds: 45 });
  try {
    const [a, b] = [newTenant(), newTenant()];
    const dedup = createHandler({ ...env.deps, kickWorker: () => Promise.resolve() });
    const post = async (tenant: string, body: unknown) => {
      const res = await dedup(
        new Request("http://localhost/functions/v1/memory-dedup", {
          method: "POST",
          headers: await userHeaders(tenant),
          body: JSON.stringify(body),
        }),
      );
      return { status: res.status, retryAfter: res.headers.get("retry-after"), body: await res.json() };
    };

    const extract = await postExtract(env, a, {
      session_id: "bounded",
      messages: [{ role: "user", content: "Remember that the billing database is refreshed every Monday." }],
    });
    assert.equal(extract.status, 202, JSON.stringify(extract.body));
    for (const i of [1, 2]) assert.equal((await post(a, fact(i))).status, 202);

    const refused = await post(a, fact(3));
    assert.equal(refused.status, 429, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, "queue_full");
    assert.equal(refused.retryAfter, "45", "one fair step: job_fair_step_seconds");
    assert.equal((await jobsOf(env.sql, a)).length, 3, "the refused request queued nothing");
    const refusedExtract = await postExtract(env, a, {
      session_id: "another",
      messages: [{ role: "user", content: "hi" }],
    });
    assert.equal(refusedExtract.status, 429, "memory-extract is bounded too");

    const again = await post(a, fact(1));
    assert.equal(again.status, 202, "the same request again is answered with its job");
    assert.equal(again.body.deduplicated, true);
    assert.equal((await post(b, fact(3))).status, 202, "another tenant is not affected");

    // The extract job's rules' part queues a dedup job while its tenant is at the bound: not refused.
    const drained = await drainAll(env.deps, a);
    assert.equal(drained.dead + drained.retried, 0, JSON.stringify(drained.jobs));
    const stored = (await memoriesOf(env.sql, a)).map((m) => m.content);
    assert.ok(stored.some((c) => c.includes("billing database is refreshed every Monday")), JSON.stringify(stored));
    assert.equal(stored.length, 3, "the extract job's statement and the two facts");

    assert.equal((await post(a, fact(3))).status, 202, "the backlog drained: the tenant queues again");
  } finally {
    await settings.restore();
    await env.close();
  }
});

Deno.test("job queue bound: ending a session in a request (explicit, or a new session on the thread) is held to it too", async () => {
  const sql = testSql(4);
  const settings = await overrideSettings(sql, { job_queue_tenant_max: 1 });
  try {
    const api = memoryApi(sql); // the local embedder: episodes embedded in the request, no job
    const tenant = newTenant();
    const batch = (session: string) => ({
      session_id: session,
      thread_id: "bounded",
      messages: [{ role: "user", content: `We deploy ${session} with fly.` }],
    });
    assert.equal((await api("POST", "/memory/episodes", { as: tenant, body: batch("s1") })).status, 201);
    // s2 ends s1: its consolidation job is the tenant's one queued job.
    assert.equal((await api("POST", "/memory/episodes", { as: tenant, body: batch("s2") })).status, 201);
    const consolidations = () =>
      sql<
        { n: number }[]
      >`select count(*)::int as n from public.memory_jobs where owner_id = ${tenant} and kind = 'consolidate'`
        .then(([row]) => row!.n);
    assert.equal(await consolidations(), 1);

    const refused = await api("POST", "/memory/episodes", { as: tenant, body: batch("s3") });
    assert.equal(refused.status, 429, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, "queue_full");
    const ended = await api("POST", "/memory/sessions/s2/end", { as: tenant });
    assert.equal(ended.status, 429, JSON.stringify(ended.body));
    assert.equal(await consolidations(), 1, "neither queued a consolidation");
    const [{ n } = { n: -1 }] = await sql<{ n: number }[]>`
      select count(*)::int as n from public.memory_sessions where owner_id = ${tenant} and ended_at is not null`;
    assert.equal(n, 1, "and neither ended a session: only s1 is ended");

    const again = await api("POST", "/memory/sessions/s1/end", { as: tenant });
    assert.equal(again.status, 202, "a session already ended is answered with its job, full or not");
  } finally {
    await settings.restore();
    await sql.end();
  }
});
