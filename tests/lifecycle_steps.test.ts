// The nightly jobs as they are scheduled, on this backend (real Postgres and PGlite): the command
// of each schedule in public.memory_maintenance_schedules (run_decay_step(), run_ttl_step(),
// run_purge_step()) called again and again, each call its own transaction, the way pg_cron (or,
// without pg_cron, the local server's scheduler) calls it every minute of the job's window. Decay
// and TTL start one run, continue it over several calls until it is done, and then idle; purge
// takes what is due a few batches per call. The history names the job (DECAY by cron:decay, TTL by
// cron:ttl, PURGE by cron:purge).
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import postgres from "postgres";
import { testDatabaseUrl } from "./support/config.ts";
import { overrideSettings, pauseCronJobs, removeTenantData } from "./support/lifecycle.ts";

type Sql = ReturnType<typeof postgres>;
type StepResult = {
  action: string;
  batches: number;
  run: { next_page: number; total_pages: number; finished: boolean };
};

/** Runs a scheduled command once, in its own transaction, as pg_cron does; returns its jsonb. */
async function runScheduled<T>(sql: Sql, command: string): Promise<T> {
  const [row] = await sql.unsafe<Record<string, T>[]>(command);
  assert.ok(row, command);
  return Object.values(row)[0]!;
}

/** Calls a step command until its run is finished; returns every call's action. */
async function runUntilDone(sql: Sql, command: string): Promise<string[]> {
  const actions: string[] = [];
  for (let i = 0; i < 10_000; i++) {
    const r = await runScheduled<StepResult>(sql, command);
    actions.push(r.action);
    if (r.run.finished) return actions;
  }
  throw new Error(`${command}: the run did not finish in 10,000 calls (${actions.slice(-3).join(", ")})`);
}

Deno.test({
  name: "lifecycle steps: the scheduled commands do the nightly jobs over several calls, one run each, then idle",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const sql = postgres(testDatabaseUrl(), { max: 1, onnotice: () => {} });
    const tenant = randomUUID();
    const filler = randomUUID();
    const cron = await pauseCronJobs(sql, ["devai-memory-decay", "devai-memory-ttl", "devai-memory-purge"]);
    // One heap page per batch and one row per purge batch, so each job takes several calls.
    const settings = await overrideSettings(sql, { decay_batch_pages: 1, ttl_batch_pages: 1, purge_batch_size: 1 });
    try {
      await sql`delete from memory_private.lifecycle_runs`;
      const schedules = new Map(
        (await sql<{ job_name: string; command: string }[]>`
          select job_name, command from public.memory_maintenance_schedules`).map((r) => [r.job_name, r.command]),
      );
      const command = (job: string) => {
        const c = schedules.get(job);
        assert.ok(c, `${job} is scheduled`);
        return c;
      };

      const ids = await sql<{ label: string; id: string }[]>`
        insert into public.devai_memories (owner_id, content, memory_type, namespace, importance, base_strength, strength,
                                           last_accessed_at, state, purge_at)
        select ${tenant}, v.label, 'semantic', 'devai/global', v.importance, 1.0, 1.0, now() - v.idle, v.state, v.purge_at
          from (values ('idle, important', 4, interval '100 days', 'active', null::timestamptz),
                       ('idle, unimportant', 1, interval '100 days', 'active', null),
                       ('fresh', 1, interval '0', 'active', null),
                       ('due 1', 1, interval '0', 'soft_deleted', now() - interval '1 day'),
                       ('due 2', 1, interval '0', 'soft_deleted', now() - interval '1 day'),
                       ('due 3', 1, interval '0', 'soft_deleted', now() - interval '1 day'),
                       ('due 4', 1, interval '0', 'soft_deleted', now() - interval '1 day'),
                       ('due 5', 1, interval '0', 'soft_deleted', now() - interval '1 day'),
                       ('due 6', 1, interval '0', 'soft_deleted', now() - interval '1 day'),
                       ('due 7', 1, interval '0', 'soft_deleted', now() - interval '1 day'))
               as v(label, importance, idle, state, purge_at)
        returning content as label, id`;
      const id = (label: string) => ids.find((r) => r.label === label)!.id;
      // More heap pages than one call's 5 batches of one page.
      await sql`
        insert into public.devai_memories (owner_id, content, memory_type, namespace)
        select ${filler}, 'filler ' || g || ' ' || repeat('x', 1000), 'semantic', 'devai/global' from generate_series(1, 60) g`;

      const decay = await runUntilDone(sql, command("devai-memory-decay"));
      assert.ok(decay.length >= 2, `decay took several calls: ${decay.join(", ")}`);
      assert.deepEqual(decay, ["started", ...decay.slice(1).map(() => "continued")]);
      assert.equal(
        (await runScheduled<StepResult>(sql, command("devai-memory-decay"))).action,
        "idle",
        "decay: one run a night",
      );

      const ttl = await runUntilDone(sql, command("devai-memory-ttl"));
      assert.ok(ttl.length >= 2, `TTL took several calls: ${ttl.join(", ")}`);
      assert.deepEqual(ttl, ["started", ...ttl.slice(1).map(() => "continued")]);
      assert.equal(
        (await runScheduled<StepResult>(sql, command("devai-memory-ttl"))).action,
        "idle",
        "TTL: one run a night",
      );

      const purges: { purged: number; batches: number; remaining: number }[] = [];
      do purges.push(await runScheduled(sql, command("devai-memory-purge"))); while (
        purges.at(-1)!.remaining > 0 && purges.length < 10_000
      );
      assert.ok(purges.length >= 2, "purge took several calls (5 batches of one row each)");
      assert.ok(purges.every((p) => p.batches <= 5));

      const history = await sql<{ content: string; events: string }[]>`
        select m.content, string_agg(h.event || ' by ' || h.actor, ', ' order by h.ts) as events
          from unnest(${ids.map((r) => r.id)}::uuid[], ${ids.map((r) => r.label)}::text[]) as m(id, content)
          join public.memory_history h on h.memory_id = m.id and h.event <> 'ADD'
         group by m.content order by m.content`;
      assert.deepEqual([...history], [
        ...[1, 2, 3, 4, 5, 6, 7].map((n) => ({ content: `due ${n}`, events: "PURGE by cron:purge" })),
        { content: "idle, important", events: "DECAY by cron:decay" },
        { content: "idle, unimportant", events: "DECAY by cron:decay, TTL by cron:ttl" },
      ]);
      const [left] = await sql<{ n: number }[]>`
        select count(*)::int as n from public.devai_memories where owner_id = ${tenant} and content like 'due %'`;
      assert.equal(left?.n, 0, "every due memory was purged");
      const [unimportant] = await sql<{ state: string }[]>`select state from public.devai_memories where id = ${
        id("idle, unimportant")
      }`;
      assert.equal(unimportant?.state, "soft_deleted");
    } finally {
      await settings.restore();
      await sql`delete from memory_private.lifecycle_runs`;
      await removeTenantData(sql, [tenant, filler]);
      await cron.resume();
      await sql.end({ timeout: 5 });
    }
  },
});
