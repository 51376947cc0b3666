// The nightly prune of full rate-limit buckets (memory_private.prune_rate_limit_buckets, migration
// 20261130300000) resets no limit, also for requests that meet it mid-delete: a tenant's requests
// that found its full bucket, then waited for its row while the prune locked and deleted it, pass
// at most its burst between them, as they would have without the prune. The prune locks a bucket
// and deletes it in one step of its statement; a BEFORE DELETE trigger on this test's tenant only
// holds it between the two (on an advisory lock the test holds) so the requests arrive there.
// Everything is asserted as ordering (who waits, per pg_stat_activity and pg_blocking_pids), never as a duration.
import assert from "node:assert/strict";
import postgres from "postgres";
import { tenantItem } from "../supabase/functions/_shared/db.ts";
import { realServerOnly } from "./support/backend.ts";
import { testDatabaseUrl } from "./support/config.ts";
import { overrideSettings } from "./support/lifecycle.ts";
import { newTenant } from "./support/seed.ts";
import { waitUntil } from "./support/wait.ts";

const HOLD = 738_001; // advisory lock key of this test
const BURST = 2;
const REQUESTS = 5;

Deno.test({
  ...realServerOnly(
    "rate-limit prune: requests that meet their full bucket being deleted pass at most its burst",
    "several transactions open at once",
  ),
  async fn() {
    const sql = postgres(testDatabaseUrl(), { max: REQUESTS + 3, onnotice: () => {} });
    const limits = await overrideSettings(sql, { rate_limit_heavy_burst: BURST, rate_limit_heavy_per_minute: 1 });
    const tenant = newTenant();
    const holder = await sql.reserve();
    try {
      await sql`insert into memory_private.rate_limit_buckets (owner_id, route_class, tokens, refilled_at)
                values (${tenant}, 'heavy', ${BURST}, now() - interval '1 day')`;
      await sql.unsafe(`
        create function memory_private.test_hold_bucket_delete() returns trigger language plpgsql as
          $$ begin perform pg_advisory_xact_lock(${HOLD}); return old; end $$;
        create trigger test_hold_bucket_delete before delete on memory_private.rate_limit_buckets
          for each row when (old.owner_id = '${tenant}') execute function memory_private.test_hold_bucket_delete();`);
      await holder`select pg_advisory_lock(${HOLD})`;

      // The prune locks the tenant's full bucket, then waits (in the trigger) before deleting it.
      const prune = sql`select memory_private.prune_rate_limit_buckets() as result`.execute();
      const prunePid = await waitUntil(async () => {
        const [row] = await sql<{ pid: number }[]>`
          select pid from pg_stat_activity
           where wait_event_type = 'Lock' and wait_event = 'advisory' and query like '%prune_rate_limit_buckets%'`;
        return row?.pid;
      }, "the prune waiting before it deletes the tenant's bucket");

      // The tenant's requests find its bucket (insert: conflict) and wait for its row.
      const takes = Array.from({ length: REQUESTS }, () =>
        sql<{ retry_after: number }[]>`
          select public.take_rate_limit_token('heavy') as retry_after from ${tenantItem(sql as never, tenant)}`
          .execute().then(([row]) => row!.retry_after));
      await waitUntil(async () => {
        // The first waits for the prune, the others queue behind it for the same row.
        const [row] = await sql<{ n: number; first: boolean }[]>`
          select count(*)::int as n, coalesce(bool_or(${prunePid} = any(pg_blocking_pids(pid))), false) as first
            from pg_stat_activity
           where query like '%take_rate_limit_token%' and wait_event_type = 'Lock' and pid <> pg_backend_pid()`;
        return row!.n === REQUESTS && row!.first;
      }, `all ${REQUESTS} requests waiting for the prune`);

      await holder`select pg_advisory_unlock(${HOLD})`;
      await prune;
      const passed = (await Promise.all(takes)).filter((wait) => wait === 0).length;
      assert.ok(passed <= BURST, `${passed} of ${REQUESTS} requests passed; a full bucket holds ${BURST}`);
      const [bucket] = await sql<{ tokens: number }[]>`
        select tokens from memory_private.rate_limit_buckets where owner_id = ${tenant} and route_class = 'heavy'`;
      assert.ok(bucket && bucket.tokens < 1, "the tokens taken are in the tenant's bucket");
    } finally {
      await holder`select pg_advisory_unlock_all()`;
      holder.release();
      await sql`drop trigger if exists test_hold_bucket_delete on memory_private.rate_limit_buckets`;
      await sql`drop function if exists memory_private.test_hold_bucket_delete()`;
      await sql`delete from memory_private.rate_limit_buckets where owner_id = ${tenant}`;
      await limits.restore();
      await sql.end();
    }
  },
});
