// The local server's background duties (scripts/serve/background.ts): pg_cron schedules translated
// for croner, and the maintenance jobs of public.memory_maintenance_schedules run on their
// schedules when the database has no pg_cron (a scratch database on the test server: pg_cron lives
// only in cron.database_name, so a new database never has it).
import assert from "node:assert/strict";
import { findDrainQueue, startMaintenanceScheduler, toCronerPattern } from "../scripts/serve/background.ts";
import { createSql } from "../supabase/functions/_shared/db.ts";
import { testDatabaseUrl } from "./support/config.ts";

Deno.test("serve background: pg_cron schedules become croner patterns", () => {
  assert.equal(toCronerPattern("0 3 * * *"), "0 3 * * *");
  assert.equal(toCronerPattern("  */5   * * * * "), "*/5 * * * *");
  assert.equal(toCronerPattern("30 seconds"), "*/30 * * * * *");
  assert.equal(toCronerPattern("1 second"), "*/1 * * * * *");
  assert.throws(() => toCronerPattern("90 seconds"), /1-59 seconds/);
});

Deno.test("serve background: the queue worker's drainQueue is found under memory-worker/", async () => {
  const drain = await findDrainQueue(new URL("../supabase/functions/memory-worker", import.meta.url).pathname);
  assert.equal(typeof drain, "function");
  assert.equal(await findDrainQueue("/nonexistent/memory-worker"), undefined);
});

Deno.test("serve background: without pg_cron, maintenance jobs run on their schedules; with it, nothing runs", async () => {
  const admin = createSql(testDatabaseUrl(), { max: 1 });
  const name = `devai_http_nocron_${crypto.randomUUID().slice(0, 8)}`;
  await admin.unsafe(`create database ${name}`);
  const url = new URL(testDatabaseUrl());
  url.pathname = `/${name}`;
  const sql = createSql(url.toString(), { max: 2 });
  const lines: string[] = [];
  try {
    await sql.unsafe(`
      create table public.memory_maintenance_schedules (job_name text primary key, schedule text not null, command text not null);
      create table public.probe (job text, actor text, at timestamptz default now());
      insert into public.memory_maintenance_schedules values
        ('devai-probe', '1 seconds', 'insert into public.probe (job, actor) values (''probe'', current_setting(''memory.actor'', true))'),
        ('devai-nightly', '0 3 * * *', 'insert into public.probe (job) values (''nightly'')'),
        ('devai-broken', 'not a schedule', 'select 1');`);
    const scheduler = await startMaintenanceScheduler(sql, (l) => lines.push(l));
    await new Promise((r) => setTimeout(r, 2_300));
    await scheduler.stop();
    const rows = await sql<{ job: string; actor: string }[]>`select job, actor from public.probe`;
    assert.ok(rows.length >= 1, lines.join("\n"));
    assert.ok(rows.every((r) => r.job === "probe" && r.actor === "cron:devai-probe"), JSON.stringify(rows));
    assert.ok(lines.some((l) => l.includes("devai-nightly scheduled '0 3 * * *'")), lines.join("\n"));
    assert.ok(lines.some((l) => l.includes("devai-broken") && l.includes("skipped")), lines.join("\n"));
    // Stopped means stopped.
    const count = rows.length;
    await new Promise((r) => setTimeout(r, 1_200));
    assert.equal((await sql`select count(*)::int as n from public.probe`)[0]!.n, count);

    // The test database has pg_cron (the migrations created it): the server leaves the jobs to it.
    const [cron] = await admin`select exists (select from pg_extension where extname = 'pg_cron') as present`;
    if (cron!.present) {
      const seen: string[] = [];
      await (await startMaintenanceScheduler(admin, (l) => seen.push(l))).stop();
      assert.ok(seen.some((l) => l.includes("pg_cron is installed")), seen.join("\n"));
    }
  } finally {
    await sql.end();
    await admin.unsafe(`drop database if exists ${name} with (force)`);
    await admin.end();
  }
});
