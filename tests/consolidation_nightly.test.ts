// The nightly side of consolidation: pg_cron's enqueue function queues one staggered job per active
// tenant and the worker runs it (then queues insights and re-embedding); episode compression
// (summaries after 7 days, one line after 30, with the fake LLM; skipped without one); and
// forgetting, through the TTL path, of memories superseded long ago and never retrieved.
import assert from "node:assert/strict";
import { LOCAL_EMBEDDING_MODEL } from "../supabase/functions/_shared/env.ts";
import { SESSION_COMPRESS_MARK, SESSION_SUMMARY_MARK } from "../supabase/functions/_shared/episode-summaries.ts";
import { reply } from "./fake_openai.ts";
import { LOCAL_EMBEDDING, memoryWithLlm, scriptJudge, seedRealisticTenant } from "./support/consolidation.ts";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, seedMemories, seedMemory } from "./support/seed.ts";
import { drainAll, writeEnv } from "./write_helpers.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

Deno.test({
  name: "nightly: one staggered job per active tenant, run by the worker, then insights and re-embedding queued",
  ...opts,
}, async () => {
  const env = await writeEnv({ config: { embedding: LOCAL_EMBEDDING } as never });
  try {
    const t = newTenant();
    await seedRealisticTenant(env.sql, t);
    await seedMemory(env.sql, t, {
      content: "The staging database runs Postgres 16.",
      namespace: "devai/project/shop/notes",
      embedding_model: "old-embedder-v0",
    });
    scriptJudge(env.fake);
    const idle = newTenant();
    await seedMemory(env.sql, idle, { content: "An idle tenant's fact from long ago.", namespace: "devai/user/notes" });
    await env
      .sql`update public.devai_memories set created_at = now() - interval '10 days', updated_at = now() - interval '10 days' where owner_id = ${idle}`;

    const [queued] = await env.sql`select memory_private.enqueue_nightly_consolidation(now()) as r`;
    assert.ok(queued!.r.consolidation >= 1);
    // Other tests' tenants are active too: their nights are not this test's.
    await env.sql`delete from public.memory_jobs where kind = 'nightly_consolidation' and owner_id <> ${t}`;
    const [job] = await env.sql`
      select idempotency_key, run_after, payload from public.memory_jobs where owner_id = ${t} and kind = 'nightly_consolidation'`;
    assert.match(job!.idempotency_key, /^nightly_consolidation:\d{4}-\d{2}-\d{2}$/);
    assert.ok(+job!.run_after <= Date.now() + 60 * 60_000 + 5_000, "spread over the 60-minute window");
    const [again] = await env.sql`select memory_private.enqueue_nightly_consolidation(now()) as r`;
    await env
      .sql`delete from public.memory_jobs where kind = 'nightly_consolidation' and owner_id <> ${t} and status = 'queued'`;
    assert.equal(
      (await env.sql`select 1 from public.memory_jobs where owner_id = ${t} and kind = 'nightly_consolidation'`).length,
      1,
      JSON.stringify(again!.r),
    );
    assert.equal(
      (await env.sql`select 1 from public.memory_jobs where owner_id = ${idle}`).length,
      0,
      "an idle tenant gets no job",
    );

    await env.sql`update public.memory_jobs set run_after = now() where owner_id = ${t}`;
    const report = await drainAll(env.deps, t, "test-worker", 10, ["nightly_consolidation"]);
    assert.deepEqual([report.done, report.dead], [1, 0], JSON.stringify(report.jobs));
    const [done] = await env
      .sql`select result from public.memory_jobs where owner_id = ${t} and kind = 'nightly_consolidation'`;
    assert.deepEqual([done!.result.deduped, done!.result.merged, done!.result.contradictions_found], [2, 5, 1]);
    const [run] = await env
      .sql`select trigger, job_id is not null as has_job from public.memory_consolidation_runs where owner_id = ${t}`;
    assert.deepEqual({ ...run }, { trigger: "nightly", has_job: true });
    const next = await env.sql<{ kind: string; payload: Record<string, unknown> }[]>`
      select kind, payload from public.memory_jobs where owner_id = ${t} and status = 'queued' order by kind`;
    assert.deepEqual(next.map((j) => j.kind), ["insight", "reindex"]);
    assert.deepEqual(next[1]!.payload, { model: LOCAL_EMBEDDING_MODEL });
  } finally {
    await env.close();
  }
});

async function endedSession(
  sql: import("../supabase/functions/_shared/db.ts").Sql,
  t: string,
  id: string,
  daysAgo: number,
): Promise<string[]> {
  const api = memoryApi(sql);
  const messages = [
    { role: "user", content: "the build of src/app.ts fails with ERR_MODULE_NOT_FOUND" },
    { role: "assistant", content: "Reinstalling with `pnpm install` fixed the missing module." },
    { role: "user", content: "great, and add a test for it" },
  ];
  const r = await api("POST", "/memory/episodes", { as: t, body: { session_id: id, project: "shop", messages } });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  assert.equal((await api("POST", `/memory/sessions/${id}/end`, { as: t })).status, 202);
  await sql`update public.memory_sessions set ended_at = now() - make_interval(days => ${daysAgo}) where owner_id = ${t} and session_id = ${id}`;
  return r.body.episodes.map((e: { id: string }) => e.id);
}

Deno.test({
  name:
    "episodes: sessions over 7 days old get a summary memory (derived from their episodes), over 30 days a one-liner",
  ...opts,
}, async () => {
  const env = await writeEnv({ config: { embedding: LOCAL_EMBEDDING } as never });
  try {
    const t = newTenant();
    const episodes = await endedSession(env.sql, t, "s-recent", 2);
    await endedSession(env.sql, t, "s-week", 10);
    await endedSession(env.sql, t, "s-month", 40);
    await env
      .sql`update public.memory_sessions set summary = 'The user and the agent fixed an old deploy script.' where owner_id = ${t} and session_id = 's-month'`;
    await env.sql`delete from public.memory_jobs where owner_id = ${t}`; // the sessions' own consolidation is another test's
    env.fake.onChat(
      SESSION_SUMMARY_MARK,
      reply.json({
        sessions: [{
          session: 0,
          summary:
            "The build of src/app.ts failed on a missing module;\u202e reinstalling with pnpm fixed it and a test was asked for.",
        }],
      }),
    );
    env.fake.onChat(
      SESSION_COMPRESS_MARK,
      reply.json({ sessions: [{ session: 0, compressed: "deploy_script: fixed" }] }),
    );

    const api = memoryWithLlm(env.sql, env.config, env.llm, env.embedder);
    const res = await api("POST", "/memory/consolidate", t, {});
    assert.equal(res.status, 200);
    assert.equal(res.body.compressed, 2);
    const summaryPrompt = JSON.stringify(
      env.fake.chatRequests().find((q) => JSON.stringify(q.body).includes(SESSION_SUMMARY_MARK))!.body.messages,
    );
    assert.ok(summaryPrompt.includes("ERR_MODULE_NOT_FOUND") && !summaryPrompt.includes("s-recent"));

    const sessions = await env.sql<
      { session_id: string; summary: string | null; compressed: string | null; summary_memory_id: string | null }[]
    >`
      select session_id, summary, compressed, summary_memory_id from public.memory_sessions where owner_id = ${t} order by session_id`;
    assert.deepEqual(sessions.map((s) => [s.session_id, Boolean(s.summary), s.compressed]), [
      ["s-month", true, "deploy_script: fixed"],
      ["s-recent", false, null],
      ["s-week", true, null],
    ]);
    const week = sessions.find((s) => s.session_id === "s-week")!;
    assert.ok(!week.summary!.includes("\u202e"), "the model's right-to-left override is not stored");
    const [memory] = await env
      .sql`select memory_type, source, namespace, metadata, content from public.devai_memories where id = ${week.summary_memory_id}`;
    assert.deepEqual([memory!.memory_type, memory!.source, memory!.namespace, memory!.metadata.kind], [
      "episodic",
      "compaction",
      "devai/project/shop/sessions",
      "session_summary",
    ]);
    const edges = await env.sql<{ to_id: string }[]>`
      select to_id from public.memory_relations where from_id = ${week.summary_memory_id} and relation_type = 'derived_from'`;
    assert.equal(edges.length, 3);
    assert.ok(!edges.some((e) => episodes.includes(e.to_id)), "the summary points at its own session's episodes");

    // The summary is what retrieval finds for the session (raw episodes never are).
    const found = await memoryApi(env.sql)("GET", `/memory?project=shop&memory_type=episodic&source=compaction`, {
      as: t,
    });
    assert.deepEqual(found.body.memories.map((m: { id: string }) => m.id), [week.summary_memory_id]);
  } finally {
    await env.close();
  }
});

Deno.test({ name: "episodes without an LLM: nothing is summarised, nothing fails", ...opts }, async () => {
  const env = await writeEnv({ config: { embedding: LOCAL_EMBEDDING } as never, withLlm: false });
  try {
    const t = newTenant();
    await endedSession(env.sql, t, "s-week", 10);
    const res = await memoryWithLlm(env.sql, env.config, undefined, env.embedder)("POST", "/memory/consolidate", t, {});
    assert.equal(res.status, 200);
    assert.equal(res.body.compressed, 0);
    const [s] = await env.sql`select summary from public.memory_sessions where owner_id = ${t}`;
    assert.equal(s!.summary, null);
  } finally {
    await env.close();
  }
});

Deno.test({
  name:
    "forgetting: memories superseded over 30 days ago and never retrieved are soft-deleted the TTL way, nothing else",
  ...opts,
}, async () => {
  const env = await writeEnv({ config: { embedding: LOCAL_EMBEDDING } as never, withLlm: false });
  try {
    const t = newTenant();
    const ns = "devai/project/shop/notes";
    const [current, old, retrieved, stated, recent] = await seedMemories(env.sql, t, [
      { content: "Releases are tagged from main.", namespace: ns },
      { content: "Releases were tagged from the release branch.", namespace: ns },
      { content: "Staging used Postgres 15.", namespace: ns, access_count: 2 },
      {
        content: "The user asked for four-space indentation.",
        namespace: ns,
        source: "user_stated",
        priority: "highest",
      },
      { content: "Lint ran with eslint 8.", namespace: ns },
    ]);
    for (const [m, days] of [[old!, 40], [retrieved!, 40], [stated!, 40], [recent!, 10]] as const) {
      await env.sql`update public.devai_memories set superseded_by = ${
        current!.id
      }, is_valid = false where id = ${m.id}`;
      await env
        .sql`update public.devai_memories set valid_from = now() - interval '100 days', valid_until = now() - make_interval(days => ${days}) where id = ${m.id}`;
    }
    const res = await memoryWithLlm(env.sql, env.config, undefined, env.embedder)("POST", "/memory/consolidate", t, {});
    assert.equal(res.status, 200);
    assert.equal(res.body.forgotten, 1);
    const rows = await env.sql<{ id: string; state: string; purge_at: Date | null }[]>`
      select id, state, purge_at from public.devai_memories where owner_id = ${t} and state = 'soft_deleted'`;
    assert.deepEqual(rows.map((r) => r.id), [old!.id]);
    assert.ok(+rows[0]!.purge_at! > Date.now() + 29 * 86_400_000, "purged after the grace period, by the purge job");
    const [h] = await env.sql`select event, actor from public.memory_history where memory_id = ${
      old!.id
    } order by ts desc limit 1`;
    assert.deepEqual({ ...h }, { event: "TTL", actor: "consolidation" });
  } finally {
    await env.close();
  }
});

Deno.test({
  name: "consolidation never merges two sessions' summaries, however alike: each is its session's record",
  ...opts,
}, async () => {
  const env = await writeEnv({ config: { embedding: LOCAL_EMBEDDING } as never, withLlm: false });
  try {
    const t = newTenant();
    const text = "The build of src/app.ts failed on a missing module; reinstalling with pnpm fixed it.";
    const rows = await seedMemories(
      env.sql,
      t,
      ["s1", "s2"].map((s) => ({
        content: text,
        namespace: "devai/project/shop/sessions",
        memory_type: "episodic" as const,
        source: "compaction",
        metadata: { kind: "session_summary", session_id: s },
      })),
    );
    // The control: the same pair without the summary mark is an exact restatement, merged by the same run.
    const twins = await seedMemories(
      env.sql,
      t,
      ["s1", "s2"].map((s) => ({
        content: "Deploys of the shop go out on Friday mornings after the staging soak.",
        namespace: "devai/project/shop/sessions",
        memory_type: "episodic" as const,
        source: "compaction",
        metadata: { session_id: s },
      })),
    );
    const res = await memoryWithLlm(env.sql, env.config, undefined, env.embedder)("POST", "/memory/consolidate", t, {});
    assert.equal(res.body.deduped, 1, "only the unmarked pair");
    const valid = await env.sql<
      { id: string }[]
    >`select id from public.devai_memories where owner_id = ${t} and is_valid`;
    const validIds = valid.map((v) => v.id);
    assert.equal(rows.filter((r) => validIds.includes(r.id)).length, 2, "both summaries are still valid");
    assert.equal(twins.filter((r) => validIds.includes(r.id)).length, 1, "one of the twins is merged away");
  } finally {
    await env.close();
  }
});

Deno.test({
  name:
    "nightly, the provider refusing the key (401): the job is postponed, not run without the model; once the key works the pairs are judged",
  ...opts,
}, async () => {
  const env = await writeEnv({ config: { embedding: LOCAL_EMBEDDING } as never, llm: { retry: { maxRetries: 0 } } });
  try {
    const t = newTenant();
    await seedRealisticTenant(env.sql, t);
    scriptJudge(env.fake);
    env.fake.chatOutage = reply.error(401, { message: "Incorrect API key provided" });
    await env.sql`select memory_private.enqueue_nightly_consolidation(now())`;
    await env.sql`delete from public.memory_jobs where kind = 'nightly_consolidation' and owner_id <> ${t}`;
    const due = () =>
      env.sql`update public.memory_jobs set run_after = now() where owner_id = ${t} and status = 'queued'`;
    await due();
    const report = await drainAll(env.deps, t, "test-worker", 10, ["nightly_consolidation"]);
    assert.deepEqual([report.done, report.dead, report.postponed], [0, 0, 1], JSON.stringify(report.jobs));
    const [job] = await env.sql`
      select status, last_error from public.memory_jobs where owner_id = ${t} and kind = 'nightly_consolidation'`;
    assert.equal(job!.status, "queued");
    assert.match(job!.last_error, /^provider unavailable: .*HTTP 401/);

    env.fake.chatOutage = undefined;
    await due();
    assert.equal((await drainAll(env.deps, t, "test-worker", 10, ["nightly_consolidation"])).done, 1);
    const [done] = await env
      .sql`select result from public.memory_jobs where owner_id = ${t} and kind = 'nightly_consolidation'`;
    assert.deepEqual([done!.result.llm, done!.result.contradictions_found], ["used", 1]);
  } finally {
    await env.close();
  }
});
