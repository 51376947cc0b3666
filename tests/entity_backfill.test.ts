// The entity pass of memories never linked (_shared/entity-backfill.ts, migration 20261129500000,
// docs/graph.md#entities), as the worker runs it: a job takes one batch, and no more, even when the
// set's statistics are stale; a tenant's next batch waits for its turn in the fair queue, so other
// tenants' overdue jobs are not held up behind a backfill. Which tenants are queued, and queued
// again after a dead job, is pgTAP's (99_entity_backfill_queued_per_tenant).
import assert from "node:assert/strict";
import { withTenant } from "../supabase/functions/_shared/db.ts";
import { drainQueue } from "../supabase/functions/_shared/drain-queue.ts";
import { enqueueJob } from "../supabase/functions/_shared/jobs.ts";
import { overrideSettings } from "./support/lifecycle.ts";
import { newTenant } from "./support/seed.ts";
import { type WriteEnv, writeEnv } from "./write_helpers.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

/** n memories of tenant t as an older release left them: no entity link, in the pass set. */
async function unlinked(env: WriteEnv, t: string, n: number) {
  await env.sql`
    with m as (
      insert into public.devai_memories (owner_id, content, memory_type, namespace, priority, source, importance)
      select ${t}, 'Retries live in src/net/retry' || i || '.ts', 'semantic', 'devai/project/demo/notes', 'medium',
             'discovery', 3
        from generate_series(1, ${n}::int) i
      returning owner_id, id)
    insert into memory_private.entity_pass_pending (owner_id, memory_id) select owner_id, id from m`;
}

async function pending(env: WriteEnv, t: string): Promise<number> {
  const [row] = await env.sql<{ n: number }[]>`
    select count(*)::int as n from memory_private.entity_pass_pending where owner_id = ${t}`;
  return row!.n;
}

Deno.test({
  name: "entity backfill: two backfilling tenants take turns with a third tenant's overdue jobs",
  ...opts,
  fn: async () => {
    const env = await writeEnv({ withLlm: false });
    const settings = await overrideSettings(env.sql, { entity_backfill_batch_size: 1 });
    try {
      // Tests run one file at a time: a job another test left queued would take the head.
      await env.sql`delete from public.memory_jobs where status = 'queued'`;
      const [X, A, B] = [newTenant(), newTenant(), newTenant()];
      // X's backlog: 4 embed jobs (of a memory since deleted: each completes at once), overdue by
      // a day, as when the worker fell behind.
      for (let i = 0; i < 4; i++) {
        await withTenant(env.sql, { tenantId: X, actor: "test" }, (tx) =>
          enqueueJob(tx, {
            ownerId: X,
            kind: "embed",
            idempotencyKey: `overdue-${i}`,
            payload: { memory_ids: [crypto.randomUUID()] },
          }));
      }
      await env.sql`update public.memory_jobs set fair_key = fair_key - interval '1 day',
                      run_after = run_after - interval '1 day' where owner_id = ${X}`;
      await unlinked(env, A, 5);
      await unlinked(env, B, 5);
      // As devai-entity-backfill does (other tenants' leftovers in the set may be queued too).
      await env.sql`select memory_private.enqueue_entity_backfill()`;

      const names = new Map([[X, "X"], [A, "A"], [B, "B"]]);
      const report = await drainQueue(env.deps, { workerId: "fair", maxJobs: 40, kinds: ["embed", "entity_backfill"] });
      const owners = await env.sql<{ id: string; owner_id: string }[]>`
        select id, owner_id from public.memory_jobs where id = any(${report.jobs.map((j) => j.id)}::uuid[])`;
      const ownerOf = new Map(owners.map((o) => [o.id, o.owner_id]));
      const order = report.jobs.map((j) => names.get(ownerOf.get(j.id)!)).filter((n) => n !== undefined).join("");
      assert.deepEqual(report.jobs.filter((j) => j.status !== "done"), [], JSON.stringify(report.jobs));
      // Each of X's jobs comes within one turn of A and B: XABXABXABXAB then A and B's last two.
      // (Before: the next batch took the head, X A B A B A B A B A B X X X.)
      assert.equal(order.length, 14, order);
      const xs = [...order].flatMap((n, i) => n === "X" ? [i] : []);
      assert.ok(xs[0]! <= 2, `X's first job among the first three: ${order}`);
      for (let i = 1; i < xs.length; i++) {
        assert.ok(xs[i]! - xs[i - 1]! <= 3, `at most one job of A and one of B between two of X's: ${order}`);
      }
      assert.equal(await pending(env, A) + await pending(env, B), 0, "both tenants' memories passed");
    } finally {
      await settings.restore();
      await env.close();
    }
  },
});

Deno.test({
  name: "entity backfill: a job takes one batch, also when the set's statistics say it is empty",
  ...opts,
  fn: async () => {
    const env = await writeEnv({ withLlm: false });
    const settings = await overrideSettings(env.sql, { entity_backfill_batch_size: 200 });
    const t = newTenant();
    try {
      await env.sql`
        insert into memory_private.entity_pass_pending (owner_id, memory_id)
        select ${t}, gen_random_uuid() from generate_series(1, 400)`;
      // Statistics from before the fill (one row): a planner that trusts them joins the batch's
      // subquery in a nested loop, run again for each row, each run taking the next 200.
      await env.sql`update pg_catalog.pg_class set reltuples = 1, relpages = 1
                     where oid = 'memory_private.entity_pass_pending'::regclass`;
      await withTenant(
        env.sql,
        { tenantId: t, actor: "test" },
        (tx) => enqueueJob(tx, { ownerId: t, kind: "entity_backfill", idempotencyKey: "one-batch", payload: {} }),
      );
      const report = await drainQueue(env.deps, {
        workerId: "batch",
        maxJobs: 1,
        ownerId: t,
        kinds: ["entity_backfill"],
      });
      assert.equal(report.done, 1, JSON.stringify(report.jobs));
      assert.equal(await pending(env, t), 200, "one batch of 200 taken out of 400");
      const [job] = await env.sql<{ result: { scanned: number; more: boolean } }[]>`
        select result from public.memory_jobs where id = ${report.jobs[0]!.id}`;
      assert.equal(job!.result.more, true);
      const [next] = await env.sql<{ n: number }[]>`
        select count(*)::int as n from public.memory_jobs where owner_id = ${t} and status = 'queued'`;
      assert.equal(next!.n, 1, "the next batch is queued");
    } finally {
      await env.sql`delete from memory_private.entity_pass_pending where owner_id = ${t}`;
      await env.sql`delete from public.memory_jobs where owner_id = ${t}`;
      await env.sql`analyze memory_private.entity_pass_pending`;
      await settings.restore();
      await env.close();
    }
  },
});
