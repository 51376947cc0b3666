// GET memory/entities/{id}: a profile reads the links and memories it shows, not every link of the
// entity. Its facts (newest first) and timeline (the latest 50 episodes) were ordered and filtered
// by columns of the memory, so every link was read and its memory looked up before the sort kept 50:
// 55 ms at 12,800 mentions. Counted as the rows of public.memory_entity_links and
// public.devai_memories the profile's transaction fetched, for an entity named by 3,000 episodes
// and 400 facts (docs/graph.md#entities, migration 20261128910000).
import assert from "node:assert/strict";
import { withTenant } from "../supabase/functions/_shared/db.ts";
import { entityProfile, PROFILE_ROWS } from "../supabase/functions/_shared/memories/entities.ts";
import { newTenant, testSql } from "./support/seed.ts";

const sql = testSql();
const tenant = newTenant();
const EPISODES = 3000;
const FACTS = 400;

async function seed(): Promise<string> {
  const [e] = await sql<{ id: string }[]>`
    insert into public.memory_entities (owner_id, canonical_name, entity_type, mention_count)
    values (${tenant}, 'TypeError', 'error', ${EPISODES + FACTS}) returning id`;
  // Episodes in batches of 7 sent at one instant (seq orders them), a minute apart; facts an hour
  // apart, each also valid from the instant of a batch, so a fact and an episode share instants.
  await sql`
    insert into public.devai_memories (owner_id, content, memory_type, namespace, source, session_id, valid_from, metadata)
    select ${tenant}, 'message ' || g || ' about a TypeError', 'episodic', 'devai/project/demo', 'conversation', 's1',
           timestamptz '2026-01-01' + (g / 7) * interval '1 minute', jsonb_build_object('seq', g, 'role', 'user')
      from generate_series(0, ${EPISODES - 1}) g`;
  await sql`
    insert into public.devai_memories (owner_id, content, memory_type, namespace, valid_from)
    select ${tenant}, 'fact ' || g || ': a TypeError', 'semantic', 'devai/project/demo',
           timestamptz '2026-01-01' + g * interval '1 hour'
      from generate_series(1, ${FACTS}) g`;
  await sql`
    insert into public.memory_entity_links (owner_id, memory_id, entity_id, mention)
    select ${tenant}, m.id, ${e!.id}, 'TypeError' from public.devai_memories m where m.owner_id = ${tenant}`;
  await sql`analyze public.memory_entity_links`;
  await sql`analyze public.devai_memories`;
  return e!.id;
}

/** The profile and the rows its transaction fetched from the links and the memories. */
async function profile(id: string) {
  return await withTenant(sql, { tenantId: tenant, actor: "test" }, async (tx) => {
    const fetched = () =>
      tx<{ n: string }[]>`
        select coalesce(sum(idx_tup_fetch + seq_tup_read), 0) as n from pg_stat_xact_user_tables
         where relid in ('public.memory_entity_links'::regclass, 'public.devai_memories'::regclass)`
        .then(([r]) => Number(r?.n ?? 0));
    const before = await fetched();
    const p = await entityProfile(tx, id);
    return { p: p!, fetched: (await fetched()) - before };
  });
}

Deno.test("entity profile: reads the facts and episodes it shows, not every mention", async () => {
  const id = await seed();
  const { p, fetched } = await profile(id);

  assert.deepEqual(
    p.facts.map((f) => f.content),
    Array.from({ length: PROFILE_ROWS }, (_, i) => `fact ${FACTS - i}: a TypeError`),
    "the newest facts first",
  );
  assert.deepEqual(
    p.timeline.map((t) => t.seq),
    Array.from({ length: PROFILE_ROWS }, (_, i) => EPISODES - PROFILE_ROWS + i),
    "the latest episodes, in order (seq within an instant)",
  );
  // 50 facts and 50 episodes: each link and its memory, and an index probe may fetch a row twice.
  assert.ok(fetched <= 4 * 2 * PROFILE_ROWS, `a profile fetched ${fetched} rows for ${EPISODES + FACTS} mentions`);
});

Deno.test("entity profile: a fact forgotten or superseded, an episode forgotten (soft-deleted), leave it; a restored fact returns", async () => {
  const [entity] = await sql<{ id: string }[]>`select id from public.memory_entities where owner_id = ${tenant}`;
  const id = entity!.id;
  const newest = (n: number) =>
    sql`
    select id from public.devai_memories where owner_id = ${tenant} and source is distinct from 'conversation'
     order by valid_from desc limit ${n}`;
  const [f1, f2] = await newest(2);
  await sql`update public.devai_memories set state = 'soft_deleted', purge_at = now() + interval '30 days' where id = ${
    f1!.id
  }`;
  await sql`update public.devai_memories set is_valid = false where id = ${f2!.id}`;
  await sql`
    update public.devai_memories set state = 'soft_deleted', purge_at = now() + interval '30 days'
     where owner_id = ${tenant} and source = 'conversation' and (metadata ->> 'seq')::int = ${EPISODES - 1}`;
  const { p, fetched } = await profile(id);
  assert.deepEqual(p.facts.slice(0, 2).map((f) => f.content), [
    `fact ${FACTS - 2}: a TypeError`,
    `fact ${FACTS - 3}: a TypeError`,
  ]);
  assert.equal(p.facts.length, PROFILE_ROWS);
  assert.equal(p.timeline.at(-1)!.seq, EPISODES - 2, "the forgotten episode is gone from the timeline");
  assert.equal(p.timeline.length, PROFILE_ROWS);
  assert.ok(fetched <= 4 * 2 * PROFILE_ROWS, `fetched ${fetched} rows`);

  await sql`update public.devai_memories set state = 'active', purge_at = null where id = ${f1!.id}`;
  const again = await profile(id);
  assert.equal(again.p.facts[0]!.content, `fact ${FACTS}: a TypeError`, "restored, it is the newest again");
});

Deno.test("entity profile: cleanup", async () => {
  await sql`delete from public.memory_entities where owner_id = ${tenant}`;
  await sql`delete from public.devai_memories where owner_id = ${tenant}`;
  await sql.end();
});
