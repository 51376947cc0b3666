// take_rate_limit_token counts a bucket's refill up to the moment it holds the bucket's row, not to
// when it began waiting for it (migration 20261201100000): a request that waited behind another of
// the tenant's never sets the bucket's clock back, so no interval's refill is credited twice.
// Asserted as ordering (the request waits on the holder, per pg_blocking_pids), never as a duration.
import assert from "node:assert/strict";
import postgres from "postgres";
import { tenantItem } from "../supabase/functions/_shared/db.ts";
import { realServerOnly } from "./support/backend.ts";
import { testDatabaseUrl } from "./support/config.ts";
import { overrideSettings } from "./support/lifecycle.ts";
import { newTenant } from "./support/seed.ts";
import { waitUntil } from "./support/wait.ts";

const BURST = 5;

Deno.test({
  ...realServerOnly(
    "rate limit: a request that waited for its bucket's row never sets the bucket's clock back",
    "two transactions open at once",
  ),
  async fn() {
    const sql = postgres(testDatabaseUrl(), { max: 4, onnotice: () => {} });
    const limits = await overrideSettings(sql, { rate_limit_heavy_burst: BURST, rate_limit_heavy_per_minute: 60 });
    const tenant = newTenant();
    const holder = await sql.reserve();
    try {
      await sql`insert into memory_private.rate_limit_buckets (owner_id, route_class, tokens, refilled_at)
                values (${tenant}, 'heavy', ${BURST}, now() - interval '1 day')`;
      // Another request of the tenant's holds the bucket's row...
      await holder`begin`;
      const [lock] = await holder<{ pid: number }[]>`
        select pg_backend_pid() as pid from memory_private.rate_limit_buckets
         where owner_id = ${tenant} and route_class = 'heavy' for update`;
      // ... while this one starts and waits for it.
      const take = sql<{ retry_after: number }[]>`
        select public.take_rate_limit_token('heavy') as retry_after from ${tenantItem(sql as never, tenant)}`
        .execute();
      await waitUntil(async () => {
        const [row] = await sql<{ n: number }[]>`
          select count(*)::int as n from pg_stat_activity
           where query like '%take_rate_limit_token%' and ${lock!.pid} = any(pg_blocking_pids(pid))`;
        return row!.n === 1;
      }, "the request waiting for the bucket's row");
      // The holder takes its token now, after the waiting request began, and commits.
      const [taken] = await holder<{ refilled_at: Date }[]>`
        update memory_private.rate_limit_buckets set tokens = tokens - 1, refilled_at = clock_timestamp()
         where owner_id = ${tenant} and route_class = 'heavy' returning refilled_at`;
      await holder`commit`;
      const held = taken!.refilled_at;
      const [answer] = await take;
      assert.equal(answer!.retry_after, 0, "a token was left for the waiting request");
      const [bucket] = await sql<{ refilled_at: Date; tokens: number }[]>`
        select refilled_at, tokens from memory_private.rate_limit_buckets
         where owner_id = ${tenant} and route_class = 'heavy'`;
      // Before: the waiting request wrote the time it began, earlier than the holder's.
      assert.ok(
        bucket!.refilled_at.getTime() >= held.getTime(),
        `the bucket's clock went back from ${held.toISOString()} to ${bucket!.refilled_at.toISOString()}`,
      );
    } finally {
      await holder`rollback`.catch(() => {});
      holder.release();
      await sql`delete from memory_private.rate_limit_buckets where owner_id = ${tenant}`;
      await limits.restore();
      await sql.end();
    }
  },
});
