// take_rate_limit_token takes a token from a bucket that holds one in one UPDATE (migration
// 20261211200000, docs/operations.md#rate-limits): each request with limits on used to run three
// statements on its bucket (INSERT … ON CONFLICT DO NOTHING, SELECT … FOR UPDATE, UPDATE). Counted
// as the bucket table's scans (one per statement that finds the bucket) and row changes in
// the call's transaction (pg_stat_xact_user_tables), for each path a request can take.
import assert from "node:assert/strict";
import { tenantItem } from "../supabase/functions/_shared/db.ts";
import { overrideSettings } from "./support/lifecycle.ts";
import { newTenant, testSql } from "./support/seed.ts";

interface BucketWork {
  retryAfter: number;
  scans: number;
  inserted: number;
  updated: number;
}

Deno.test("rate limit: a request takes its token from its bucket in one statement", async () => {
  const sql = testSql(1);
  const limits = await overrideSettings(sql, { rate_limit_write_burst: 2, rate_limit_write_per_minute: 1 });
  const tenant = newTenant();
  // One call as the request makes it (chargeToken, _shared/db.ts), and what it did to the bucket table.
  const take = () =>
    sql.begin(async (tx) => {
      const work = () =>
        tx<{ scans: string; inserted: string; updated: string }[]>`
          select coalesce(seq_scan, 0) + coalesce(idx_scan, 0) as scans, n_tup_ins as inserted, n_tup_upd as updated from pg_stat_xact_user_tables
           where relid = 'memory_private.rate_limit_buckets'::regclass`.then(([r]) => r!);
      const before = await work();
      const [row] = await tx<{ retry_after: number }[]>`
        select public.take_rate_limit_token('write') as retry_after from ${tenantItem(tx as never, tenant)}`;
      const after = await work();
      return {
        retryAfter: row!.retry_after,
        scans: Number(after.scans) - Number(before.scans),
        inserted: Number(after.inserted) - Number(before.inserted),
        updated: Number(after.updated) - Number(before.updated),
      } satisfies BucketWork;
    });
  try {
    const first = await take();
    const second = await take();
    const refused = await take();
    assert.deepEqual(
      { first, second, refused: { ...refused, retryAfter: refused.retryAfter > 0 } },
      {
        // No bucket yet: looked for (UPDATE, SELECT), then inserted with the token taken.
        first: { retryAfter: 0, scans: 3, inserted: 1, updated: 0 },
        // A bucket with a token: one UPDATE (three statements and scans before, a lock and an update).
        second: { retryAfter: 0, scans: 1, inserted: 0, updated: 1 },
        // An empty bucket: read under its lock for the wait, nothing written.
        refused: { retryAfter: true, scans: 2, inserted: 0, updated: 0 },
      },
    );
    const [bucket] = await sql<{ tokens: number }[]>`
      select tokens from memory_private.rate_limit_buckets where owner_id = ${tenant} and route_class = 'write'`;
    assert.ok(bucket!.tokens < 1, `both tokens of the burst are taken (${bucket!.tokens} left)`);
  } finally {
    await sql`delete from memory_private.rate_limit_buckets where owner_id = ${tenant}`;
    await limits.restore();
    await sql.end();
  }
});
