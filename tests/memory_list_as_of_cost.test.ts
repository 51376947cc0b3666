// GET memory?as_of=: a page examines at most AS_OF_ROWS_PER_PAGE (1,000) memories. Whether a memory was
// held is known only by public.memory_at, one memory_history lookup per memory: where few were
// held then, a page called it on every memory of the tenant recorded by then (docs/graph.md#as-of).
// Counted as the index scans of public.memory_history a page's transaction made (one per
// memory_at call), for a tenant of 3,000 memories of which the 3 oldest are still held.
import assert from "node:assert/strict";
import { withTenant } from "../supabase/functions/_shared/db.ts";
import { AS_OF_ROWS_PER_PAGE, listPage, nextCursor } from "../supabase/functions/_shared/memories/list-page.ts";
import type { ListCursor } from "../supabase/functions/_shared/memories/cursor.ts";
import { ListQuery } from "../supabase/functions/_shared/memories/schemas.ts";
import { newTenant, testSql } from "./support/seed.ts";

const sql = testSql();
const tenant = newTenant();

async function seed(): Promise<string> {
  await sql`
    insert into public.devai_memories (owner_id, content, memory_type, namespace, created_at)
    select ${tenant}::uuid, 'As-of memory number ' || g, 'semantic', 'devai/project/asof',
           now() - make_interval(secs => 4000 - g)
      from generate_series(1, 3000) g`;
  // Every memory but the three oldest is forgotten; as of now, three are held.
  await sql`
    update public.devai_memories set state = 'soft_deleted', purge_at = now() + interval '30 days'
     where owner_id = ${tenant} and content not in ('As-of memory number 1', 'As-of memory number 2',
                                                     'As-of memory number 3')`;
  await sql`analyze public.devai_memories`;
  const [r] = await sql<
    { at: string }[]
  >`select to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at`;
  return r!.at;
}

/** One page and the memory_history index scans (memory_at calls) its transaction made. */
async function page(asOf: string, after?: ListCursor) {
  const q = ListQuery.parse({ as_of: asOf, limit: "2" });
  return await withTenant(sql, { tenantId: tenant, actor: "test" }, async (tx) => {
    const scans = () =>
      tx<{ n: string }[]>`
        select idx_scan as n from pg_stat_xact_user_tables
         where relid = 'public.memory_history'::regclass`.then(([r]) => Number(r?.n ?? 0));
    const before = await scans();
    const listed = await listPage(tx, "devai", q, after);
    return { listed, memoryAt: (await scans()) - before };
  });
}

Deno.test("list as_of: a page examines a bounded number of memories; the cursor goes on where it stopped", async () => {
  const asOf = await seed();
  const seen: string[] = [];
  let after: ListCursor | undefined;
  let pages = 0;
  do {
    const { listed, memoryAt } = await page(asOf, after);
    assert.ok(
      memoryAt <= AS_OF_ROWS_PER_PAGE,
      `page ${pages + 1} called memory_at ${memoryAt} times (at most ${AS_OF_ROWS_PER_PAGE})`,
    );
    seen.push(...listed.rows.slice(0, 2).map((r) => String(r.content)));
    after = nextCursor(listed, 2) ?? undefined;
    pages++;
  } while (after && pages < 10);
  // 3,000 memories, 1,000 examined a page: three pages reach the held ones, then a last page of one.
  assert.deepEqual(seen, ["As-of memory number 3", "As-of memory number 2", "As-of memory number 1"]);
  assert.equal(pages, 4, "the pages end (no cursor after the last)");
});

Deno.test("list as_of: cleanup", async () => {
  await sql`delete from public.devai_memories where owner_id = ${tenant}`;
  await sql.end();
});
