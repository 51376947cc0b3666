// Proves that pg_cron really fires a registered maintenance function on the real server (not
// only that the job rows exist): a stale 'running' job is planted, a temporary job runs
// memory_private.sweep_stale_job_leases() every second, and we poll (bounded) until pg_cron has
// re-queued the job. The temporary job and the planted row are removed in `finally`.
// Needs DATABASE_URL pointing at the database pg_cron runs in (scripts/test.sh sets it); on the
// PGlite backend it is reported as skipped (no pg_cron there).
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import postgres from "postgres";
import { realServerOnly } from "./support/backend.ts";
import { testDatabaseUrl } from "./support/config.ts";

const WAIT_MS = 30_000;
const POLL_MS = 250;

// On the real server pg_cron must be there (the test fails otherwise, it is never skipped there).
Deno.test({
  ...realServerOnly("pg_cron fires the registered lease sweeper on the real server", "PGlite has no pg_cron"),
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const sql = postgres(testDatabaseUrl(), { max: 1, onnotice: () => {} });
    const jobId = randomUUID();
    const ownerId = randomUUID();
    // Not 'devai-' prefixed: the schedules registration unschedules unknown devai- jobs.
    const cronJobName = `test-pg-cron-fires-${jobId.slice(0, 8)}`;
    let cronJobId: number | undefined;
    try {
      // The registered schedules exist (the migration ran) ...
      const registered = await sql<{ jobname: string }[]>`
        select jobname from cron.job where jobname like 'devai-%' and database = current_database() order by jobname`;
      assert.deepEqual(registered.map((r) => r.jobname), [
        "devai-agent-token-prune",
        "devai-context-prune",
        "devai-cron-history-prune",
        "devai-entity-backfill",
        "devai-export-rows-prune",
        "devai-graph-maintenance",
        "devai-job-lease-sweep",
        "devai-job-prune",
        "devai-keyword-statistics",
        "devai-memory-consolidation",
        "devai-memory-decay",
        "devai-memory-purge",
        "devai-memory-ttl",
        "devai-proposal-lapse",
        "devai-rate-limit-prune",
        "devai-scope-count-compaction",
        "devai-session-idle-end",
        "devai-vector-indexes",
      ]);

      // ... and the command of the sweeper job is the one we schedule at second granularity.
      const [sweeper] = await sql<{ command: string }[]>`
        select command from public.memory_maintenance_schedules where job_name = 'devai-job-lease-sweep'`;
      assert.ok(sweeper, "the lease sweeper is in memory_maintenance_schedules");

      await sql`
        insert into public.memory_jobs (id, owner_id, kind, status, idempotency_key, attempts, max_attempts, locked_until, locked_by)
        values (${jobId}, ${ownerId}, 'extract', 'running', ${
        "pg-cron-fires-" + jobId
      }, 1, 5, now() - interval '1 minute', 'dead-worker')`;

      const [scheduled] = await sql<{ jobid: number }[]>`
        select cron.schedule(${cronJobName}, '1 seconds', ${sweeper.command}) as jobid`;
      assert.ok(scheduled && scheduled.jobid > 0, "cron.schedule returned a job id");
      cronJobId = scheduled.jobid;

      const deadline = Date.now() + WAIT_MS;
      let status = "running";
      while (Date.now() < deadline) {
        const [job] = await sql<{ status: string }[]>`select status from public.memory_jobs where id = ${jobId}`;
        status = job?.status ?? "missing";
        if (status !== "running") break;
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
      assert.equal(status, "queued", `pg_cron re-queued the stale job within ${WAIT_MS / 1000} s`);

      const [job] = await sql<{ locked_by: string | null; locked_until: Date | null; last_error: string | null }[]>`
        select locked_by, locked_until, last_error from public.memory_jobs where id = ${jobId}`;
      assert.deepEqual(job, { locked_by: null, locked_until: null, last_error: "lease expired" });

      // pg_cron writes the run's outcome just after the command commits: poll for it too.
      let succeeded = 0;
      while (succeeded === 0 && Date.now() < deadline + 5_000) {
        const [row] = await sql<{ n: number }[]>`
          select count(*)::int as n from cron.job_run_details where jobid = ${cronJobId} and status = 'succeeded'`;
        succeeded = row?.n ?? 0;
        if (succeeded === 0) await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
      assert.ok(succeeded > 0, "cron.job_run_details records a succeeded run of the temporary job");
    } finally {
      await sql`select cron.unschedule(jobid) from cron.job where jobname = ${cronJobName}`;
      if (cronJobId !== undefined) await sql`delete from cron.job_run_details where jobid = ${cronJobId}`;
      await sql`delete from public.memory_jobs where id = ${jobId}`;
      await sql.end();
    }
  },
});

// The nightly jobs are step functions pg_cron calls every minute of an hour window: the registered
// jobs are the table's rows, and pg_cron really runs a step command (as its job's role, in its own
// transaction): a temporary job calls decay's command every second until the run it started is
// recorded in memory_private.lifecycle_runs and cron.job_run_details shows a succeeded call.
Deno.test({
  ...realServerOnly("pg_cron runs the nightly step jobs on their hour windows", "PGlite has no pg_cron"),
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const sql = postgres(testDatabaseUrl(), { max: 1, onnotice: () => {} });
    const cronJobName = `test-pg-cron-step-${randomUUID().slice(0, 8)}`;
    let cronJobId: number | undefined;
    try {
      const registered = await sql<{ jobname: string; schedule: string; command: string }[]>`
        select jobname::text, schedule::text, command::text from cron.job
         where jobname in ('devai-memory-decay', 'devai-memory-ttl', 'devai-memory-purge') and database = current_database()
         order by jobname`;
      assert.deepEqual(registered.map((r) => ({ ...r })), [
        { jobname: "devai-memory-decay", schedule: "* 3 * * *", command: "select memory_private.run_decay_step()" },
        { jobname: "devai-memory-purge", schedule: "* 5 * * *", command: "select memory_private.run_purge_step()" },
        { jobname: "devai-memory-ttl", schedule: "* 4 * * *", command: "select memory_private.run_ttl_step()" },
      ]);

      await sql`delete from memory_private.lifecycle_runs where job = 'decay'`;
      const { command } = registered[0]!;
      const [scheduled] = await sql<
        { jobid: number }[]
      >`select cron.schedule(${cronJobName}, '1 seconds', ${command}) as jobid`;
      assert.ok(scheduled && scheduled.jobid > 0, "cron.schedule returned a job id");
      cronJobId = scheduled.jobid;

      const deadline = Date.now() + WAIT_MS;
      let run: { clock: Date; steps: number } | undefined;
      let succeeded = 0;
      while ((!run || succeeded === 0) && Date.now() < deadline) {
        [run] = await sql<
          { clock: Date; steps: number }[]
        >`select clock, steps from memory_private.lifecycle_runs where job = 'decay'`;
        const [row] = await sql<{ n: number }[]>`
          select count(*)::int as n from cron.job_run_details where jobid = ${cronJobId} and status = 'succeeded'`;
        succeeded = row?.n ?? 0;
        if (!run || succeeded === 0) await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
      assert.ok(run && run.steps >= 1, `pg_cron's call started a decay run within ${WAIT_MS / 1000} s`);
      assert.ok(succeeded > 0, "cron.job_run_details records a succeeded call of the step command");
    } finally {
      await sql`select cron.unschedule(jobid) from cron.job where jobname = ${cronJobName}`;
      if (cronJobId !== undefined) await sql`delete from cron.job_run_details where jobid = ${cronJobId}`;
      await sql`delete from memory_private.lifecycle_runs where job = 'decay'`;
      await sql.end();
    }
  },
});
