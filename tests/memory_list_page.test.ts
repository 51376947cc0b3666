// GET memory: a page reads its rows, not the tenant's. Under RLS the planner plans for the average
// tenant; among many small ones a big tenant's page was a bitmap scan of all its memories and
// a sort (memories/list-page.ts). Counted as the rows of public.devai_memories the page's
// transaction fetched, for a tenant of 3,000 memories among 300 tenants of 40.
import assert from "node:assert/strict";
import { withTenant } from "../supabase/functions/_shared/db.ts";
import { decodeCursor, encodeCursor } from "../supabase/functions/_shared/memories/cursor.ts";
import { listPage } from "../supabase/functions/_shared/memories/list-page.ts";
import { ListQuery } from "../supabase/functions/_shared/memories/schemas.ts";
import { newTenant, testSql } from "./support/seed.ts";

const sql = testSql();
const big = newTenant();
const root = "devai";

async function seed(): Promise<void> {
  // Written over time by every tenant, as a table is: each fifth row is the big tenant's, the rest
  // belong to 300 tenants of 40, so the average tenant (what the planner plans for) is smaller
  // than a page, and a tenant's rows are spread over the table's pages.
  await sql`
    insert into public.devai_memories (owner_id, content, memory_type, namespace, created_at)
    select case when g % 5 = 0 then ${big}::uuid
                else ('e1570000-0000-4000-8000-' || lpad(((g - g / 5) % 300)::text, 12, '0'))::uuid end,
           case when g % 5 = 0 then 'Page test memory number ' || (3000 - g / 5 + 1)
                else 'A small tenant''s memory number ' || g end,
           'semantic', case when g % 5 = 0 then 'devai/project/pages/' || (g % 10) else 'devai/project/small' end,
           now() - make_interval(secs => 15000 - g)
      from generate_series(1, 15000) g`;
  await sql`analyze public.devai_memories`;
}

/** The page and the rows its transaction fetched from public.devai_memories. */
async function page(query: Record<string, string>, cursor?: string) {
  const q = ListQuery.parse({ ...query, ...(cursor ? { cursor } : {}) });
  return await withTenant(sql, { tenantId: big, actor: "test" }, async (tx) => {
    const fetched = () =>
      tx<{ n: string }[]>`
        select idx_tup_fetch + seq_tup_read as n from pg_stat_xact_user_tables
         where relid = 'public.devai_memories'::regclass`.then(([r]) => Number(r?.n ?? 0));
    // As in pgTAP 76: in a big table the tenant's rows would not be read as part of a scan of the
    // whole table, and this stands in for that.
    await tx`select set_config('enable_seqscan', 'off', true)`;
    const before = await fetched();
    const { rows } = await listPage(tx, root, q, q.cursor ? decodeCursor(q.cursor, "memories") : undefined);
    return { rows, fetched: (await fetched()) - before };
  });
}

Deno.test("list: a page of a big tenant among small ones reads the page, newest first, and the next page from the cursor", async () => {
  await seed();
  const first = await page({ limit: "100" });
  assert.equal(first.rows.length, 101, "limit + 1 rows: the caller learns there is a next page");
  assert.deepEqual(
    first.rows.slice(0, 3).map((r) => r.content),
    ["Page test memory number 1", "Page test memory number 2", "Page test memory number 3"],
  );
  assert.ok(first.fetched < 400, `a page of 100 fetched ${first.fetched} rows of a tenant of 3,000`);

  const cursor = encodeCursor("memories", { ts: String(first.rows[99]!.cursor_ts), id: String(first.rows[99]!.id) });
  const second = await page({ limit: "100" }, cursor);
  assert.equal(second.rows[0]!.content, "Page test memory number 101");
  assert.ok(second.fetched < 400, `the next page fetched ${second.fetched} rows`);

  // A filter the index does not hold: the page skips what does not match, still in index order.
  const filtered = await page({ limit: "100", project: "pages" });
  assert.equal(filtered.rows.length, 101);
  assert.ok(filtered.fetched < 400, `a project's page fetched ${filtered.fetched} rows`);
});

Deno.test("list: cleanup", async () => {
  await sql`delete from public.devai_memories where owner_id = ${big}`;
  await sql`delete from public.devai_memories where owner_id::text like 'e1570000-%'`;
  await sql.end();
});
