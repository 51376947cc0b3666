// POST context: the memories citing the files (and directories) a turn is about are found through
// the live facts' links to the file entities, not through every message that ever named a file.
// memory_search.context_lookups read one link and one memory per mention: 3,000 episodes naming
// src/app.ts made each context request read them all to find the two facts that cite it, or, on
// other statistics, read every fact of the scope (14,161 rows fetched here). Counted as the rows
// of public.memory_entity_links and public.devai_memories the lookup's transaction fetched
// (docs/context.md, migration 20261203500200).
import assert from "node:assert/strict";
import { withTenant } from "../supabase/functions/_shared/db.ts";
import { newTenant, testSql } from "./support/seed.ts";

const sql = testSql();
const tenant = newTenant();
const EPISODES = 3000;

async function seed(): Promise<string[]> {
  const [e] = await sql<{ id: string }[]>`
    insert into public.memory_entities (owner_id, canonical_name, entity_type, mention_count)
    values (${tenant}, 'src/app.ts', 'file', ${EPISODES + 3}) returning id`;
  await sql`
    insert into public.devai_memories (owner_id, content, memory_type, namespace, source, session_id, valid_from, metadata)
    select ${tenant}, 'turn ' || g || ': src/app.ts fails again', 'episodic', 'devai/project/demo/episodes', 'conversation',
           's1', timestamptz '2026-01-01' + g * interval '1 minute', jsonb_build_object('seq', g, 'role', 'user')
      from generate_series(0, ${EPISODES - 1}) g`;
  // As many facts about other things in the scope: no lookup by the file reads them either.
  await sql`
    insert into public.devai_memories (owner_id, content, memory_type, namespace, valid_from)
    select ${tenant}, 'fact ' || g || ' about the billing service', 'semantic', 'devai/project/demo',
           timestamptz '2026-01-01' + g * interval '1 minute'
      from generate_series(1, ${EPISODES}) g`;
  const facts = await sql<{ id: string }[]>`
    insert into public.devai_memories (owner_id, content, memory_type, namespace, valid_from)
    values (${tenant}, 'src/app.ts is the entry module', 'semantic', 'devai/project/demo', '2026-02-01'),
           (${tenant}, 'src/app.ts reads the config once', 'semantic', 'devai/project/demo', '2026-02-02'),
           (${tenant}, 'src/app.ts used to start the worker', 'semantic', 'devai/project/demo', '2026-02-03')
    returning id`;
  await sql`
    insert into public.memory_entity_links (owner_id, memory_id, entity_id, mention)
    select ${tenant}, m.id, ${e!.id}, 'src/app.ts' from public.devai_memories m
     where m.owner_id = ${tenant} and m.content like '%src/app.ts%'`;
  // One of the three is corrected since: no longer a fact the context shows.
  await sql`update public.devai_memories set is_valid = false where id = ${facts[2]!.id}`;
  await sql`analyze public.memory_entity_links`;
  await sql`analyze public.devai_memories`;
  return facts.slice(0, 2).map((f) => f.id).sort();
}

/** The lookup of a file or a directory, and the rows its transaction fetched from the links and the memories. */
async function lookup(files: string[] | null, modules: string[] | null) {
  return await withTenant(sql, { tenantId: tenant, actor: "test" }, async (tx) => {
    const fetched = () =>
      tx<{ n: string }[]>`
        select coalesce(sum(idx_tup_fetch + seq_tup_read), 0) as n from pg_stat_xact_user_tables
         where relid in ('public.memory_entity_links'::regclass, 'public.devai_memories'::regclass)`
        .then(([r]) => Number(r?.n ?? 0));
    const before = await fetched();
    const [r] = await tx<{ ids: string[]; kinds: string[] }[]>`
      select ids, kinds from memory_search.context_lookups(${tenant}, ${["devai/project/demo/"]}, ${files}::text[],
                                                            ${modules}::text[], null, null, null, 30)`;
    return { ids: [...r!.ids].sort(), kinds: r!.kinds, fetched: (await fetched()) - before };
  });
}

Deno.test("context lookups: a file's and a directory's facts are read, not every message that named the file", async () => {
  const facts = await seed();
  const byFile = await lookup(["src/app.ts"], null);
  assert.deepEqual(byFile.ids, facts, "the valid facts citing the file");
  assert.deepEqual(byFile.kinds, ["file", "file"]);
  assert.ok(byFile.fetched <= 20, `a file's lookup fetched ${byFile.fetched} rows for ${EPISODES + 3} mentions`);

  const byDir = await lookup(null, ["src"]);
  assert.deepEqual(byDir.ids, facts, "the directory's files' facts");
  assert.ok(byDir.fetched <= 20, `a directory's lookup fetched ${byDir.fetched} rows for ${EPISODES + 3} mentions`);
});

Deno.test("context lookups: cleanup", async () => {
  await sql`delete from public.memory_entities where owner_id = ${tenant}`;
  await sql`delete from public.devai_memories where owner_id = ${tenant}`;
  await sql.end();
});
