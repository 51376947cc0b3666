// The local server's stand-in for pg_cron (scripts/serve/maintenance-scheduler.ts): pg_cron
// schedules translated for croner, and the rows of public.memory_maintenance_schedules run on
// their schedules when the database has no pg_cron. On the real server the test uses a scratch
// database (pg_cron lives only in cron.database_name, so a new database never has it); on PGlite
// the test database itself has no pg_cron.
import assert from "node:assert/strict";
import { Cron } from "croner";
import { startMaintenanceScheduler, toCronerPattern } from "../scripts/serve/maintenance-scheduler.ts";
import { createSql, type Sql } from "../supabase/functions/_shared/db.ts";
import { realServerOnly, testBackend } from "./support/backend.ts";
import { testDatabaseUrl } from "./support/config.ts";

Deno.test("maintenance scheduler: pg_cron schedules become croner patterns", () => {
  assert.equal(toCronerPattern("0 3 * * *"), "0 3 * * *");
  assert.equal(toCronerPattern("  */5   * * * * "), "*/5 * * * *");
  assert.equal(toCronerPattern("30 seconds"), "*/30 * * * * *");
  assert.equal(toCronerPattern("1 second"), "*/1 * * * * *");
  assert.equal(toCronerPattern("0 4 $ * *"), "0 4 L * *", "pg_cron's last day of the month");
  assert.throws(() => toCronerPattern("90 seconds"), /1-59 seconds/);
});

Deno.test("maintenance scheduler: an hour window ('* 3 * * *', the nightly step jobs) fires every minute of that hour, every day", () => {
  const cron = new Cron(toCronerPattern("* 3 * * *"), { timezone: "UTC", paused: true });
  try {
    assert.deepEqual(cron.nextRuns(3, new Date("2026-03-01T02:59:30Z")).map((d) => d.toISOString()), [
      "2026-03-01T03:00:00.000Z",
      "2026-03-01T03:01:00.000Z",
      "2026-03-01T03:02:00.000Z",
    ]);
    assert.equal(cron.nextRun(new Date("2026-03-01T03:58:30Z"))?.toISOString(), "2026-03-01T03:59:00.000Z");
    assert.equal(
      cron.nextRun(new Date("2026-03-01T03:59:30Z"))?.toISOString(),
      "2026-03-02T03:00:00.000Z",
      "then not before the next night",
    );
  } finally {
    cron.stop();
  }
});

/** A database without pg_cron that has a memory_maintenance_schedules table, and a probe table. */
async function databaseWithoutPgCron(): Promise<{ sql: Sql; probe: string; done(): Promise<void> }> {
  const probe = `scheduler_probe_${crypto.randomUUID().slice(0, 8)}`;
  if (testBackend === "pglite") {
    const sql = createSql(testDatabaseUrl(), { max: 2 });
    await sql.unsafe(`create table public.${probe} (job text, actor text, at timestamptz default now())`);
    return {
      sql,
      probe,
      async done() {
        await sql`delete from public.memory_maintenance_schedules where job_name like 'devai-probe-%'`;
        await sql.unsafe(`drop table public.${probe}`);
        await sql`delete from memory_private.lifecycle_runs`;
        await sql.end();
      },
    };
  }
  const admin = createSql(testDatabaseUrl(), { max: 1 });
  const name = `devai_nocron_${crypto.randomUUID().slice(0, 8)}`;
  await admin.unsafe(`create database ${name}`);
  const url = new URL(testDatabaseUrl());
  url.pathname = `/${name}`;
  const sql = createSql(url.toString(), { max: 2 });
  await sql.unsafe(`
    create table public.memory_maintenance_schedules (job_name text primary key, schedule text not null, command text not null, description text not null);
    create table public.${probe} (job text, actor text, at timestamptz default now());`);
  return {
    sql,
    probe,
    async done() {
      await sql.end();
      await admin.unsafe(`drop database if exists ${name} with (force)`);
      await admin.end();
    },
  };
}

/** Log lines as events: resolves when `count` lines matching `pattern` have been logged. */
function logWatcher() {
  const lines: string[] = [];
  const waiters: { pattern: RegExp; count: number; resolve: () => void }[] = [];
  const matching = (pattern: RegExp) => lines.filter((l) => pattern.test(l)).length;
  return {
    lines,
    log(line: string) {
      lines.push(line);
      for (const w of waiters.filter((w) => matching(w.pattern) >= w.count)) w.resolve();
    },
    /** Resolves once `more` further lines match pattern (counted from now). */
    next(pattern: RegExp, more = 1): Promise<void> {
      const { promise, resolve } = Promise.withResolvers<void>();
      waiters.push({ pattern, count: matching(pattern) + more, resolve });
      return promise;
    },
  };
}

Deno.test("maintenance scheduler: without pg_cron, scheduled rows run (UTC, as cron:<job>), reload picks up changes, stop stops", async () => {
  const { sql, probe, done } = await databaseWithoutPgCron();
  const watch = logWatcher();
  const lines = watch.lines;
  const insertProbe = (job: string) =>
    `insert into public.${probe} (job, actor) values ('${job}', current_setting('memory.actor', true))`;
  try {
    // fast's run is slow on purpose (a busy query before its insert), so a reload often meets one in flight.
    await sql`
      insert into public.memory_maintenance_schedules (job_name, schedule, command, description) values
        ('devai-probe-fast', '1 seconds', ${`select count(*) from generate_series(1, 300000); ${
      insertProbe("fast")
    }`}, 'test probe'),
        ('devai-probe-tick', '1 seconds', ${insertProbe("tick")}, 'test probe'),
        ('devai-probe-nightly', '0 3 * * *', ${insertProbe("nightly")}, 'test probe'),
        ('devai-probe-broken', 'not a schedule', 'select 1', 'test probe')`;
    const firstRun = watch.next(/devai-probe-fast ok/);
    const scheduler = await startMaintenanceScheduler(sql, (l) => watch.log(l));
    assert.ok(scheduler, lines.join("\n"));
    try {
      await firstRun; // an event, not a delay: the one-second job has run
      const rows = await sql.unsafe<{ job: string; actor: string }[]>(
        `select job, actor from public.${probe} where job = 'fast'`,
      );
      assert.ok(rows.length >= 1, lines.join("\n"));
      assert.ok(rows.every((r) => r.actor === "cron:devai-probe-fast"), JSON.stringify(rows));
      assert.ok(lines.some((l) => l.includes("devai-probe-nightly scheduled '0 3 * * *' UTC")), lines.join("\n"));
      assert.ok(lines.some((l) => l.includes("devai-probe-broken") && l.includes("skipped")), lines.join("\n"));

      // A job can be run by hand; a failing command is reported, not thrown.
      assert.equal(await scheduler.runNow("devai-probe-nightly"), "succeeded");
      assert.equal(await scheduler.runNow("devai-no-such-job"), "skipped");
      if (testBackend === "pglite") {
        // The test database itself: the real nightly jobs, step forms on hour windows, run here too.
        assert.ok(lines.some((l) => l.includes("devai-memory-decay scheduled '* 3 * * *' UTC")), lines.join("\n"));
        for (const job of ["devai-memory-decay", "devai-memory-ttl", "devai-memory-purge"]) {
          assert.equal(await scheduler.runNow(job), "succeeded", lines.join("\n"));
        }
        const runs = await sql<{ job: string }[]>`select job from memory_private.lifecycle_runs order by job`;
        assert.deepEqual(runs.map((r) => r.job), ["decay", "ttl"], "the decay and TTL calls started their runs");
      }

      // Removing a row unschedules it at the next reload (every minute; here at once). Right after
      // a tick, fast's (slower) run of the same second is usually still going: reload waits for it.
      await watch.next(/devai-probe-tick ok/);
      await sql`delete from public.memory_maintenance_schedules where job_name = 'devai-probe-fast'`;
      await scheduler.reload();
      assert.ok(lines.some((l) => l.includes("devai-probe-fast unscheduled")), lines.join("\n"));
      const fastRuns = async () =>
        (await sql.unsafe<{ n: number }[]>(`select count(*)::int as n from public.${probe} where job = 'fast'`))[0]!.n;
      const before = await fastRuns();
      // Two more runs of the job still scheduled every second: fast would have run meanwhile.
      await watch.next(/devai-probe-tick ok/, 2);
      assert.equal(await fastRuns(), before, "an unscheduled job does not run again, nor does a run of it land late");
    } finally {
      await scheduler.stop();
    }
  } finally {
    await done();
  }
});

Deno.test("queue worker: stop() returns once the drain in flight has ended", async () => {
  const { startQueueWorker } = await import("../scripts/serve/background.ts");
  const { writeEnv } = await import("./write_helpers.ts");
  const { reply } = await import("./fake_openai.ts");
  const { createHandler } = await import("../supabase/functions/memory-extract/handler.ts");
  const { userHeaders } = await import("./support/auth.ts");
  const env = await writeEnv();
  const answer = Promise.withResolvers<void>();
  try {
    const tenant = crypto.randomUUID();
    env.fake.onChat(
      "What from this conversation",
      reply.until(answer.promise, reply.json({ stored: [], filtered: [] })),
    );
    const extract = createHandler({ ...env.deps, kickWorker: () => Promise.resolve() });
    const res = await extract(
      new Request("http://localhost/functions/v1/memory-extract", {
        method: "POST",
        headers: await userHeaders(tenant),
        body: JSON.stringify({
          session_id: "s-stop",
          messages: [{ role: "user", content: "The build uses esbuild." }],
        }),
      }),
    );
    const { job_id } = await res.json();
    const worker = startQueueWorker({
      deps: env.deps,
      intervalMs: 50,
      workerId: "stop-test",
      log: () => {},
      ownerId: tenant,
    });
    await env.fake.chatRequestsReceived(1); // a drain is in flight, waiting for the model
    let stopped = false;
    const stopping = worker.stop().then(() => (stopped = true));
    await env.sql`select 1`; // a round trip: stop() had every chance to return early
    assert.equal(stopped, false, "stop() waits for the drain");
    answer.resolve();
    await stopping;
    const [job] = await env.sql<{ status: string }[]>`select status from public.memory_jobs where id = ${job_id}`;
    assert.equal(job!.status, "done", "the drain finished its job before stop() returned");
  } finally {
    answer.resolve();
    await env.close();
  }
});

Deno.test({
  ...realServerOnly(
    "maintenance scheduler: where pg_cron is installed, the server leaves the jobs to the database",
    "PGlite has no pg_cron",
  ),
  fn: async () => {
    const sql = createSql(testDatabaseUrl(), { max: 1 });
    try {
      const lines: string[] = [];
      assert.equal(await startMaintenanceScheduler(sql, (l) => lines.push(l)), undefined);
      assert.ok(lines.some((l) => l.includes("pg_cron is installed")), lines.join("\n"));
    } finally {
      await sql.end();
    }
  },
});

Deno.test("queue worker: after an outage it says it drains again, and says each failure once per outage", async () => {
  // The worker logs a failure once per run of failed drains (scripts/serve/background.ts), so the
  // log also says when the run ends: the database is back and the queue drains again.
  const { startQueueWorker } = await import("../scripts/serve/background.ts");
  const { writeEnv } = await import("./write_helpers.ts");
  const { startPgProxy } = await import("./support/pg-proxy.ts");
  const { waitUntil } = await import("./support/wait.ts");
  const env = await writeEnv();
  const proxy = startPgProxy(testDatabaseUrl());
  const sql = createSql(proxy.url, { max: 2 });
  const lines: string[] = [];
  const worker = startQueueWorker({
    deps: { ...env.deps, sql },
    intervalMs: 20,
    workerId: "outage-test",
    log: (l) => lines.push(l),
    ownerId: crypto.randomUUID(),
  });
  try {
    const from = proxy.connections();
    await waitUntil(() => Promise.resolve(proxy.connections() > from), "a drain connected");
    proxy.down();
    await waitUntil(
      () => Promise.resolve(lines.some((l) => l.startsWith("[worker] drain failed"))),
      "the outage logged",
    );
    proxy.up();
    const back = await waitUntil(
      () => Promise.resolve(lines.find((l) => /^\[worker\] draining again after \d+ failed drain\(s\)$/.test(l))),
      "the recovery logged",
    );
    assert.ok(back);
    const failures = lines.filter((l) => l.startsWith("[worker] drain failed"));
    assert.equal(new Set(failures).size, failures.length, failures.join("\n"));
  } finally {
    await worker.stop();
    await sql.end({ timeout: 1 });
    proxy.close();
    await env.close();
  }
});

Deno.test("queue worker: an outage whose every drain fails with a new message keeps the last MAX_FAILURES_SAID of them", async () => {
  const { DrainFailures, MAX_FAILURES_SAID } = await import("../scripts/serve/background.ts");
  const failures = new DrainFailures();
  const logged = Array.from({ length: 3 * MAX_FAILURES_SAID }, (_, i) => failures.failed(`timeout at drain ${i}`));
  assert.equal(logged.filter(Boolean).length, 3 * MAX_FAILURES_SAID, "each new message is logged");
  assert.equal(failures.said, MAX_FAILURES_SAID, "only the last ones are kept");
  assert.equal(
    failures.failed(`timeout at drain ${3 * MAX_FAILURES_SAID - 1}`),
    false,
    "a recent one is not said again",
  );
  assert.equal(failures.failed("timeout at drain 0"), true, "one dropped long ago is said again");
  assert.equal(failures.succeeded(), 3 * MAX_FAILURES_SAID + 2);
  assert.equal(failures.said, 0);
  assert.equal(failures.succeeded(), 0);
});
