// Nightly graph maintenance run by the worker (graph-maintenance.ts), with the fake LLM through the
// real openai SDK and without any LLM: entity enrichment (summary + embedding for entities with
// ≥ 3 mentions), causal inference over consecutive episode pairs (≤ 50 pairs per call, confidence
// 0.7, the next night goes on where this one stopped). The jobs are queued here for one tenant;
// which tenants memory_private.enqueue_graph_maintenance picks is pgTAP's (42_graph_signals).
import assert from "node:assert/strict";
import { withTenant } from "../supabase/functions/_shared/db.ts";
import { ENRICH_RETRY_DAYS } from "../supabase/functions/_shared/graph-maintenance.ts";
import { enqueueJob, type JobKind } from "../supabase/functions/_shared/jobs.ts";
import { reply } from "./fake_openai.ts";
import { overrideSettings } from "./support/lifecycle.ts";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant } from "./support/seed.ts";
import { drainAll, EMBEDDING_MODEL, jobsOf, type WriteEnv, writeEnv } from "./write_helpers.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const ENRICH_MARK = "For each numbered entity";
const CAUSAL_MARK = "Each numbered pair is two consecutive messages";

async function queue(env: WriteEnv, t: string, kind: JobKind, night: string) {
  await withTenant(
    env.sql,
    { tenantId: t, actor: "test" },
    (tx) => enqueueJob(tx, { ownerId: t, kind, idempotencyKey: `${kind}:${night}`, payload: { night } }),
  );
}

/** A session whose messages name src/app.ts three times and pnpm once; `count` messages in all, ended. */
async function session(env: WriteEnv, t: string, count = 4): Promise<string[]> {
  const api = memoryApi(env.sql);
  const messages = Array.from({ length: count }, (_, i) => ({
    role: i % 2 === 0 ? "user" : "assistant",
    content: i < 3 ? `step ${i}: src/app.ts fails to build` : i === 3 ? "fixed it with `pnpm install`" : `message ${i}`,
  }));
  const ids: string[] = [];
  for (let i = 0; i < messages.length; i += 50) {
    const r = await api("POST", "/memory/episodes", {
      as: t,
      body: { session_id: "s", messages: messages.slice(i, i + 50) },
    });
    assert.equal(r.status, 201);
    ids.push(...r.body.episodes.map((e: { id: string }) => e.id));
  }
  assert.equal((await api("POST", "/memory/sessions/s/end", { as: t })).status, 202);
  return ids;
}

/** Remembers `content` for tenant `t` through the API; the new memory's id. */
async function remembered(env: WriteEnv, t: string, content: string): Promise<string> {
  const r = await memoryApi(env.sql)("POST", "/memory/remember", { as: t, body: { content } });
  assert.equal(r.status, 201);
  return r.body.memory.id as string;
}

/** The last message of the one enrichment prompt the fake model was sent. */
function enrichPrompt(env: WriteEnv): string {
  const prompts = env.fake.chatRequests().map((r) => String(r.body.messages.at(-1).content));
  assert.equal(prompts.length, 1);
  return prompts[0]!;
}

const GITHUB_TOKEN = "ghp_aB3dE6gH9jK2mN5pQ8rS1tV4wX7yZ0cF3hJ6k";

Deno.test({
  name:
    "enrichment (fake LLM): entities with 3 mentions get a summary and an embedding; the rest wait; no secret or unsafe character is stored",
  ...opts,
}, async () => {
  const env = await writeEnv();
  try {
    const t = newTenant();
    await session(env, t);
    await env.sql`delete from public.memory_jobs where owner_id = ${t}`; // the session's consolidation is another test's
    env.fake.onChat(
      ENRICH_MARK,
      reply.json({
        // A model's summary with a secret and a right-to-left override: stored without either.
        summaries: [{
          entity: 0,
          summary: `src/app.ts is the entry module\u202e whose build failed (token ${GITHUB_TOKEN}).`,
        }, {
          entity: 5,
          summary: "no such entity",
        }],
      }),
    );
    await queue(env, t, "enrich", "2026-11-20");
    const report = await drainAll(env.deps, t);
    assert.deepEqual([report.done, report.dead], [1, 0]);
    const prompt = String(env.fake.chatRequests()[0]!.body.messages.at(-1).content);
    assert.match(prompt, /\[0\] src\/app\.ts \(file\)/);
    assert.ok(!prompt.includes("pnpm install (command)"), "an entity with one mention is not enriched");
    const rows = await env.sql<{ canonical_name: string; summary: string | null; embedding_model: string | null }[]>`
      select canonical_name, summary, embedding_model from public.memory_entities where owner_id = ${t} order by canonical_name`;
    assert.deepEqual(rows.map((r) => [r.canonical_name, r.summary, r.embedding_model]), [
      ["pnpm install", null, null],
      [
        "src/app.ts",
        "src/app.ts is the entry module whose build failed (token [REDACTED:github_token]).",
        EMBEDDING_MODEL,
      ],
    ]);
  } finally {
    await env.close();
  }
});

Deno.test({
  name: "enrichment: the model is shown what holds now of an entity, not a memory corrected or forgotten since",
  ...opts,
}, async () => {
  const env = await writeEnv();
  try {
    const t = newTenant();
    const api = memoryApi(env.sql);
    const old = await remembered(env, t, "src/deploy.ts runs the release with pnpm 7");
    const fixed = await api("POST", `/memory/${old}/correct`, {
      as: t,
      body: { content: "src/deploy.ts runs the release with pnpm 9" },
    });
    assert.equal(fixed.status, 201);
    const gone = await remembered(env, t, "src/deploy.ts pushes to the staging bucket");
    assert.equal((await api("POST", `/memory/${gone}/forget`, { as: t, body: {} })).status, 200);
    await remembered(env, t, "src/deploy.ts is run by CI on tags");
    await env.sql`delete from public.memory_jobs where owner_id = ${t}`;
    env.fake.onChat(ENRICH_MARK, reply.json({ summaries: [] }));

    await queue(env, t, "enrich", "2026-11-20");
    assert.equal((await drainAll(env.deps, t)).done, 1);
    const prompt = enrichPrompt(env);
    assert.match(prompt, /\[0\] src\/deploy\.ts \(file\)/);
    assert.match(prompt, /pnpm 9/);
    assert.match(prompt, /CI on tags/);
    assert.ok(!prompt.includes("pnpm 7"), "the corrected text is not shown as the entity's");
    assert.ok(!prompt.includes("staging bucket"), "nor is a forgotten memory");
  } finally {
    await env.close();
  }
});

Deno.test({
  name: "enrichment: entities no live memory names any more (purged, forgotten) take none of the night's places",
  ...opts,
}, async () => {
  const env = await writeEnv();
  try {
    const t = newTenant();
    for (const content of ["src/live.ts starts the server", "src/live.ts reads PORT", "src/live.ts logs to stdout"]) {
      await remembered(env, t, content);
    }
    // Old conversations' files, named hundreds of times by messages purged since: counts only grow.
    await env.sql`
      insert into public.memory_entities (owner_id, canonical_name, entity_type, mention_count)
      select ${t}, 'old/file' || g || '.ts', 'file', 500 from generate_series(1, 30) g`;
    await env.sql`delete from public.memory_jobs where owner_id = ${t}`;
    env.fake.onChat(ENRICH_MARK, reply.json({ summaries: [] }));

    await queue(env, t, "enrich", "2026-11-20");
    assert.equal((await drainAll(env.deps, t)).done, 1);
    const prompt = enrichPrompt(env);
    assert.match(prompt, /\[0\] src\/live\.ts \(file\)/, "the entity live memories name is offered");
    assert.ok(!prompt.includes("old/file"), "none that nothing live names");
  } finally {
    await env.close();
  }
});

Deno.test({
  name: "enrichment: an entity the model leaves out is not offered again every night, only after ENRICH_RETRY_DAYS",
  ...opts,
}, async () => {
  const env = await writeEnv();
  try {
    const t = newTenant();
    await session(env, t);
    await env.sql`delete from public.memory_jobs where owner_id = ${t}`;
    env.fake.onChat(ENRICH_MARK, reply.json({ summaries: [] }));
    const offered = () =>
      env.fake.chatRequests().filter((r) => String(r.body.messages.at(-1).content).includes("src/app.ts")).length;

    await queue(env, t, "enrich", "2026-11-20");
    assert.equal((await drainAll(env.deps, t)).done, 1);
    assert.equal(offered(), 1);
    await queue(env, t, "enrich", "2026-11-21");
    assert.equal((await drainAll(env.deps, t)).done, 1);
    assert.equal(offered(), 1, "left out last night: not offered again the next night");

    await env.sql`update public.memory_entities set enrich_attempted_at = now() - make_interval(days => ${
      ENRICH_RETRY_DAYS + 1
    })
                   where owner_id = ${t}`;
    await queue(env, t, "enrich", "2026-11-29");
    assert.equal((await drainAll(env.deps, t)).done, 1);
    assert.equal(offered(), 2, "offered again once the attempt is old");
  } finally {
    await env.close();
  }
});

Deno.test({
  name: "causal inference (fake LLM): at most 50 pairs a night, causal edges at confidence 0.7, the next night goes on",
  ...opts,
}, async () => {
  const env = await writeEnv();
  try {
    const t = newTenant();
    const ids = await session(env, t, 60);
    await env.sql`delete from public.memory_jobs where owner_id = ${t}`;
    env.fake.onChat(CAUSAL_MARK, [
      reply.json({
        causal: [{ pair: 2, reason: "the build failure led to the fix" }, {
          pair: 77,
          reason: "a pair it was never shown",
        }],
      }),
      reply.json({ causal: [] }),
    ]);
    await queue(env, t, "causal", "2026-11-20");
    assert.equal((await drainAll(env.deps, t)).done, 1);
    const first = String(env.fake.chatRequests()[0]!.body.messages.at(-1).content);
    assert.ok(first.includes("[49]") && !first.includes("[50]"), "one call of at most 50 pairs");
    assert.match(
      first,
      /\[2\]\n {2}A: \[user\] step 2: src\/app\.ts fails to build\n {2}B: \[assistant\] fixed it with `pnpm install`/,
    );
    const edges = await env.sql<
      { from_id: string; to_id: string; confidence: number; evidence: { reason: string }[] }[]
    >`
      select from_id, to_id, confidence, evidence from public.memory_relations where owner_id = ${t} and relation_type = 'causal'`;
    assert.deepEqual(
      edges.map((e) => [e.from_id, e.to_id, Math.round(e.confidence * 10) / 10, e.evidence[0]!.reason]),
      [[ids[2], ids[3], 0.7, "the build failure led to the fix"]],
    );
    const [s1] = await env.sql`select causal_checked_seq from public.memory_sessions where owner_id = ${t}`;
    assert.equal(s1!.causal_checked_seq, 50);

    await queue(env, t, "causal", "2026-11-21");
    assert.equal((await drainAll(env.deps, t)).done, 1);
    const second = String(env.fake.chatRequests()[1]!.body.messages.at(-1).content);
    assert.ok(second.includes("[8]") && !second.includes("[9]"), "the next night: the 9 pairs left");
    const [s2] = await env.sql`select causal_checked_seq from public.memory_sessions where owner_id = ${t}`;
    assert.equal(s2!.causal_checked_seq, 59);
  } finally {
    await env.close();
  }
});

Deno.test({
  name:
    "causal inference: a session with a gap (a forgotten episode) moves on, so a newer session is checked the next night",
  ...opts,
}, async () => {
  const env = await writeEnv();
  const limits = await overrideSettings(env.sql, { graph_causal_pairs_per_night: 1 });
  try {
    const t = newTenant();
    const api = memoryApi(env.sql);
    const send = async (session: string, contents: string[]) => {
      const r = await api("POST", "/memory/episodes", {
        as: t,
        body: { session_id: session, messages: contents.map((content) => ({ role: "user", content })) },
      });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      assert.equal((await api("POST", `/memory/sessions/${session}/end`, { as: t })).status, 202);
      return r.body.episodes.map((e: { id: string }) => e.id) as string[];
    };
    const gapped = await send("gapped", ["older one", "older two (forgotten)", "older three"]);
    assert.equal((await api("POST", `/memory/${gapped[1]}/forget`, { as: t, body: {} })).status, 200);
    await send("newer", ["newer one", "newer two"]);
    await env.sql`delete from public.memory_jobs where owner_id = ${t}`;
    env.fake.onChat(CAUSAL_MARK, reply.json({ causal: [] }));

    await queue(env, t, "causal", "2026-11-20");
    assert.equal((await drainAll(env.deps, t)).done, 1);
    await queue(env, t, "causal", "2026-11-21");
    assert.equal((await drainAll(env.deps, t)).done, 1);
    const prompts = env.fake.chatRequests().map((r) => String(r.body.messages.at(-1).content));
    assert.equal(prompts.length, 1, "the gapped session had no pair to show");
    assert.match(prompts[0]!, /A: \[user\] newer one\n {2}B: \[user\] newer two/);
    const sessions = await env.sql<{ session_id: string; causal_checked_seq: number }[]>`
      select session_id, causal_checked_seq from public.memory_sessions where owner_id = ${t} order by session_id`;
    assert.deepEqual(sessions.map((s) => [s.session_id, s.causal_checked_seq]), [["gapped", 2], ["newer", 1]]);
  } finally {
    await limits.restore();
    await env.close();
  }
});

Deno.test(
  { name: "graph maintenance without an LLM: both jobs complete as skipped and change nothing", ...opts },
  async () => {
    const env = await writeEnv({ withLlm: false });
    try {
      const t = newTenant();
      await session(env, t);
      await env.sql`delete from public.memory_jobs where owner_id = ${t}`;
      await queue(env, t, "enrich", "2026-11-20");
      await queue(env, t, "causal", "2026-11-20");
      const report = await drainAll(env.deps, t);
      assert.deepEqual([report.done, report.dead, report.retried], [2, 0, 0]);
      assert.ok(
        (await jobsOf(env.sql, t)).every((j) => (j.result as { skipped?: string }).skipped === "no LLM configured"),
      );
      assert.equal(env.fake.chatRequests().length, 0);
      const [state] = await env.sql`
      select (select count(*)::int from public.memory_entities where owner_id = ${t} and summary is not null) as summaries,
             (select count(*)::int from public.memory_relations where owner_id = ${t} and relation_type = 'causal') as causal,
             (select causal_checked_seq from public.memory_sessions where owner_id = ${t}) as checked`;
      assert.deepEqual({ ...state }, { summaries: 0, causal: 0, checked: 0 }, "the work waits for a night with an LLM");
    } finally {
      await env.close();
    }
  },
);
