// The durable queue on the real database: enqueue by the service for the transaction's tenant, idempotency, claim with SKIP LOCKED,
// lease expiry (a crashed worker's job is taken again, or parked dead on its last attempt),
// exponential backoff, dead after max attempts, completion only by the lease holder.
import assert from "node:assert/strict";
import { realServerOnly } from "./support/backend.ts";
import { withTenant } from "../supabase/functions/_shared/db.ts";
import { claimJobs, completeJob, enqueueJob, failJob } from "../supabase/functions/_shared/jobs.ts";
import { drainQueue } from "../supabase/functions/_shared/drain-queue.ts";
import { reply } from "./fake_openai.ts";
import { newTenant, testSql } from "./support/seed.ts";
import { waitUntil } from "./support/wait.ts";
import { jobsOf, writeEnv } from "./write_helpers.ts";

const sql = testSql(6);

async function enqueue(tenant: string, key: string, maxAttempts = 5) {
  return await withTenant(
    sql,
    { tenantId: tenant, actor: "test" },
    (tx) =>
      enqueueJob(tx, { ownerId: tenant, kind: "dedup", idempotencyKey: key, payload: { candidates: [] }, maxAttempts }),
  );
}

Deno.test("jobs: enqueue is idempotent per (owner, kind, key) and tenant-scoped", async () => {
  const tenant = newTenant();
  const a = await enqueue(tenant, "k1");
  const b = await enqueue(tenant, "k1");
  assert.equal(a.deduplicated, false);
  assert.equal(b.deduplicated, true);
  assert.equal(b.id, a.id);
  const other = await enqueue(newTenant(), "k1");
  assert.notEqual(other.id, a.id, "keys are per tenant");
  // A tenant cannot enqueue for someone else, nor insert a pre-claimed job.
  await assert.rejects(
    withTenant(
      sql,
      { tenantId: tenant, actor: "test" },
      (tx) => enqueueJob(tx, { ownerId: newTenant(), kind: "dedup", idempotencyKey: "x", payload: {} }),
    ),
    /a tenant queues its own jobs only/,
  );
  await assert.rejects(
    withTenant(
      sql,
      { tenantId: tenant, actor: "test" },
      (tx) =>
        tx`insert into public.memory_jobs (owner_id, kind, idempotency_key, status) values (${tenant}, 'dedup', 'y', 'running')`,
    ),
    /permission denied/,
  );
});

Deno.test("jobs: enqueue runs as the service, and the rest of the tenant's transaction as the tenant again", async () => {
  const tenant = newTenant();
  const other = newTenant();
  await enqueue(other, "theirs");
  // db.ts asService switches to the pool's login role for the queueing only: a statement after it
  // that ran as that role would bypass row level security (another tenant's job would be seen).
  const after = await withTenant(sql, { tenantId: tenant, actor: "test" }, async (tx) => {
    await enqueueJob(tx, { ownerId: tenant, kind: "dedup", idempotencyKey: "mine", payload: {} });
    const [row] = await tx<{ role: string; uid: string; theirs: number }[]>`
      select current_user::text as role, auth.uid()::text as uid,
             (select count(*)::int from public.memory_jobs where owner_id = ${other}) as theirs`;
    return row!;
  });
  assert.deepEqual({ ...after }, { role: "authenticated", uid: tenant, theirs: 0 });
});

Deno.test("jobs: a queueing that fails before reaching the database leaves the transaction as the tenant", async () => {
  const tenant = newTenant();
  const other = newTenant();
  await enqueue(other, "theirs");
  // A payload postgres.js cannot serialize fails inside asService without aborting the transaction:
  // a caller that catches it and goes on must not go on as the pool's login role (no RLS).
  const after = await withTenant(sql, { tenantId: tenant, actor: "test" }, async (tx) => {
    await assert.rejects(
      enqueueJob(tx, { ownerId: tenant, kind: "dedup", idempotencyKey: "big", payload: { n: 1n } }),
      /serialize a BigInt/,
    );
    const [row] = await tx<{ role: string; theirs: number }[]>`
      select current_user::text as role,
             (select count(*)::int from public.memory_jobs where owner_id = ${other}) as theirs`;
    return row!;
  });
  assert.deepEqual({ ...after }, { role: "authenticated", theirs: 0 });
});

Deno.test({
  ...realServerOnly(
    "jobs: a job deleted between the queueing's conflict and its read is queued anew (enqueue_job's retry)",
    "two transactions open at once",
  ),
}, async () => {
  const tenant = newTenant();
  const { id: old } = await enqueue(tenant, "pruned");
  // Nothing in enqueue_job waits between its INSERT (which meets the old job: DO NOTHING) and its
  // read of that job, so the test holds it there: a statement trigger of the test's, for this
  // tenant's inserts only, waits on a lock the test holds. Meanwhile the old job is deleted, as
  // devai-job-prune or an operator deletes finished jobs, and commits; the read then finds nothing.
  const LOCK = 7_342_120;
  const fn = `public.zz_hold_job_insert_${tenant.replaceAll("-", "")}`;
  const holder = await sql.reserve();
  try {
    await sql.unsafe(`
      create or replace function ${fn}() returns trigger language plpgsql as $$ begin
        if (select auth.uid()) = '${tenant}' then perform pg_advisory_xact_lock(${LOCK}); end if;
        return null;
      end $$;
      create or replace trigger zz_hold_job_insert after insert on public.memory_jobs for each statement execute function ${fn}();`);
    await holder`select pg_advisory_lock(${LOCK})`;
    const queueing = enqueue(tenant, "pruned");
    await waitUntil(
      async () =>
        (await sql`select 1 from pg_locks where locktype = 'advisory' and objid = ${LOCK} and not granted`).length > 0,
      "the queueing to wait after its INSERT",
      { pollMs: 20 },
    );
    assert.equal((await sql`delete from public.memory_jobs where id = ${old} returning id`).length, 1);
    await holder`select pg_advisory_unlock(${LOCK})`;
    const queued = await queueing;
    assert.equal(queued.deduplicated, false);
    assert.notEqual(queued.id, old);
    const [row] = await sql`select idempotency_key, status from public.memory_jobs where id = ${queued.id}`;
    assert.deepEqual({ ...row }, { idempotency_key: "pruned", status: "queued" });
  } finally {
    await holder`select pg_advisory_unlock_all()`;
    holder.release();
    await sql.unsafe(
      `drop trigger if exists zz_hold_job_insert on public.memory_jobs; drop function if exists ${fn}();`,
    );
  }
});

Deno.test("jobs: concurrent claimers never get the same job (FOR UPDATE SKIP LOCKED)", async () => {
  const tenant = newTenant();
  for (let i = 0; i < 12; i++) await enqueue(tenant, `c${i}`);
  const claims = await Promise.all(
    Array.from({ length: 6 }, (_, w) => claimJobs(sql, { workerId: `w${w}`, limit: 3, ownerId: tenant })),
  );
  const ids = claims.flat().map((j) => j.id);
  assert.equal(ids.length, 12);
  assert.equal(new Set(ids).size, 12);
  for (const j of claims.flat()) {
    assert.equal(j.status, "running");
    assert.equal(j.attempts, 1);
    assert.ok(j.locked_until && j.locked_until > new Date());
  }
  assert.equal((await claimJobs(sql, { workerId: "late", limit: 5, ownerId: tenant })).length, 0);
});

Deno.test({
  ...realServerOnly(
    "jobs: a claim held open by a worker neither blocks nor is shared with the next claimer (SKIP LOCKED)",
    "two transactions open at once",
  ),
}, async () => {
  const tenant = newTenant();
  await enqueue(tenant, "held-1");
  await enqueue(tenant, "held-2");
  const held = Promise.withResolvers<string>();
  const release = Promise.withResolvers<void>();
  const first = sql.begin(async (tx) => {
    const [job] = await claimJobs(tx, { workerId: "slow", ownerId: tenant });
    held.resolve(job!.id);
    await release.promise; // its transaction (and row lock) stays open
  });
  const heldId = await held.promise;
  try {
    const other = await sql.begin(async (tx) => {
      await tx`set local lock_timeout = '500ms'`; // plain FOR UPDATE would wait here
      return await claimJobs(tx, { workerId: "fast", limit: 5, ownerId: tenant });
    });
    assert.equal(other.length, 1);
    assert.notEqual(other[0]!.id, heldId);
  } finally {
    release.resolve();
    await first;
  }
});

Deno.test({
  ...realServerOnly(
    "jobs: a claim of some kinds passes a job another claim holds and still takes as many as are free",
    "two transactions open at once",
  ),
}, async () => {
  // A claim of some kinds finds its jobs without locking them, then locks them (migration
  // 20261205200000): one that a claim still open holds is skipped, and the claim picks again in fair
  // order rather than take fewer jobs than are free (docs/operations.md#job-queue).
  const tenant = newTenant();
  for (const key of ["kind-1", "kind-2", "kind-3"]) await enqueue(tenant, key);
  const held = Promise.withResolvers<string>();
  const release = Promise.withResolvers<void>();
  const first = sql.begin(async (tx) => {
    const [job] = await claimJobs(tx, { workerId: "slow", kinds: ["dedup"], ownerId: tenant });
    held.resolve(job!.id);
    await release.promise; // its transaction (and row lock) stays open
  });
  const heldId = await held.promise;
  try {
    const other = await claimJobs(sql, { workerId: "fast", limit: 2, kinds: ["dedup"], ownerId: tenant });
    assert.equal(other.length, 2, "both free jobs taken");
    assert.ok(other.every((j) => j.id !== heldId));
  } finally {
    release.resolve();
    await first;
  }
});

Deno.test("jobs: an expired lease is claimed again; on its last attempt it is parked dead", async () => {
  const tenant = newTenant();
  const { id } = await enqueue(tenant, "lease", 2);
  const [first] = await claimJobs(sql, { workerId: "crashy", leaseSeconds: 1, ownerId: tenant });
  assert.equal(first!.id, id);
  await sql`update public.memory_jobs set locked_until = now() - interval '1 second' where id = ${id}`;
  const [second] = await claimJobs(sql, { workerId: "rescuer", leaseSeconds: 1, ownerId: tenant });
  assert.equal(second!.id, id);
  assert.equal(second!.attempts, 2);
  assert.equal(await completeJob(sql, id, "crashy", {}), false, "the old holder cannot complete it");
  await sql`update public.memory_jobs set locked_until = now() - interval '1 second' where id = ${id}`;
  assert.equal((await claimJobs(sql, { workerId: "third", ownerId: tenant })).length, 0);
  const [row] = await sql`select status, last_error from public.memory_jobs where id = ${id}`;
  assert.equal(row!.status, "dead");
  assert.match(row!.last_error, /lease of worker rescuer expired on attempt 2\/2/);
});

Deno.test("jobs: failures back off exponentially, then the job is dead with the last error", async () => {
  const tenant = newTenant();
  const { id } = await enqueue(tenant, "backoff", 3);
  const delays: number[] = [];
  for (let attempt = 1; attempt <= 3; attempt++) {
    await sql`update public.memory_jobs set run_after = now() where id = ${id} and status = 'queued'`;
    const [job] = await claimJobs(sql, { workerId: "w", ownerId: tenant });
    assert.equal(job!.attempts, attempt);
    const status = await failJob(sql, id, "w", `boom ${attempt}`, { backoffBaseMs: 10_000 });
    const [row] =
      await sql`select status, extract(epoch from run_after - now())::float8 as delay, last_error from public.memory_jobs where id = ${id}`;
    assert.equal(status, row!.status);
    if (attempt < 3) {
      assert.equal(row!.status, "queued");
      delays.push(row!.delay);
    } else {
      assert.equal(row!.status, "dead");
      assert.equal(row!.last_error, "boom 3");
    }
  }
  assert.ok(Math.abs(delays[0]! - 10) < 1.5 && Math.abs(delays[1]! - 20) < 1.5, `delays ${delays}`);
  assert.equal(await failJob(sql, id, "w", "again"), undefined, "a dead job is not failed again");
});

Deno.test("jobs: a job done at a retry no longer shows the failed attempt's error", async () => {
  const tenant = newTenant();
  const { id } = await enqueue(tenant, "done-after-failure");
  await claimJobs(sql, { workerId: "w", ownerId: tenant });
  assert.equal(await failJob(sql, id, "w", "boom 1", { backoffBaseMs: 10 }), "queued");
  await sql`update public.memory_jobs set run_after = now() where id = ${id}`;
  const [job] = await claimJobs(sql, { workerId: "w", ownerId: tenant });
  assert.equal(job!.last_error, "boom 1", "a running retry still says why the last attempt failed");
  assert.equal(await completeJob(sql, id, "w", { ok: true }), true);
  const [row] = await sql`select status, attempts, last_error, result from public.memory_jobs where id = ${id}`;
  // The retries it took stay in attempts.
  assert.deepEqual({ ...row }, { status: "done", attempts: 2, last_error: null, result: { ok: true } });
});

Deno.test("jobs: a worker facing a rate-limited LLM retries in-call, then postpones the job (not dead, its attempt given back)", async () => {
  const env = await writeEnv({ llm: { retry: { maxRetries: 2, baseDelayMs: 5, maxDelayMs: 20 } } });
  try {
    const tenant = newTenant();
    env.fake.onChat("What from this conversation", reply.error(429, { retryAfter: 0 }));
    await withTenant(
      env.sql,
      { tenantId: tenant, actor: "test" },
      (tx) =>
        enqueueJob(tx, {
          ownerId: tenant,
          kind: "extract",
          idempotencyKey: "rl",
          payload: { session_id: "s", messages: [{ role: "user", content: "Use pnpm." }] },
        }),
    );
    const report = await drainQueue(env.deps, { workerId: "w", ownerId: tenant, backoffBaseMs: 60_000 });
    assert.deepEqual([report.postponed, report.retried, report.dead], [1, 0, 0], JSON.stringify(report));
    assert.equal(env.fake.chatRequests().length, 3, "1 try + 2 in-call retries");
    // A 429 says "not now", never what the job holds: no probe (llm-outage.ts), the attempt given back.
    assert.equal(env.fake.probeRequests().length, 0);
    const [job] = await jobsOf(env.sql, tenant);
    assert.deepEqual([job!.status, job!.attempts], ["queued", 0]);
    assert.match(job!.last_error!, /^provider unavailable: .*HTTP 429/);
    const [row] = await env
      .sql`select run_after > now() + interval '20 seconds' as later from public.memory_jobs where id = ${job!.id}`;
    assert.ok(row!.later, "waits (postpone_job's first wait, 30 s)");
    // Once the provider recovers, the job completes.
    env.fake.reset();
    env.fake.onChat("What from this conversation", reply.json({ stored: [], filtered: [] }));
    await env.sql`update public.memory_jobs set run_after = now() where id = ${job!.id}`;
    const again = await drainQueue(env.deps, { workerId: "w", ownerId: tenant });
    assert.equal(again.done, 1);
  } finally {
    await env.close();
  }
});

Deno.test("jobs: close pool", async () => {
  await sql.end();
});
