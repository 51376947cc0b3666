// Session consolidation end to end (real database, fake LLM through the real openai SDK, scripted
// embeddings): a session's episodes become facts with derived_from edges to the episodes they came
// from and the entities the model named; dedup supersedes an outdated fact and closes its
// validity; one run per session however often it is ended; without an LLM the rules alone run.
// Then explain shows the provenance.
import assert from "node:assert/strict";
import { type ChatRequestBody, hashVector, reply, vectorWithSimilarity } from "./fake_openai.ts";
import { MAX_EPISODES_PER_SESSION } from "../supabase/functions/_shared/consolidation.ts";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, seedMemory } from "./support/seed.ts";
import { drainAll, EMBEDDING_MODEL, jobsOf, type WriteEnv, writeEnv } from "./write_helpers.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const CONSOLIDATION_MARK = "The conversation is given as numbered messages";
const DEDUP_MARK = "NEW candidate";
const OLD_FACT = "The shop project deploys with npm run deploy.";
const NEW_FACT = "The shop project deploys with pnpm run release.";
const base = hashVector("shop deploy");

function consolidationReply(stored: unknown[]) {
  return reply.json({ stored, filtered: [] });
}

/** A session of three messages in project shop, ended; returns the episode ids in order. */
async function endedSession(env: WriteEnv, tenant: string, session: string): Promise<string[]> {
  const api = memoryApi(env.sql);
  const r = await api("POST", "/memory/episodes", {
    as: tenant,
    body: {
      session_id: session,
      project: "shop",
      thread_id: `thread-${session}`,
      messages: [
        { role: "user", content: "we switched deploys to pnpm run release last week" },
        { role: "assistant", content: "Noted, I updated .github/workflows/deploy.yml to call pnpm run release" },
        { role: "user", content: "also remember that @lena owns the release process" },
      ],
    },
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  assert.equal((await api("POST", `/memory/sessions/${session}/end`, { as: tenant })).status, 202);
  return r.body.episodes.map((e: { id: string }) => e.id);
}

async function derivedFrom(env: WriteEnv, factId: string) {
  return await env.sql<{ to_id: string; confidence: number }[]>`
    select to_id, confidence from public.memory_relations where from_id = ${factId} and relation_type = 'derived_from' order by to_id`;
}

/** Scripts the model: the consolidation proposes the new deploy fact (citing #0 and #1, and a number it was never shown); dedup says UPDATE. */
function scriptModel(env: WriteEnv) {
  env.fake.setEmbedding(NEW_FACT, vectorWithSimilarity(base, 0.9, "new"));
  env.fake.setEmbedding("@lena owns the release process.", hashVector("lena"));
  env.fake.onChat(
    CONSOLIDATION_MARK,
    consolidationReply([{
      content: NEW_FACT,
      type: "semantic",
      namespace: "devai/project/shop",
      source: "discovery",
      priority: "high",
      importance: 4,
      sources: [0, 1, 99],
      entities: [{ name: "pnpm", type: "tool" }, { name: "Release process", type: "concept" }],
    }]),
  );
  env.fake.onChat(
    DEDUP_MARK,
    reply.json({ action: "UPDATE", target: 0, content: NEW_FACT, reason: "the deploy command changed" }),
  );
}

/** A tenant with the outdated deploy fact, a consolidated session, and the fact that replaced it. */
async function consolidatedOverOldFact(env: WriteEnv) {
  const t = newTenant();
  const old = await seedMemory(env.sql, t, {
    content: OLD_FACT,
    namespace: "devai/project/shop",
    embedding: base,
    embedding_model: EMBEDDING_MODEL,
  });
  scriptModel(env);
  const episodes = await endedSession(env, t, "s1");
  const report = await drainAll(env.deps, t);
  const [fresh] = await env.sql<{ id: string; valid_from: Date; session_id: string }[]>`
    select id, valid_from, session_id from public.devai_memories where owner_id = ${t} and content = ${NEW_FACT}`;
  return { t, old, episodes, report, fresh };
}

Deno.test({
  name:
    "consolidation (fake LLM): facts derived from the episodes they came from, entities linked, the superseded fact's validity closed",
  ...opts,
}, async () => {
  const env = await writeEnv();
  try {
    const { t, old, episodes, report, fresh } = await consolidatedOverOldFact(env);
    assert.deepEqual([report.done, report.dead], [1, 0], JSON.stringify(report.jobs));

    const prompt = env.fake.chatRequests().find((r) => JSON.stringify(r.body).includes(CONSOLIDATION_MARK))!
      .body as ChatRequestBody;
    assert.match(
      String(prompt.messages.at(-1)!.content),
      /\[#0\] \[user\] we switched deploys to pnpm run release last week/,
    );
    assert.match(
      String(prompt.messages.at(-1)!.content),
      /\[#2\] \[user\] also remember that @lena owns the release process/,
    );

    assert.ok(fresh, "the model's fact was stored (dedup UPDATE)");
    assert.equal(fresh.session_id, "s1");
    assert.deepEqual(
      (await derivedFrom(env, fresh.id)).map((e) => [e.to_id, Math.round(e.confidence * 10) / 10]),
      [[episodes[0]!, 0.8], [episodes[1]!, 0.8]].sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
      "derived_from the two cited episodes; the number it was never shown is dropped",
    );

    const [closed] = await env.sql<{ is_valid: boolean; superseded_by: string; valid_until: Date }[]>`
      select is_valid, superseded_by, valid_until from public.devai_memories where id = ${old.id}`;
    assert.equal(closed!.is_valid, false);
    assert.equal(closed!.superseded_by, fresh.id);
    assert.equal(
      closed!.valid_until.getTime(),
      fresh.valid_from.getTime(),
      "the old fact stopped holding when the new one started",
    );

    const [stated] = await env.sql<{ id: string; source: string }[]>`
      select id, source from public.devai_memories where owner_id = ${t} and content = '@lena owns the release process.'`;
    assert.equal(stated?.source, "user_stated", 'the rules found the user\'s own "remember"');
    assert.deepEqual((await derivedFrom(env, stated!.id)).map((e) => [e.to_id, e.confidence]), [[episodes[2]!, 1]]);

    const entities = await env.sql<{ canonical_name: string; source: string }[]>`
      select e.canonical_name, l.source from public.memory_entity_links l join public.memory_entities e on e.id = l.entity_id
       where l.memory_id = ${fresh.id}`;
    assert.deepEqual(entities.map((e) => `${e.canonical_name} (${e.source})`).sort(), [
      "Release process (llm)",
      "pnpm (llm)",
      "pnpm run release (rules)",
    ]);

    const [session] = await env
      .sql`select consolidated_at, consolidation from public.memory_sessions where owner_id = ${t} and session_id = 's1'`;
    assert.ok(session!.consolidated_at);
    assert.equal(session!.consolidation.mode, "llm+rules");
    assert.deepEqual({ ...session!.consolidation.counts }, {
      ADD: 1,
      UPDATE: 1,
      DELETE: 0,
      NOOP: 0,
      SKIPPED: 0,
      PROPOSED: 0,
    });
  } finally {
    await env.close();
  }
});

Deno.test(
  { name: "consolidation: one run per session, even when it is ended twice and its thread moves on", ...opts },
  async () => {
    const env = await writeEnv();
    try {
      const t = newTenant();
      scriptModel(env);
      await endedSession(env, t, "s1");
      const api = memoryApi(env.sql);
      assert.equal((await api("POST", "/memory/sessions/s1/end", { as: t })).body.deduplicated, true);
      await api("POST", "/memory/episodes", {
        as: t,
        body: {
          session_id: "s2",
          project: "shop",
          thread_id: "thread-s1",
          messages: [{ role: "user", content: "next day" }],
        },
      });
      await drainAll(env.deps, t);
      await drainAll(env.deps, t);
      const consolidations = env.fake.chatRequests().filter((r) => JSON.stringify(r.body).includes(CONSOLIDATION_MARK));
      assert.equal(consolidations.length, 1, "the model read the session once");
      assert.deepEqual(
        (await jobsOf(env.sql, t)).filter((j) => j.kind === "consolidate").map((j) => [j.idempotency_key, j.status]),
        [["consolidate:s1", "done"]],
      );
      const [count] = await env.sql<
        { n: number }[]
      >`select count(*)::int as n from public.devai_memories where owner_id = ${t} and content = ${NEW_FACT}`;
      assert.equal(count!.n, 1);
    } finally {
      await env.close();
    }
  },
);

Deno.test({
  name: "consolidation without an LLM: the rules alone run, the model's part is skipped, the job is done",
  ...opts,
}, async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const t = newTenant();
    const episodes = await endedSession(env, t, "s1");
    const report = await drainAll(env.deps, t);
    assert.deepEqual([report.done, report.dead, report.retried], [1, 0, 0]);
    assert.equal(env.fake.chatRequests().length, 0);
    const facts = await env.sql<{ id: string; content: string }[]>`
      select id, content from public.devai_memories where owner_id = ${t} and source is distinct from 'conversation'`;
    assert.deepEqual(facts.map((f) => f.content), ["@lena owns the release process."]);
    assert.deepEqual((await derivedFrom(env, facts[0]!.id)).map((e) => e.to_id), [episodes[2]!]);
    const [job] = (await jobsOf(env.sql, t)).filter((j) => j.kind === "consolidate");
    assert.equal((job!.result as { llm: string }).llm, "skipped: no LLM configured");
  } finally {
    await env.close();
  }
});

Deno.test({
  name:
    "consolidation: a session past MAX_EPISODES_PER_SESSION is read from its first episodes and the result says how many were left out",
  ...opts,
}, async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const t = newTenant();
    const api = memoryApi(env.sql);
    const r = await api("POST", "/memory/episodes", {
      as: t,
      body: { session_id: "long", messages: [{ role: "user", content: "start" }] },
    });
    assert.equal(r.status, 201);
    // The rest of a runaway session, written directly: one past the cap.
    await env.sql`
      insert into public.devai_memories (owner_id, content, memory_type, namespace, priority, source, importance, session_id, metadata)
      select m.owner_id, 'loop output ' || g, m.memory_type, m.namespace, m.priority, m.source, m.importance, m.session_id,
             jsonb_build_object('role', 'assistant', 'digest', md5(g::text), 'seq', g)
        from public.devai_memories m, generate_series(1, ${MAX_EPISODES_PER_SESSION}) g
       where m.id = ${r.body.episodes[0].id}`;
    await env.sql`update public.memory_sessions set episode_count = ${
      MAX_EPISODES_PER_SESSION + 1
    } where owner_id = ${t}`;
    assert.equal((await api("POST", "/memory/sessions/long/end", { as: t })).status, 202);
    assert.equal((await drainAll(env.deps, t)).done, 1);
    const [job] = (await jobsOf(env.sql, t)).filter((j) => j.kind === "consolidate");
    const result = job!.result as { episodes: number; episodes_left_out?: number };
    assert.deepEqual([result.episodes, result.episodes_left_out], [MAX_EPISODES_PER_SESSION, 1]);
  } finally {
    await env.close();
  }
});

Deno.test({
  name:
    "consolidation: a model whose output stays invalid does not cost the rules' facts; the job is done, the failure recorded",
  ...opts,
}, async () => {
  const env = await writeEnv();
  try {
    const t = newTenant();
    env.fake.onChat(CONSOLIDATION_MARK, [reply.text("not json"), reply.text("still { not json")]);
    const episodes = await endedSession(env, t, "s1");
    const report = await drainAll(env.deps, t);
    assert.deepEqual([report.done, report.dead, report.retried], [1, 0, 0], JSON.stringify(report.jobs));
    const facts = await env.sql<{ id: string; content: string }[]>`
      select id, content from public.devai_memories where owner_id = ${t} and source is distinct from 'conversation'`;
    assert.deepEqual(facts.map((f) => f.content), ["@lena owns the release process."]);
    assert.deepEqual((await derivedFrom(env, facts[0]!.id)).map((e) => e.to_id), [episodes[2]!]);
    const [job] = (await jobsOf(env.sql, t)).filter((j) => j.kind === "consolidate");
    assert.match((job!.result as { llm: string }).llm, /^failed: LlmOutputError/);
  } finally {
    await env.close();
  }
});

Deno.test({
  name:
    "explain shows a consolidated fact's provenance: source episodes, supersede chain with validity, entities, typed edges",
  ...opts,
}, async () => {
  const env = await writeEnv();
  try {
    const { t, old, episodes, fresh } = await consolidatedOverOldFact(env);
    const api = memoryApi(env.sql);
    const r = await api("GET", `/memory/${fresh!.id}/explain`, { as: t });
    assert.equal(r.status, 200);
    const x = r.body;
    assert.deepEqual(x.source.episodes.map((e: { id: string; role: string; seq: number }) => [e.id, e.role, e.seq]), [[
      episodes[0],
      "user",
      0,
    ], [episodes[1], "assistant", 1]]);
    assert.deepEqual(x.supersedes.map((l: { memory: { id: string } }) => l.memory.id), [old.id]);
    assert.ok(x.supersedes[0].memory.valid_until, "the replaced fact's validity interval is closed");
    assert.equal(x.memory.valid_until, null);
    assert.deepEqual(x.entities.map((e: { canonical_name: string }) => e.canonical_name).sort(), [
      "Release process",
      "pnpm",
      "pnpm run release",
    ]);
    const types = new Set(x.relations.map((rel: { relation_type: string }) => rel.relation_type));
    assert.ok(types.has("derived_from") && types.has("supersedes"), JSON.stringify([...types]));
    const derived = x.relations.find((rel: { relation_type: string }) => rel.relation_type === "derived_from");
    assert.equal(Math.round(derived.confidence * 10) / 10, 0.8);
    assert.ok(derived.valid_from && derived.valid_until === null);

    const episode = await api("GET", `/memory/${episodes[0]}/explain`, { as: t });
    assert.equal(episode.body.decay.reason, "episode", "an episode never decays");
    assert.ok(
      episode.body.relations.some((rel: { relation_type: string; direction: string }) =>
        rel.relation_type === "temporal" && rel.direction === "outgoing"
      ),
    );
  } finally {
    await env.close();
  }
});

Deno.test({
  name:
    "consolidation, the provider refusing the key (401): the job is postponed, not done by the rules alone; the model's fact is stored once the key works",
  ...opts,
}, async () => {
  const env = await writeEnv({ llm: { retry: { maxRetries: 0 } } });
  try {
    const t = newTenant();
    scriptModel(env);
    env.fake.chatOutage = reply.error(401, { message: "Incorrect API key provided" });
    await endedSession(env, t, "s1");
    const report = await drainAll(env.deps, t);
    assert.deepEqual([report.done, report.dead, report.postponed], [0, 0, 1], JSON.stringify(report.jobs));
    const [job] = await jobsOf(env.sql, t, ["consolidate"]);
    assert.equal(job!.status, "queued");
    assert.match(job!.last_error ?? "", /^provider unavailable: .*HTTP 401/);

    env.fake.chatOutage = undefined;
    await env.sql`update public.memory_jobs set run_after = now() where owner_id = ${t} and status = 'queued'`;
    assert.equal((await drainAll(env.deps, t)).done, 1);
    const [fresh] = await env.sql`select id from public.devai_memories where owner_id = ${t} and content = ${NEW_FACT}`;
    assert.ok(fresh, "the model's fact is stored");
    const [session] = await env
      .sql`select consolidation from public.memory_sessions where owner_id = ${t} and session_id = 's1'`;
    assert.equal(session!.consolidation.mode, "llm+rules");
  } finally {
    await env.close();
  }
});

Deno.test({
  name:
    "consolidation, a 500 on the session's request while the provider answers others: counted as before, the provider probed once for it",
  ...opts,
}, async () => {
  const env = await writeEnv({ llm: { retry: { maxRetries: 0 } } });
  try {
    const t = newTenant();
    env.fake.onChat(CONSOLIDATION_MARK, reply.error(500));
    await endedSession(env, t, "s1");
    const report = await drainAll(env.deps, t, "test-worker", 1, ["consolidate"]);
    assert.deepEqual([report.retried, report.postponed], [1, 0], JSON.stringify(report.jobs));
    assert.equal(env.fake.probeRequests().length, 1, "one probe tells the provider answers");
  } finally {
    await env.close();
  }
});
