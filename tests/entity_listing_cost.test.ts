// GET memory/entities without q: each page of the listing by mentions (with or without type) reads
// about a page of entities, not every entity of the tenant. Without an index on mention_count a
// page read and sorted them all (50,000: 28 ms, 2,746 buffers, at every page). Counted as the rows
// of public.memory_entities the page's transaction fetched, for a tenant of 3,000 entities (most
// mentioned once: the cursor's ties are most of the listing) among 30 tenants of 300
// (docs/graph.md#entities).
import assert from "node:assert/strict";
import { listEntitiesCounted } from "./support/entity-reads.ts";
import { newTenant, testSql } from "./support/seed.ts";

const sql = testSql();
const big = newTenant();
const others = "e5d00000-0000-4000-8000-";

async function seed(): Promise<void> {
  await sql`
    insert into public.memory_entities (owner_id, canonical_name, entity_type, mention_count)
    select ${big}::uuid, 'module' || g, case when g % 3 = 0 then 'file' else 'package' end,
           case when g % 10 = 0 then g else 1 end
      from generate_series(1, 3000) g`;
  await sql`
    insert into public.memory_entities (owner_id, canonical_name, entity_type, mention_count)
    select (${others} || lpad((g % 30)::text, 12, '0'))::uuid, 'module' || g, 'file', g % 7
      from generate_series(1, 9000) g`;
  await sql`analyze public.memory_entities`;
}

/** One page of the listing and the rows its transaction fetched from public.memory_entities. */
const page = (query: Record<string, string>) => listEntitiesCounted(sql, big, query);

/** Every page of a listing: the names in listing order and the most one page fetched. */
async function walk(query: Record<string, string>) {
  const names: string[] = [];
  let most = 0;
  let cursor: string | null = null;
  do {
    const p = await page(cursor === null ? query : { ...query, cursor });
    names.push(...p.entities.map((e) => e.canonical_name));
    most = Math.max(most, p.fetched);
    cursor = p.next_cursor;
  } while (cursor !== null);
  return { names, most };
}

Deno.test("entities: each page of the listing by mentions reads about a page, not the tenant", async () => {
  await seed();
  const expected = async (type: string | null) =>
    (await sql<{ canonical_name: string }[]>`
      select canonical_name from public.memory_entities
       where owner_id = ${big} and (${type}::text is null or entity_type = ${type})
       order by mention_count desc, id`).map((r) => r.canonical_name);

  const all = await walk({ limit: "100" });
  assert.deepEqual(all.names, await expected(null), "the pages list every entity once, by mentions then id");
  assert.ok(all.most <= 3 * 101, `a page of 100 fetched up to ${all.most} of 3,000 entities`);

  const files = await walk({ type: "file", limit: "100" });
  assert.deepEqual(files.names, await expected("file"), "a typed listing's pages list its type's entities once");
  assert.ok(files.most <= 3 * 101, `a page of 100 files fetched up to ${files.most} entities`);
});

Deno.test("entities: cleanup", async () => {
  await sql`delete from public.memory_entities where owner_id = ${big}`;
  await sql`delete from public.memory_entities where owner_id::text like ${others + "%"}`;
  await sql.end();
});
