// pg_cron's stand-in for databases without it (PGlite, a plain Postgres): runs the rows of
// public.memory_maintenance_schedules (job_name, schedule, command) on their schedules. They are
// the same rows the schedules migration registers with pg_cron on a real server, so there is one
// source of truth. Where pg_cron is installed the database runs them itself and this does nothing.
//
// As pg_cron does: schedules are in UTC; 5-field cron, '[1-59] seconds', '$' (last day of the
// month) and @daily-style nicknames; a job never overlaps itself; a run missed while the server
// was down is not made up. Each run is one transaction with memory.actor = 'cron:<job_name>', so
// the history names the job. The table is re-read every minute: a migration that changes a
// schedule takes effect without a restart.
import { Cron } from "croner";
import type { Sql } from "../../supabase/functions/_shared/db.ts";

export type Log = (line: string) => void;

export interface MaintenanceScheduler {
  /** Re-reads the schedules now (also done every minute); resolves once runs of unscheduled or changed jobs have ended. */
  reload(): Promise<void>;
  /** Runs one job now, unless it is already running; "skipped" when it is, or unknown. */
  runNow(jobName: string): Promise<"succeeded" | "failed" | "skipped">;
  /** Stops scheduling; resolves once every run in flight has ended. */
  stop(): Promise<void>;
}

interface ScheduleRow {
  job_name: string;
  schedule: string;
  command: string;
}

const RELOAD_MS = 60_000;

/**
 * pg_cron's schedule syntax → croner's: five-field cron passes through ('$' becomes croner's 'L');
 * pg_cron's '[1-59] seconds' interval becomes a six-field pattern with seconds.
 */
export function toCronerPattern(schedule: string): string {
  const s = schedule.trim();
  const seconds = /^(\d{1,2})\s+seconds?$/i.exec(s);
  if (seconds) {
    const n = Number(seconds[1]);
    if (n < 1 || n > 59) throw new Error(`'${schedule}': pg_cron accepts 1-59 seconds`);
    return `*/${n} * * * * *`;
  }
  const fields = s.split(/\s+/);
  if (fields.length === 5 && fields[2] === "$") fields[2] = "L";
  return fields.join(" ");
}

/** Starts the scheduler, or returns undefined (saying why) when the database schedules itself. */
export async function startMaintenanceScheduler(sql: Sql, log: Log): Promise<MaintenanceScheduler | undefined> {
  const [state] = await sql<{ has_cron: boolean; has_table: boolean }[]>`
    select exists (select from pg_extension where extname = 'pg_cron') as has_cron,
           to_regclass('public.memory_maintenance_schedules') is not null as has_table`;
  if (state?.has_cron) {
    log("[cron] pg_cron is installed: the database runs the maintenance jobs itself");
    return undefined;
  }
  if (!state?.has_table) {
    log("[cron] no pg_cron and no public.memory_maintenance_schedules table: no maintenance jobs to run");
    return undefined;
  }

  const jobs = new Map<string, { signature: string; cron: Cron }>();
  const running = new Map<string, Promise<"succeeded" | "failed">>();
  let stopped = false;

  const run = (row: ScheduleRow): Promise<"succeeded" | "failed" | "skipped"> => {
    if (stopped) return Promise.resolve("skipped");
    if (running.has(row.job_name)) return Promise.resolve("skipped");
    const p = (async () => {
      const started = performance.now();
      try {
        await sql.begin(async (tx) => {
          await tx`select set_config('memory.actor', ${`cron:${row.job_name}`}, true)`;
          await tx.unsafe(row.command);
        });
        log(`[cron] ${row.job_name} ok (${Math.round(performance.now() - started)}ms)`);
        return "succeeded" as const;
      } catch (err) {
        log(`[cron] ${row.job_name} failed: ${(err as Error).message}`);
        return "failed" as const;
      } finally {
        running.delete(row.job_name);
      }
    })();
    running.set(row.job_name, p);
    return p;
  };

  // A job unscheduled or changed by a reload may be running: the reload returns once that run has
  // ended, so after reload() nothing of the old schedule lands any more.
  const reload = async () => {
    const rows = await sql<ScheduleRow[]>`
      select job_name, schedule, command from public.memory_maintenance_schedules order by job_name`;
    const seen = new Set<string>();
    const ending: Promise<unknown>[] = [];
    for (const row of rows) {
      seen.add(row.job_name);
      const signature = `${row.schedule}\u0000${row.command}`;
      if (jobs.get(row.job_name)?.signature === signature) continue;
      if (jobs.has(row.job_name)) ending.push(running.get(row.job_name) ?? Promise.resolve());
      jobs.get(row.job_name)?.cron.stop();
      jobs.delete(row.job_name);
      try {
        const cron = new Cron(
          toCronerPattern(row.schedule),
          { name: row.job_name, timezone: "UTC" },
          () => void run(row),
        );
        jobs.set(row.job_name, { signature, cron });
        log(`[cron] ${row.job_name} scheduled '${row.schedule}' UTC (no pg_cron in this database)`);
      } catch (err) {
        log(`[cron] ${row.job_name}: bad schedule '${row.schedule}': ${(err as Error).message}; skipped`);
      }
    }
    for (const [name, job] of jobs) {
      if (seen.has(name)) continue;
      job.cron.stop();
      jobs.delete(name);
      ending.push(running.get(name) ?? Promise.resolve());
      log(`[cron] ${name} unscheduled (no longer in public.memory_maintenance_schedules)`);
    }
    await Promise.allSettled(ending);
  };

  await reload();
  const timer = setInterval(
    () => void reload().catch((err) => log(`[cron] reload failed: ${(err as Error).message}`)),
    RELOAD_MS,
  );

  return {
    reload,
    async runNow(jobName) {
      const [row] = await sql<ScheduleRow[]>`
        select job_name, schedule, command from public.memory_maintenance_schedules where job_name = ${jobName}`;
      return row ? await run(row) : "skipped";
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      for (const job of jobs.values()) job.cron.stop();
      jobs.clear();
      await Promise.allSettled([...running.values()]);
    },
  };
}
