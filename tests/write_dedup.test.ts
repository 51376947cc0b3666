// Two-phase dedup end to end (real Postgres, fake LLM, scripted embeddings so similarity is exact):
// each action, the exact-duplicate fast path, the server-side id mapping, protection of
// user-stated memories, two concurrent workers, and a worker that crashes mid-job.
import assert from "node:assert/strict";
import { withTenant } from "../supabase/functions/_shared/db.ts";
import { claimJobs, enqueueJob, LeaseLostError } from "../supabase/functions/_shared/jobs.ts";
import type { Candidate } from "../supabase/functions/_shared/candidates.ts";
import { createHandler } from "../supabase/functions/memory-dedup/handler.ts";
import { drainQueue, processJob } from "../supabase/functions/_shared/drain-queue.ts";
import { type ChatRequestBody, hashVector, reply, vectorWithSimilarity } from "./fake_openai.ts";
import { userHeaders } from "./support/auth.ts";
import { newTenant, seedMemory } from "./support/seed.ts";
import { drainAll, EMBEDDING_MODEL, memoriesOf, type WriteEnv, writeEnv } from "./write_helpers.ts";
import { waitUntil } from "./support/wait.ts";

const NS = "devai/project/taskforge";
const DEDUP_MARK = "NEW candidate";
const base = hashVector("base memory");

function candidate(content: string, extra: Partial<Candidate> = {}): Candidate {
  return { content, type: "semantic", namespace: NS, source: "discovery", priority: "low", importance: 3, ...extra };
}

async function enqueue(env: WriteEnv, tenant: string, candidates: Candidate[], key = crypto.randomUUID()) {
  return await withTenant(
    env.sql,
    { tenantId: tenant, actor: "test" },
    (tx) =>
      enqueueJob(tx, { ownerId: tenant, kind: "dedup", idempotencyKey: key, payload: { candidates, origin: "api" } }),
  );
}

async function seedBase(env: WriteEnv, tenant: string, extra: Record<string, unknown> = {}) {
  return await seedMemory(env.sql, tenant, {
    content: "The task-api deploys with npm run deploy.",
    namespace: NS,
    embedding: base,
    embedding_model: EMBEDDING_MODEL,
    ...extra,
  });
}

/** The candidate text the dedup prompt shows (to script replies that echo it). */
function candidateIn(req: ChatRequestBody): string {
  const last = String(req.messages.at(-1)?.content ?? "");
  return /NEW candidate \([^)]*\): (.*)\n\nEXISTING/s.exec(last)?.[1] ?? "";
}

Deno.test("dedup: an exact duplicate (case and spacing aside) is a NOOP with zero LLM calls", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    await seedBase(env, tenant);
    await enqueue(env, tenant, [candidate("the task-api  deploys with NPM run deploy.")]);
    const report = await drainAll(env.deps, tenant);
    assert.equal(report.done, 1);
    assert.equal(env.fake.chatRequests().length, 0);
    assert.equal((await memoriesOf(env.sql, tenant)).length, 1);
    const [ev] = await env.sql`select meta from public.memory_events where owner_id = ${tenant} and op = 'classify'`;
    assert.equal(ev!.meta.reason, "exact_duplicate");
  } finally {
    await env.close();
  }
});

Deno.test("dedup: no neighbour above 0.8 → ADD without an LLM call", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    await seedBase(env, tenant);
    const text = "The docs site is built with Astro.";
    env.fake.setEmbedding(text, vectorWithSimilarity(base, 0.5, "far"));
    await enqueue(env, tenant, [candidate(text)]);
    await drainAll(env.deps, tenant);
    assert.equal(env.fake.chatRequests().length, 0);
    const mems = await memoriesOf(env.sql, tenant);
    assert.equal(mems.length, 2);
    assert.ok(mems.every((m) => m.is_valid));
  } finally {
    await env.close();
  }
});

Deno.test("dedup: ADD with a neighbour links the new memory (related_to), shown to the LLM as [0]", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    const old = await seedBase(env, tenant);
    const text = "The task-api deploy needs the APPWRITE_KEY variable.";
    env.fake.setEmbedding(text, vectorWithSimilarity(base, 0.9, "add"));
    env.fake.onChat(DEDUP_MARK, reply.json({ action: "ADD", reason: "new detail" }));
    await enqueue(env, tenant, [candidate(text)]);
    await drainAll(env.deps, tenant);
    const prompt = String(env.fake.chatRequests()[0]!.body.messages.at(-1).content);
    assert.match(prompt, /\[0\] \(similarity 0\.9\d*, semantic\) The task-api deploys with npm run deploy\./);
    assert.ok(!prompt.includes(old.id), "the LLM never sees memory ids");
    const mems = await memoriesOf(env.sql, tenant);
    assert.equal(mems.length, 2);
    const added = mems.find((m) => m.content === text)!;
    const rels = await env
      .sql`select from_id, to_id, relation_type, strength from public.memory_relations where owner_id = ${tenant}`;
    assert.equal(rels.length, 1);
    assert.equal(rels[0]!.from_id, added.id);
    assert.equal(rels[0]!.to_id, old.id);
    assert.equal(rels[0]!.relation_type, "related_to");
    assert.ok(Math.abs(rels[0]!.strength - 0.9) < 0.01);
  } finally {
    await env.close();
  }
});

Deno.test("dedup: a candidate's `-word` is what it says, not an exclusion: the neighbour naming it is found", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    await seedBase(env, tenant, { content: "The task-api starts with java -jar api.jar." });
    const text = "The task-api runs as java -jar api.jar on port 8080.";
    env.fake.setEmbedding(text, vectorWithSimilarity(base, 0.9, "jar"));
    env.fake.onChat(DEDUP_MARK, reply.json({ action: "ADD", reason: "new detail" }));
    await enqueue(env, tenant, [candidate(text)]);
    await drainAll(env.deps, tenant);
    // Read as a query, `-jar` left out every memory naming jar: no neighbour, no LLM call.
    const prompts = env.fake.chatRequests().map((r) => String(r.body.messages.at(-1).content));
    assert.equal(prompts.length, 1, "the neighbour is shown to the LLM");
    assert.match(prompts[0]!, /\[0\] \(similarity 0\.9\d*, semantic\) The task-api starts with java -jar api\.jar\./);
  } finally {
    await env.close();
  }
});

Deno.test("dedup: UPDATE stores the merged memory and supersedes the old one (MERGE in the history)", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    const old = await seedBase(env, tenant);
    const text = "The task-api deploys with pnpm run deploy.";
    env.fake.setEmbedding(text, vectorWithSimilarity(base, 0.92, "upd"));
    env.fake.onChat(
      DEDUP_MARK,
      reply.json({
        action: "UPDATE",
        target: 0,
        content: "The task-api deploys with pnpm run deploy (npm is no longer used).",
        reason: "refines",
      }),
    );
    await enqueue(env, tenant, [candidate(text)]);
    await drainAll(env.deps, tenant);
    const mems = await memoriesOf(env.sql, tenant);
    assert.equal(mems.length, 2);
    const oldRow = mems.find((m) => m.id === old.id)!;
    const newRow = mems.find((m) => m.id !== old.id)!;
    assert.equal(newRow.content, "The task-api deploys with pnpm run deploy (npm is no longer used).");
    assert.equal(oldRow.is_valid, false);
    assert.equal(oldRow.superseded_by, newRow.id);
    const [h] = await env
      .sql`select event, actor, new_ref from public.memory_history where memory_id = ${old.id} and event <> 'ADD'`;
    assert.equal(h!.event, "MERGE");
    assert.equal(h!.actor, "worker:dedup");
    assert.equal(h!.new_ref, newRow.id);
    const rels = await env
      .sql`select relation_type from public.memory_relations where from_id = ${newRow.id} and to_id = ${old.id}`;
    assert.deepEqual(rels.map((r) => r.relation_type), ["supersedes"]);
    const ops = (await env.sql`select op from public.memory_events where owner_id = ${tenant} order by ts`).map((r) =>
      r.op
    );
    for (const op of ["search", "classify", "create", "merge", "link"]) {
      assert.ok(ops.includes(op), `${op} event in ${ops}`);
    }
    const log = await env
      .sql`select event from public.memory_change_log where owner_id = ${tenant} and memory_id = ${old.id} and event = 'merged'`;
    assert.equal(log.length, 1);
  } finally {
    await env.close();
  }
});

Deno.test("dedup: an UPDATE whose merged text another live memory says supersedes the old one by it, no duplicate", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    const old = await seedBase(env, tenant);
    const other = await seedMemory(env.sql, tenant, {
      content: "The task-api deploys with pnpm run deploy.",
      namespace: NS,
      embedding: hashVector("another memory"),
      embedding_model: EMBEDDING_MODEL,
    });
    const text = "Deploys of the task-api now use pnpm.";
    env.fake.setEmbedding(text, vectorWithSimilarity(base, 0.92, "same-merged"));
    // The merged text is the other memory's, case and spacing aside.
    env.fake.onChat(
      DEDUP_MARK,
      reply.json({ action: "UPDATE", target: 0, content: "The task-api deploys with  PNPM run deploy." }),
    );
    await enqueue(env, tenant, [candidate(text)]);
    await drainAll(env.deps, tenant);
    const mems = await memoriesOf(env.sql, tenant);
    assert.deepEqual(
      mems.map((m) => [m.id === old.id ? "old" : m.id === other.id ? "other" : m.content, m.is_valid, m.superseded_by])
        .sort(),
      [["old", false, other.id], ["other", true, null]],
    );
    const rels = await env
      .sql`select relation_type from public.memory_relations where from_id = ${other.id} and to_id = ${old.id}`;
    assert.deepEqual(rels.map((r) => r.relation_type), ["supersedes"]);

    // A merged text that is the old memory's own: nothing changes.
    const again = "The task-api deploys via pnpm, confirmed.";
    env.fake.setEmbedding(again, vectorWithSimilarity(hashVector("another memory"), 0.92, "own-text"));
    env.fake.onChat(DEDUP_MARK, reply.json({ action: "UPDATE", target: 0, content: other.content }));
    await enqueue(env, tenant, [candidate(again)]);
    await drainAll(env.deps, tenant);
    assert.equal((await memoriesOf(env.sql, tenant)).length, 2);
  } finally {
    await env.close();
  }
});

Deno.test("dedup: DELETE invalidates the contradicted memory softly (audited, reversible) and stores the candidate", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    const old = await seedBase(env, tenant);
    const text = "The task-api no longer deploys through npm scripts.";
    env.fake.setEmbedding(text, vectorWithSimilarity(base, 0.88, "del"));
    env.fake.onChat(DEDUP_MARK, reply.json({ action: "DELETE", target: 0 }));
    await enqueue(env, tenant, [candidate(text)]);
    await drainAll(env.deps, tenant);
    const mems = await memoriesOf(env.sql, tenant);
    const oldRow = mems.find((m) => m.id === old.id)!;
    assert.equal(oldRow.is_valid, false);
    assert.equal(oldRow.superseded_by, null);
    assert.ok(mems.some((m) => m.content === text && m.is_valid));
    const [h] = await env.sql`select event from public.memory_history where memory_id = ${old.id} and event <> 'ADD'`;
    assert.equal(h!.event, "DELETE");
    const [row] = await env.sql`select count(*)::int as n from public.devai_memories where id = ${old.id}`;
    assert.equal(row!.n, 1, "soft: the row is still there");
    const rels = await env.sql`select relation_type from public.memory_relations where to_id = ${old.id}`;
    assert.deepEqual(rels.map((r) => r.relation_type), ["contradicts"]);
  } finally {
    await env.close();
  }
});

Deno.test("dedup: NOOP leaves everything as it is", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    await seedBase(env, tenant);
    const text = "The task-api is deployed using npm run deploy.";
    env.fake.setEmbedding(text, vectorWithSimilarity(base, 0.97, "noop"));
    env.fake.onChat(DEDUP_MARK, reply.json({ action: "NOOP", target: 0 }));
    await enqueue(env, tenant, [candidate(text)]);
    await drainAll(env.deps, tenant);
    assert.equal(env.fake.chatRequests().length, 1);
    const mems = await memoriesOf(env.sql, tenant);
    assert.equal(mems.length, 1);
    assert.ok(mems[0]!.is_valid);
  } finally {
    await env.close();
  }
});

Deno.test("dedup: a decision naming an id outside the neighbour set is rejected and resolved as ADD", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    const old = await seedBase(env, tenant);
    const text = "The task-api deploy takes about two minutes.";
    env.fake.setEmbedding(text, vectorWithSimilarity(base, 0.9, "bad"));
    env.fake.onChat(DEDUP_MARK, reply.json({ action: "DELETE", target: 7 }));
    await enqueue(env, tenant, [candidate(text)]);
    await drainAll(env.deps, tenant);
    const mems = await memoriesOf(env.sql, tenant);
    assert.equal(mems.length, 2);
    assert.ok(mems.find((m) => m.id === old.id)!.is_valid, "nothing deleted");
    const [ev] = await env
      .sql`select status, meta from public.memory_events where owner_id = ${tenant} and op = 'classify'`;
    assert.equal(ev!.status, "error");
    assert.equal(ev!.meta.override, "unknown_target");
  } finally {
    await env.close();
  }
});

Deno.test("dedup: user-stated memories are never deleted or rewritten by the LLM, and are always stored", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    const old = await seedBase(env, tenant, { source: "user_stated", priority: "highest" });
    const a = "The task-api deploys with yarn deploy.";
    const b = "The user wants deploys to run only on Fridays.";
    env.fake.setEmbedding(a, vectorWithSimilarity(base, 0.9, "a"));
    env.fake.setEmbedding(b, vectorWithSimilarity(base, 0.85, "b"));
    env.fake.onChat("yarn deploy", reply.json({ action: "DELETE", target: 0 }));
    env.fake.onChat("Fridays", reply.json({ action: "NOOP", target: 0 }));
    await enqueue(env, tenant, [candidate(a), candidate(b, { source: "user_stated", priority: "highest" })]);
    await drainAll(env.deps, tenant);
    // The control: the model was asked about both candidates (and answered DELETE and NOOP).
    const asked = env.fake.chatRequests().map((q) => JSON.stringify(q.body));
    assert.deepEqual([a, b].map((c) => asked.filter((p) => p.includes(c)).length), [1, 1], "one judgement each");
    const mems = await memoriesOf(env.sql, tenant);
    assert.ok(mems.find((m) => m.id === old.id)!.is_valid, "user-stated memory untouched");
    assert.ok(mems.some((m) => m.content === a && m.is_valid), "DELETE of a protected memory became ADD");
    assert.ok(mems.some((m) => m.content === b && m.is_valid), "a user-stated candidate is stored despite NOOP");
  } finally {
    await env.close();
  }
});

Deno.test("dedup: the memory-dedup endpoint validates candidates and queues a job (202)", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    const handler = createHandler({ ...env.deps, kickWorker: () => Promise.resolve() });
    const url = "http://localhost/functions/v1/memory-dedup";
    const bad = await handler(
      new Request(url, {
        method: "POST",
        headers: await userHeaders(tenant),
        body: JSON.stringify({ candidates: [] }),
      }),
    );
    assert.equal(bad.status, 400);
    const pronoun = await handler(
      new Request(url, {
        method: "POST",
        headers: await userHeaders(tenant),
        body: JSON.stringify({ candidates: [candidate("I think we should use pnpm.")] }),
      }),
    );
    assert.equal(pronoun.status, 422);
    const [{ n } = { n: -1 }] = await env
      .sql`select count(*)::int as n from public.memory_jobs where owner_id = ${tenant}`;
    assert.equal(n, 0);
    const ok = await handler(
      new Request(url, {
        method: "POST",
        headers: await userHeaders(tenant),
        body: JSON.stringify({ candidates: [candidate("The task-api uses Hono.")], project: "taskforge" }),
      }),
    );
    assert.equal(ok.status, 202);
    await drainAll(env.deps, tenant);
    assert.equal((await memoriesOf(env.sql, tenant)).length, 1);
  } finally {
    await env.close();
  }
});

Deno.test("dedup concurrency: two workers with overlapping candidates add nothing twice and lose no update", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    const old = await seedBase(env, tenant);
    // Overlap 1: the same new fact in both jobs (no neighbour → no LLM call; only the lock orders them).
    const shared = "The staging URL is staging.taskforge.dev.";
    env.fake.setEmbedding(shared, vectorWithSimilarity(base, 0.1, "shared"));
    // Overlap 2: both jobs refine the same memory; each must build on the other's result.
    const c1 = "The task-api deploys with pnpm run deploy.";
    const v1 = vectorWithSimilarity(base, 0.9, "c1");
    const c2 = "The task-api deploys with pnpm run deploy:prod in production.";
    const v2 = vectorWithSimilarity(v1, 0.97, "c2");
    env.fake.setEmbedding(c1, v1).setEmbedding(c2, v2);
    // Slow decisions keep both transactions open at the same time.
    env.fake.onChat(
      DEDUP_MARK,
      reply.dynamic((req) => reply.slow(150, reply.json({ action: "UPDATE", target: 0, content: candidateIn(req) }))),
    );
    await enqueue(env, tenant, [candidate(c1), candidate(shared)]);
    await enqueue(env, tenant, [candidate(c2), candidate(shared)]);

    const [r1, r2] = await Promise.all([
      drainQueue(env.deps, { workerId: "w1", maxJobs: 1, ownerId: tenant, backoffBaseMs: 0 }),
      drainQueue(env.deps, { workerId: "w2", maxJobs: 1, ownerId: tenant, backoffBaseMs: 0 }),
    ]);
    assert.equal(r1.done + r2.done, 2, JSON.stringify([r1, r2]));

    const mems = await memoriesOf(env.sql, tenant);
    assert.equal(mems.filter((m) => m.content === shared).length, 1, "the shared fact is stored once");
    const chain = mems.filter((m) => m.content !== shared);
    assert.equal(chain.length, 3);
    assert.equal(chain.filter((m) => m.is_valid).length, 1, "one current version, no fork");
    // old → first update → second update: neither update was lost.
    const first = chain.find((m) => m.id === chain.find((x) => x.id === old.id)!.superseded_by)!;
    assert.ok(first, "old memory superseded");
    const second = chain.find((m) => m.id === first.superseded_by);
    assert.ok(second && second.is_valid, "the second update superseded the first");
    assert.deepEqual([first.content, second!.content].sort(), [c1, c2].sort());
  } finally {
    await env.close();
  }
});

Deno.test("dedup crash: a worker that dies mid-job loses its lease, the job re-runs once, no double write", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    await seedBase(env, tenant);
    const text = "The task-api deploys with bun run deploy.";
    env.fake.setEmbedding(text, vectorWithSimilarity(base, 0.9, "crash"));
    // Always UPDATE [0] with a merged text: a second application would supersede the merged memory.
    env.fake.onChat(
      DEDUP_MARK,
      reply.dynamic((req) => reply.json({ action: "UPDATE", target: 0, content: `Merged: ${candidateIn(req)}` })),
    );
    const queued = await enqueue(env, tenant, [candidate(text)]);

    // The "crashed" worker claims with a 1 s lease and never finishes in time.
    const [zombie] = await claimJobs(env.sql, { workerId: "zombie", leaseSeconds: 1, ownerId: tenant });
    assert.equal(zombie!.id, queued.id);
    assert.equal((await drainAll(env.deps, tenant, "w2")).claimed, 0, "lease still held");
    // Once the lease runs out (an event w2 sees: it can claim the job), w2 runs it.
    const report = await waitUntil(async () => {
      const r = await drainAll(env.deps, tenant, "w2");
      return r.claimed > 0 ? r : undefined;
    }, "the zombie's one-second lease to expire");
    assert.equal(report.done, 1);
    const after = await memoriesOf(env.sql, tenant);
    assert.equal(after.length, 2);

    // The zombie wakes up and runs the job it still holds a stale copy of: its completion fails,
    // so its writes roll back.
    await assert.rejects(processJob(env.deps, zombie!, "zombie"), LeaseLostError);
    const final = await memoriesOf(env.sql, tenant);
    assert.deepEqual(final, after);
    const [job] = await env.sql`select status, attempts, locked_by from public.memory_jobs where id = ${queued.id}`;
    assert.equal(job!.status, "done");
    assert.equal(job!.attempts, 2);
  } finally {
    await env.close();
  }
});

Deno.test("dedup retry: a job whose model failed at its second candidate goes on from there, the first applied once", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    await seedBase(env, tenant);
    const first = "The task-api writes its logs to stdout.";
    const second = "The task-api deploys with pnpm run deploy.";
    env.fake.setEmbedding(second, vectorWithSimilarity(base, 0.9, "retry"));
    let failing = true;
    env.fake.onChat(
      DEDUP_MARK,
      reply.dynamic(() => failing ? reply.error(500) : reply.json({ action: "ADD", reason: "new detail" })),
    );
    const queued = await enqueue(env, tenant, [candidate(first), candidate(second)]);
    const once = await drainQueue(env.deps, { workerId: "w1", maxJobs: 1, backoffBaseMs: 0, ownerId: tenant });
    assert.equal(once.retried, 1, "the model's failure fails the job");
    // Each candidate is applied in its own transaction with the job's progress: the first stays.
    const [mid] = await env.sql`select result from public.memory_jobs where id = ${queued.id}`;
    assert.equal(mid!.result.dedup.done, 1);
    assert.equal((await memoriesOf(env.sql, tenant)).filter((m) => m.content === first).length, 1);

    failing = false;
    assert.equal((await drainAll(env.deps, tenant, "w2")).done, 1);
    const [job] = await env.sql`select status, attempts, result from public.memory_jobs where id = ${queued.id}`;
    assert.equal(job!.status, "done");
    assert.equal(job!.attempts, 2);
    assert.deepEqual(job!.result.outcomes.map((o: { action: string }) => o.action), ["ADD", "ADD"]);
    const mems = await memoriesOf(env.sql, tenant);
    assert.deepEqual(
      mems.map((m) => m.content).sort(),
      [first, second, "The task-api deploys with npm run deploy."].sort(),
    );
    const creates = await env.sql`
      select 1 from public.memory_events where owner_id = ${tenant} and op = 'create' and status = 'ok'`;
    assert.equal(creates.length, 2, "each candidate created once");
  } finally {
    await env.close();
  }
});

Deno.test("dedup: an exact duplicate in ANOTHER project is not a NOOP (it is invisible to this project)", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    const text = "The deploy script is make ship.";
    await seedMemory(env.sql, tenant, {
      content: text,
      namespace: "devai/project/alpha/deploy",
      embedding: base,
      embedding_model: EMBEDDING_MODEL,
    });
    env.fake.setEmbedding(text, base);
    await enqueue(env, tenant, [candidate(text, { namespace: "devai/project/beta/deploy" })]);
    await drainAll(env.deps, tenant);
    const mems = await memoriesOf(env.sql, tenant);
    assert.ok(
      mems.some((m) => m.namespace === "devai/project/beta/deploy" && m.content === text),
      JSON.stringify(mems),
    );
  } finally {
    await env.close();
  }
});

Deno.test("dedup: a target index beyond the neighbours shown (a weaker search hit) is rejected, not applied", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    const shown = await seedBase(env, tenant);
    const text = "The task-api deploy takes about two minutes.";
    const cand = vectorWithSimilarity(base, 0.9, "cand");
    env.fake.setEmbedding(text, cand);
    const weak = await seedMemory(env.sql, tenant, {
      content: "The task-api logs to stdout.",
      namespace: NS,
      embedding_model: EMBEDDING_MODEL,
      embedding: vectorWithSimilarity(cand, 0.78, "weak-neighbour"), // link range, below the 0.8 shown to the LLM
    });
    // The candidate is ≥ 0.8 to [0] only; the weak memory is a link-range hit (not shown) at index 1 of the search.
    env.fake.onChat(
      DEDUP_MARK,
      reply.dynamic((req) => {
        const listed = String(req.messages.at(-1)?.content ?? "").match(/^\[\d+\]/gm) ?? [];
        return reply.json({ action: "DELETE", target: listed.length }); // first index NOT shown
      }),
    );
    await enqueue(env, tenant, [candidate(text)]);
    await drainAll(env.deps, tenant);
    assert.equal(env.fake.chatRequests().length, 1, "the judge was asked (and named the unshown index)");
    const mems = await memoriesOf(env.sql, tenant);
    assert.ok(mems.find((m) => m.id === shown.id)!.is_valid);
    assert.ok(mems.find((m) => m.id === weak.id)!.is_valid, "a memory the LLM never saw was invalidated");
  } finally {
    await env.close();
  }
});

Deno.test("dedup: pinned and correction memories are protected targets too", async () => {
  const env = await writeEnv();
  try {
    for (const extra of [{ pinned: true }, { source: "correction" }]) {
      const tenant = newTenant();
      const old = await seedBase(env, tenant, extra);
      const text = `The task-api deploys with yarn ship ${JSON.stringify(extra).length}.`;
      env.fake.setEmbedding(text, vectorWithSimilarity(base, 0.9, text));
      env.fake.reset();
      env.fake.onChat(DEDUP_MARK, reply.json({ action: "DELETE", target: 0 }));
      await enqueue(env, tenant, [candidate(text)]);
      await drainAll(env.deps, tenant);
      assert.equal(
        env.fake.chatRequests().length,
        1,
        `${JSON.stringify(extra)}: the judge was asked (and said DELETE)`,
      );
      assert.ok((await memoriesOf(env.sql, tenant)).find((m) => m.id === old.id)!.is_valid, JSON.stringify(extra));
    }
  } finally {
    await env.close();
  }
});

Deno.test("dedup: the per-tenant daily cap skips automatic writes (user-stated exempt)", async () => {
  const env = await writeEnv({ config: { extractDailyCap: 1 } });
  try {
    const tenant = newTenant();
    const texts = ["The cache uses redis.", "The queue uses pg.", "The user wants tabs."];
    texts.forEach((t, i) => env.fake.setEmbedding(t, hashVector(`cap-${i}`)));
    await enqueue(env, tenant, [
      candidate(texts[0]!),
      candidate(texts[1]!),
      candidate(texts[2]!, { source: "user_stated", priority: "highest" }),
    ]);
    await drainAll(env.deps, tenant);
    const stored = (await memoriesOf(env.sql, tenant)).map((m) => m.content).sort();
    assert.deepEqual(stored, [texts[0], texts[2]].sort());
  } finally {
    await env.close();
  }
});
