// GET memory/entities?q=: a lookup reads the entities q may match, not the tenant's. "Inside the
// name" and the summary's words were in no index, so every lookup read every entity of the tenant
// (0.69 s at 50,000). Counted as the rows of public.memory_entities the lookup's transaction
// fetched, for a tenant of 3,000 entities among 30 tenants of 300 whose names and summaries use
// the same words (docs/graph.md#entities).
import assert from "node:assert/strict";
import { listEntitiesCounted } from "./support/entity-reads.ts";
import { newTenant, testSql } from "./support/seed.ts";

const sql = testSql();
const big = newTenant();
const others = "e5c00000-0000-4000-8000-";

async function seed(): Promise<void> {
  await sql`
    insert into public.memory_entities (owner_id, canonical_name, entity_type, summary, mention_count)
    select ${big}::uuid, 'module' || g, case when g % 2 = 0 then 'file' else 'package' end,
           case when g % 100 = 0 then 'Handles payments and refunds for checkout number ' || g end, g
      from generate_series(1, 3000) g`;
  await sql`
    insert into public.memory_entities (owner_id, canonical_name, entity_type, summary, mention_count)
    select (${others} || lpad((g % 30)::text, 12, '0'))::uuid, 'module' || g || ' zzz', 'file',
           'Handles payments and refunds for module ' || g, 1
      from generate_series(1, 9000) g`;
  await sql`analyze public.memory_entities`;
}

/** The lookup's entities and the rows its transaction fetched from public.memory_entities. */
async function lookup(query: Record<string, string>) {
  const { entities: rows, fetched } = await listEntitiesCounted(sql, big, query);
  return { rows, fetched };
}

Deno.test("entities: q reads the entities it may match, not every entity of the tenant", async () => {
  await seed();

  const none = await lookup({ q: "zzz" });
  assert.deepEqual(none.rows, [], "another tenant's names are not this tenant's");
  assert.ok(none.fetched < 20, `q matching nothing fetched ${none.fetched} of 3,000 entities`);

  // module29 is a name; module29x and module29xx start with it (mentioned most: the greatest).
  const name = await lookup({ q: "Module-29", limit: "5" });
  assert.deepEqual(name.rows.map((r) => [r.canonical_name, r.matched]), [
    ["module29", "name"],
    ["module2999", "prefix"],
    ["module2998", "prefix"],
    ["module2997", "prefix"],
    ["module2996", "prefix"],
  ]);
  assert.ok(name.fetched < 200, `a name, its prefixes and containers fetched ${name.fetched} entities`);

  const inside = await lookup({ q: "e129", type: "package", limit: "2" });
  assert.deepEqual(inside.rows.map((r) => [r.canonical_name, r.matched]), [
    ["module1299", "contains"],
    ["module1297", "contains"],
  ]);

  const summary = await lookup({ q: "refunds checkout", limit: "3" });
  assert.deepEqual(summary.rows.map((r) => [r.canonical_name, r.matched]), [
    ["module3000", "summary"],
    ["module2900", "summary"],
    ["module2800", "summary"],
  ]);
  assert.ok(summary.fetched < 100, `30 summaries matching fetched ${summary.fetched} entities`);
});

Deno.test("entities: cleanup", async () => {
  await sql`delete from public.memory_entities where owner_id = ${big}`;
  await sql`delete from public.memory_entities where owner_id::text like ${others + "%"}`;
  await sql.end();
});
