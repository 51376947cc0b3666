// Candidates are queued for dedup 100 to a job (_shared/dedup-jobs.ts): a transcript or a compacted
// chunk with more "remember …" statements than one dedup job takes stores every one of them. Before,
// one job took them all, the worker refused a payload past 100 candidates, and all were lost while
// the extraction said "stored" (found by an outside attack: 101 statements, 0 memories).
import assert from "node:assert/strict";
import { createHandler as createCompact } from "../supabase/functions/memory-compact/handler.ts";
import { enqueueDedupJobs } from "../supabase/functions/_shared/dedup-jobs.ts";
import { withTenant } from "../supabase/functions/_shared/db.ts";
import { userHeaders } from "./support/auth.ts";
import { postExtract } from "./support/extract.ts";
import { newTenant } from "./support/seed.ts";
import { drainAll, jobsOf, memoriesOf, writeEnv } from "./write_helpers.ts";

const WORDS = ["amber", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "harbor", "indigo", "jasper", "kelp"];

/** The n-th statement, worded unlike the others (so dedup keeps each: none is another's duplicate). */
function statement(n: number): string {
  const w = (k: number) => WORDS[Math.floor(n / WORDS.length ** k) % WORDS.length];
  return `remember that the ${w(0)} ${w(1)} ${w(2)} service listens on port ${20_000 + n * 7}`;
}

Deno.test("extract: 250 stated facts are queued in three dedup jobs and every one is stored", async () => {
  const env = await writeEnv({ withLlm: false });
  const tenant = newTenant();
  try {
    const messages = Array.from({ length: 250 }, (_, n) => ({ role: "user", content: statement(n) }));
    const res = await postExtract(env, tenant, { session_id: "s-many", messages });
    assert.equal(res.status, 202);
    await drainAll(env.deps, tenant);

    const jobs = await jobsOf(env.sql, tenant, ["extract", "dedup"]);
    const extract = jobs.find((j) => j.kind === "extract")!;
    const dedup = jobs.filter((j) => j.kind === "dedup");
    assert.deepEqual(
      dedup.map((j) => j.status),
      ["done", "done", "done"],
      JSON.stringify(dedup.map((j) => j.last_error)),
    );
    const rules = (extract.result as { rules: { candidates: number; dedup_job_ids: string[] } }).rules;
    assert.equal(rules.candidates, 250);
    assert.deepEqual([...rules.dedup_job_ids].sort(), dedup.map((j) => j.id).sort());
    assert.deepEqual(dedup.map((j) => j.idempotency_key).sort(), [
      `extract:${extract.id}:rules`,
      `extract:${extract.id}:rules:batch1`,
      `extract:${extract.id}:rules:batch2`,
    ]);
    const stored = (await memoriesOf(env.sql, tenant)).filter((m) => m.source !== "conversation");
    assert.equal(stored.length, 250);
    for (const n of [0, 99, 100, 249]) {
      assert.ok(stored.some((m) => m.content.includes(`port ${20_000 + n * 7}`)), `statement ${n} stored`);
    }
  } finally {
    await env.close();
  }
});

Deno.test("compact: 150 stated facts in the compacted chunk go in two dedup jobs, all stored; a repeat queues nothing", async () => {
  const env = await writeEnv({ withLlm: false });
  const tenant = newTenant();
  try {
    const handler = createCompact({ ...env.deps, kickWorker: () => Promise.resolve() });
    const messages = [
      ...Array.from({ length: 150 }, (_, n) => ({ role: "user", content: `${statement(n)}. ${"filler ".repeat(30)}` })),
      ...Array.from({ length: 40 }, () => ({ role: "assistant", content: "ok ".repeat(50) })),
    ];
    const compact = async () =>
      await (await handler(
        new Request("http://localhost/functions/v1/memory-compact", {
          method: "POST",
          headers: await userHeaders(tenant),
          body: JSON.stringify({ session_id: "c-many", messages, trigger_tokens: 1_000, target_chunk_tokens: 500_000 }),
        }),
      )).json();
    const out = await compact();
    assert.equal(out.compacted, true);
    assert.equal(out.candidates_queued, 150);
    assert.equal(out.dedup_job_ids.length, 2);
    assert.equal(out.dedup_job_id, out.dedup_job_ids[0]);
    await drainAll(env.deps, tenant);

    const dedup = await jobsOf(env.sql, tenant, ["dedup"]);
    assert.deepEqual(dedup.map((j) => j.status), ["done", "done"]);
    const stored = (await memoriesOf(env.sql, tenant)).filter((m) => m.source !== "conversation");
    assert.equal(stored.length, 150);

    const again = await compact();
    assert.equal(again.candidates_queued, 0, "the same chunk again: its jobs exist");
    assert.deepEqual(again.dedup_job_ids, out.dedup_job_ids);
    assert.equal((await jobsOf(env.sql, tenant, ["dedup"])).length, 2);
  } finally {
    await env.close();
  }
});

Deno.test("dedup batches: a call with a key already used queues nothing, whatever its candidates; the jobs come back in order", async () => {
  const env = await writeEnv({ withLlm: false });
  const tenant = newTenant();
  try {
    const candidates = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ content: statement(i), type: "semantic", namespace: "devai/user" }));
    const enqueue = (n: number) =>
      withTenant(
        env.sql,
        { tenantId: tenant, actor: "user" },
        (tx) =>
          enqueueDedupJobs(tx, {
            ownerId: tenant,
            idempotencyKey: "compact:s:h",
            payload: {},
            candidates: candidates(n),
          }),
      );
    // Eleven jobs: batch10's key sorts before batch2's as text, so only the batches' numbers give
    // the candidates' order (all were queued in one transaction: their created_at is the same).
    const first = await enqueue(1_050);
    assert.equal(first.jobIds.length, 11);
    assert.equal(first.queued, 1_050);
    // A repeat whose model found fewer, or more, candidates: the first call's jobs, nothing new.
    for (const n of [90, 1_200]) assert.deepEqual(await enqueue(n), { jobIds: first.jobIds, queued: 0 });
    assert.equal((await jobsOf(env.sql, tenant, ["dedup"])).length, 11);
  } finally {
    await env.close();
  }
});
