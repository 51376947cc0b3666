// A keyword search as of an instant matches a memory changed since on its words of then
// (memory_search.fts_then, a memory_history lookup). It derives them once per memory and search:
// before, the keyword lookups derived them once per memory and search term, and BM25 once for the
// length and once per term, so an as_of search of a tenant whose memories all changed since (an
// operator pinned them) was 11x slower. The keyword lookups derive them for every memory in scope
// changed since in one statement, not a call of fts_then each (which cost 2.5x the lookup); BM25
// calls it once per candidate. Counted as fts_then calls (track_functions in the search's
// transaction); a search without as_of makes none.
import assert from "node:assert/strict";
import { realServerOnly } from "./support/backend.ts";
import { newTenant, testSql } from "./support/seed.ts";

const sql = testSql();
const opts = { sanitizeOps: false, sanitizeResources: false };
const N = 200;
// BM25's candidates: at most twice the keyword pool, max(3 x match_count, 30) for match_count 10.
const CANDIDATES = 60;

/** hybrid_search in keyword mode (as of `asOf`, or now): the ids found and the fts_then calls. */
async function search(owner: string, query: string, asOf: string | null) {
  return await sql.begin(async (tx) => {
    await tx`set local track_functions = 'all'`;
    // The view also holds the connection's earlier transactions' calls not yet reported: a difference.
    const calls = () =>
      tx<{ n: string | null }[]>`
        select sum(calls) as n from pg_stat_xact_user_functions
         where schemaname = 'memory_search' and funcname = 'fts_then'`.then(([r]) => Number(r?.n ?? 0));
    const before = await calls();
    const found = await tx<{ id: string }[]>`
      select id from public.hybrid_search(${query}, null, array['devai/project/cost'], 10, 0.7, null,
                                          ${owner}::uuid, 'keyword', 0, as_of => ${asOf}::timestamptz)`;
    return { ids: found.map((r) => r.id), calls: (await calls()) - before };
  });
}

Deno.test(
  {
    ...realServerOnly("as_of keyword search: a memory changed since has its words of then derived once", "pg_stat"),
    ...opts,
  },
  async () => {
    const t = newTenant();
    await sql`
      insert into public.devai_memories (owner_id, content, memory_type, namespace)
      select ${t}::uuid, 'Deploy note ' || g || ' about kafka broker rebalancing', 'semantic', 'devai/project/cost'
        from generate_series(1, ${N}) g`;
    // One of them edited in place since the instant (an operator, in Studio): found on its words of then.
    const [edited] = await sql<{ id: string }[]>`
      select id from public.devai_memories where owner_id = ${t} and content like 'Deploy note 7 %'`;
    const [now] = await sql<{ at: string }[]>`select clock_timestamp()::text as at`;
    const at = now!.at;
    await sql`update public.devai_memories set pinned = true where owner_id = ${t}`;
    await sql`update public.devai_memories set content = 'Invoices are archived every month.' where id = ${edited!.id}`;

    // Four terms, one of them no memory has (every memory is scanned for it).
    const asOf = await search(t, "deploy note 7 kafka zebra", at);
    assert.ok(asOf.ids.includes(edited!.id), "the memory edited since is found on its words of then");
    // Once per candidate in BM25; none per memory in the keyword lookups.
    assert.ok(asOf.calls <= CANDIDATES, `fts_then called ${asOf.calls} times for ${N} memories changed since`);
    assert.deepEqual((await search(t, "invoices archived", at)).ids, []);

    const live = await search(t, "deploy note 7 kafka zebra", null);
    assert.equal(live.calls, 0);
    assert.ok(!live.ids.includes(edited!.id));
  },
);

Deno.test({ name: "close the pool", ...opts }, async () => {
  await sql.end();
});
