// GET memory/{id}/explain: source.derived_from and source.episodes name the same derived_from
// edges however many newer edges of other types the fact has, and a fact re-derived by many
// sessions lists its first 50 sources (migration 20261203800200, docs/graph.md#explain).
import assert from "node:assert/strict";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, seedMemories, seedMemory, seedRelation, testSql } from "./support/seed.ts";

const sql = testSql();
const api = memoryApi(sql);
const opts = { sanitizeOps: false, sanitizeResources: false };

Deno.test({ name: "explain: derived_from lists the fact's sources behind 120 newer edges", ...opts }, async () => {
  const t = newTenant();
  const fact = await seedMemory(sql, t, {
    content: "The shop deploys with pnpm run release.",
    namespace: "devai/project/shop",
  });
  const episode = await seedMemory(sql, t, {
    content: "we deploy with pnpm run release now",
    namespace: "devai/project/shop/episodes",
    memory_type: "episodic",
    source: "conversation",
    session_id: "s1",
    metadata: { seq: 0, role: "user" },
  });
  await seedRelation(sql, t, fact.id, episode.id, 1, "derived_from");
  // then 120 memories relate to it, each edge newer than the derived_from one
  const near = await seedMemories(
    sql,
    t,
    Array.from({ length: 120 }, (_, i) => ({ content: `shop note ${i}`, namespace: "devai/project/shop" })),
  );
  for (const m of near) await seedRelation(sql, t, m.id, fact.id, 0.5);

  const r = await api("GET", `/memory/${fact.id}/explain`, { as: t });
  assert.equal(r.status, 200);
  assert.deepEqual(r.body.source.episodes.map((e: { id: string }) => e.id), [episode.id]);
  assert.deepEqual(r.body.source.derived_from, [episode.id], "derived_from names the source the episodes list");
  assert.equal(r.body.relations.length, 100, "the newest 100 relations, as before");
});

Deno.test({ name: "explain: a fact derived from 60 episodes lists its first 50 sources", ...opts }, async () => {
  const t = newTenant();
  const fact = await seedMemory(sql, t, {
    content: "The shop caches prices for an hour.",
    namespace: "devai/project/shop",
  });
  const episodes = await seedMemories(
    sql,
    t,
    Array.from({ length: 60 }, (_, i) => ({
      content: `message ${i} about the price cache`,
      namespace: "devai/project/shop/episodes",
      memory_type: "episodic" as const,
      source: "conversation",
      session_id: `s${i}`,
      metadata: { seq: 0, role: "user" },
    })),
  );
  for (const e of episodes) await seedRelation(sql, t, fact.id, e.id, 1, "derived_from");
  // A second apart, in the order made: PGlite's clock counts milliseconds, so edges made in one
  // millisecond tied and the 50th place fell to the id order.
  await sql`update public.memory_relations r
               set created_at = now() - make_interval(secs => 100 - x.ord)
              from unnest(${episodes.map((e) => e.id)}::uuid[]) with ordinality as x(id, ord)
             where r.from_id = ${fact.id} and r.to_id = x.id and r.relation_type = 'derived_from'`;
  const r = await api("GET", `/memory/${fact.id}/explain`, { as: t });
  assert.equal(r.status, 200);
  assert.equal(r.body.source.episodes.length, 50);
  assert.deepEqual(
    [...r.body.source.derived_from].sort(),
    episodes.slice(0, 50).map((e) => e.id).sort(),
    "the first 50 edges the fact got",
  );
});

Deno.test({ name: "explain provenance: close the pool", ...opts }, async () => {
  await sql.end();
});
