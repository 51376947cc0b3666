// A big tenant's own HNSW index (docs/operations.md#a-dedicated-vector-index-for-a-big-tenant):
// public.memory_dedicated_vector_index_sql gives the statement, run here as the operator runs it
// and as the worker runs a queued vector_index job (outside a transaction: CONCURRENTLY); then that tenant's searches walk its index, return what
// the exact search returns, and another tenant's never touch it nor see its rows. Which index a
// search walked is read from each index's scan counter for the transaction
// (pg_stat_get_xact_numscans, before and after), never from timing.
import assert from "node:assert/strict";
import { tenantItem, toVectorLiteral } from "../supabase/functions/_shared/db.ts";
import { drainQueue } from "../supabase/functions/_shared/drain-queue.ts";
import { createEmbedder, embedLocally } from "../supabase/functions/_shared/embeddings.ts";
import { testConfig } from "./support/config.ts";
import { realServerOnly } from "./support/backend.ts";
import { newTenant, seedMemories, testSql } from "./support/seed.ts";

const sql = testSql(2);
const opts = { sanitizeResources: false, sanitizeOps: false };
const TOPICS = ["deploys", "billing", "auth tokens", "caching", "search", "logging", "queues", "migrations"];

/** n memories in the tenant's project scope, spread over a few topics. */
function memories(n: number, project: string) {
  return Array.from({ length: n }, (_, i) => ({
    content: `Note ${i} about ${TOPICS[i % TOPICS.length]} in ${project}: detail ${i * 7919 % 1000}`,
    namespace: `devai/project/${project}`,
  }));
}

interface Walk {
  ids: string[];
  own: number;
  shared: number;
}

/**
 * The tenant's search of its project with the HNSW path forced (no exact search for any scope), in
 * one transaction rolled back: what it returned and how often each index was walked.
 */
async function search(tenant: string, project: string, query: string, ownIndex: string): Promise<Walk> {
  let walk: Walk | undefined;
  await sql.begin(async (tx) => {
    await tx`update public.memory_settings set value = 0 where name in ('exact_scan_max_rows', 'exact_scan_cost_ratio')`;
    // The counters hold what this backend has not reported yet (earlier transactions' scans too):
    // the search's own are the difference.
    const scans = async () =>
      (await tx<{ own: number; shared: number }[]>`
        select coalesce(pg_stat_get_xact_numscans(to_regclass(${`public.${ownIndex}`})), 0)::int as own,
               pg_stat_get_xact_numscans('public.devai_memories_embedding_hnsw'::regclass)::int as shared`)[0]!;
    const vector = toVectorLiteral(embedLocally(query));
    const before = await scans();
    const rows = await tx<{ id: string }[]>`
      select m.id from ${tenantItem(tx as never, tenant)},
           public.match_memories(${vector}::extensions.vector, ${`devai/project/${project}`}, 10, 0, ${tenant}::uuid,
                                 'local-hash-512-v1') m`;
    const after = await scans();
    walk = { ids: rows.map((r) => r.id), own: after.own - before.own, shared: after.shared - before.shared };
    throw new Rollback();
  }).catch((e) => {
    if (!(e instanceof Rollback)) throw e;
  });
  return walk!;
}

class Rollback extends Error {}

Deno.test({
  ...realServerOnly(
    "dedicated vector index: built concurrently for one tenant, walked by its searches only, same answers as exact",
    "CREATE INDEX CONCURRENTLY beside the suite's other connections",
  ),
  ...opts,
  fn: async () => {
    const big = newTenant(), other = newTenant();
    await seedMemories(sql, big, memories(60, "atlas"));
    await seedMemories(sql, other, memories(30, "atlas"));
    const [row] = await sql<{ create: string; drop: string }[]>`
      select public.memory_dedicated_vector_index_sql(${big}::uuid) as create,
             public.memory_dedicated_vector_index_sql(${big}::uuid, true) as drop`;
    const name = `devai_memories_hnsw_owner_${big.replaceAll("-", "")}`;
    assert.match(
      row!.create,
      new RegExp(`^create index concurrently if not exists ${name} on public\\.devai_memories`),
    );
    try {
      await sql.unsafe(row!.create);
      const [index] = await sql<{ def: string }[]>`select indexdef as def from pg_indexes where indexname = ${name}`;
      assert.match(index!.def, new RegExp(`WHERE \\(\\(owner_id = '${big}'::uuid\\) AND is_valid`));

      const query = "What do the notes say about billing and caching?";
      const own = await search(big, "atlas", query, name);
      assert.ok(own.own > 0, `the tenant's search walks its own index: ${JSON.stringify(own)}`);
      assert.equal(own.shared, 0, "and not the shared one");
      const [exact] = await sql<{ ids: string[] }[]>`
        select array_agg(m.id order by m.embedding operator(extensions.<=>) ${
        toVectorLiteral(embedLocally(query))
      }::extensions.vector, m.id) as ids
          from (select * from public.devai_memories where owner_id = ${big}
                 order by embedding operator(extensions.<=>) ${
        toVectorLiteral(embedLocally(query))
      }::extensions.vector, id
                 limit 10) m`;
      assert.deepEqual(own.ids, exact!.ids, "the same ten as comparing every vector");

      const theirs = await search(other, "atlas", query, name);
      assert.equal(theirs.own, 0, "another tenant's search never walks it");
      assert.ok(theirs.shared > 0);
      const [leak] = await sql<{ n: number }[]>`
        select count(*)::int as n from public.devai_memories where id = any (${theirs.ids}::uuid[]) and owner_id <> ${other}`;
      assert.equal(leak!.n, 0, "nor sees the big tenant's rows");
    } finally {
      await sql.unsafe(row!.drop);
    }
    const [gone] = await sql<{ n: number }[]>`select count(*)::int as n from pg_indexes where indexname = ${name}`;
    assert.equal(gone!.n, 0, "the drop statement removes it");
    const after = await search(big, "atlas", "billing", name);
    assert.ok(after.shared > 0, "and the tenant's searches walk the shared index again");
  },
});

Deno.test({
  ...realServerOnly(
    "dedicated vector index, automatic: the worker builds a queued tenant's index, keeps it on a second build, replaces an invalid leftover, drops it on a drop job, and does nothing the plan no longer wants",
    "CREATE INDEX CONCURRENTLY beside the suite's other connections",
  ),
  ...opts,
  fn: async () => {
    const big = newTenant(), neighbour = newTenant();
    await seedMemories(sql, big, memories(60, "orbit"));
    await seedMemories(sql, neighbour, memories(60, "orbit")); // so that big is at most half of them all
    const name = `devai_memories_hnsw_owner_${big.replaceAll("-", "")}`;
    const config = testConfig();
    const deps = { sql, config, embedder: createEmbedder(config) };
    // One job as memory_private.enqueue_vector_index_jobs queues it (pgTAP 75 covers which
    // tenants it picks), drained by the worker as it drains the queue; its result.
    const run = async (action: "build" | "drop", minRows: number) => {
      const [job] = await sql<{ id: string }[]>`
        insert into public.memory_jobs (owner_id, kind, payload, idempotency_key)
        values (${big}, 'vector_index', ${sql.json({ action, min_rows: minRows })},
                ${`test:${action}:${crypto.randomUUID()}`})
        returning id`;
      const report = await drainQueue(deps, { ownerId: big, kinds: ["vector_index"], backoffBaseMs: 0 });
      assert.deepEqual(report.jobs.map((j) => [j.kind, j.status, j.error]), [["vector_index", "done", undefined]]);
      return (await sql<{ result: Record<string, unknown> }[]>`
        select result from public.memory_jobs where id = ${job!.id}`)[0]!.result;
    };
    const state = async () =>
      (await sql<{ valid: boolean | null; used: string }[]>`
        select (select i.indisvalid from pg_index i where i.indexrelid = to_regclass(${`public.${name}`})) as valid,
               public.memory_vector_index_of(${big}::uuid)::text as used`)[0]!;
    try {
      // A build the plan no longer wants (the tenant under a threshold of 1,000) does nothing.
      assert.deepEqual(await run("build", 1000), { action: "build", skipped: "no longer planned for this tenant" });
      assert.deepEqual(await state(), { valid: null, used: "devai_memories_embedding_hnsw" }, "no index");

      assert.deepEqual(await run("build", 50), { action: "build", valid: true });
      assert.deepEqual(await state(), { valid: true, used: name }, "built, valid, and the tenant's");
      const walk = await search(big, "orbit", "What do the notes say about queues?", name);
      assert.ok(walk.own > 0 && walk.shared === 0, `its searches walk it: ${JSON.stringify(walk)}`);

      assert.deepEqual(await run("build", 50), { action: "build", skipped: "no longer planned for this tenant" });
      assert.deepEqual(await state(), { valid: true, used: name }, "a second build changes nothing");

      // What a failed concurrent build leaves: an invalid index, which the searches ignore and
      // IF NOT EXISTS would keep forever.
      await sql`update pg_index set indisvalid = false where indexrelid = to_regclass(${`public.${name}`})`;
      assert.deepEqual(await state(), { valid: false, used: "devai_memories_embedding_hnsw" }, "invalid: not used");
      assert.deepEqual(await run("build", 50), { action: "build", valid: true });
      assert.deepEqual(await state(), { valid: true, used: name }, "the build replaced it with a valid one");

      assert.deepEqual(await run("drop", 50), { action: "drop", skipped: "no longer planned for this tenant" });
      assert.equal((await state()).valid, true, "a drop the plan does not want (60 memories, threshold 50) keeps it");
      assert.deepEqual(await run("drop", 1000), { action: "drop", valid: null });
      assert.deepEqual(await state(), { valid: null, used: "devai_memories_embedding_hnsw" }, "dropped");
    } finally {
      await sql.unsafe(`drop index concurrently if exists public.${name}`);
    }
  },
});

Deno.test({ name: "dedicated vector index: only service_role may ask for the statement", ...opts }, async () => {
  const t = newTenant();
  await assert.rejects(
    sql.begin(async (tx) => {
      await tx`select set_config('role', 'authenticated', true)`;
      await tx`select public.memory_dedicated_vector_index_sql(${t}::uuid)`;
    }),
    /permission denied/,
  );
});

Deno.test({ name: "close the pool", ...opts }, async () => {
  await sql.end();
});
