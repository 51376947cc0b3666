// What Supabase runs in the background, run by the local server instead:
//  - the queue worker (memory-worker's drain function) on a short timer, as pg_cron + pg_net would
//    call the memory-worker endpoint in production;
//  - when the database has no pg_cron, the maintenance jobs listed in
//    public.memory_maintenance_schedules (decay, TTL, purge, sweeps), each on its cron schedule.
import { pathToFileURL } from "node:url";
import { Cron } from "croner";
import type { Sql } from "../../supabase/functions/_shared/db.ts";
import type { HandlerDeps } from "./functions.ts";

export type Log = (line: string) => void;

export interface Stoppable {
  stop(): Promise<void>;
}

const NOTHING: Stoppable = { stop: () => Promise.resolve() };

type DrainFn = (deps: HandlerDeps, opts: { maxJobs: number; workerId: string }) => Promise<unknown>;

/** The module under memory-worker/ that exports drainQueue, if any. */
export async function findDrainQueue(workerDir: string): Promise<DrainFn | undefined> {
  let files: string[];
  try {
    files = [];
    for await (const e of Deno.readDir(workerDir)) if (e.isFile && e.name.endsWith(".ts") && !e.name.endsWith(".test.ts")) files.push(e.name);
  } catch {
    return undefined;
  }
  // handler.ts first, then the others in name order; index.ts is skipped (it calls Deno.serve).
  files.sort((a, b) => (a === "handler.ts" ? -1 : b === "handler.ts" ? 1 : a.localeCompare(b)));
  for (const name of files) {
    if (name === "index.ts") continue;
    const path = `${workerDir}/${name}`;
    const text = await Deno.readTextFile(path);
    if (!/export\s+(async\s+function\s+|function\s+|const\s+|let\s+)drainQueue\b|export\s*\{[^}]*\bdrainQueue\b/.test(text)) continue;
    const mod = await import(pathToFileURL(path).href) as { drainQueue?: unknown };
    if (typeof mod.drainQueue === "function") return mod.drainQueue as DrainFn;
  }
  return undefined;
}

/** Something worth a log line: a drain that did work (or reported failures). */
function summarize(result: unknown): string | undefined {
  if (typeof result === "number") return result > 0 ? `${result} job(s)` : undefined;
  if (Array.isArray(result)) return result.length > 0 ? `${result.length} job(s)` : undefined;
  if (result && typeof result === "object") {
    const numbers = Object.entries(result as Record<string, unknown>).filter(([, v]) => typeof v === "number");
    if (numbers.some(([, v]) => (v as number) > 0)) return numbers.map(([k, v]) => `${k}=${v}`).join(" ");
  }
  return undefined;
}

export async function startQueueWorker(opts: {
  workerDir: string;
  deps: HandlerDeps;
  intervalMs: number;
  maxJobs?: number;
  workerId: string;
  log: Log;
}): Promise<Stoppable> {
  let drain: DrainFn | undefined;
  try {
    drain = await findDrainQueue(opts.workerDir);
  } catch (err) {
    opts.log(`[worker] cannot load the queue worker: ${(err as Error).message}; jobs stay queued`);
    return NOTHING;
  }
  if (!drain) {
    opts.log("[worker] no drainQueue export under supabase/functions/memory-worker/: queued jobs are not processed by this server");
    return NOTHING;
  }
  const drainFn = drain;
  let stopped = false;
  let running: Promise<void> | undefined;
  let lastError = "";
  const tick = () => {
    if (stopped || running) return; // never two drains at once
    running = (async () => {
      const started = performance.now();
      try {
        const summary = summarize(await drainFn(opts.deps, { maxJobs: opts.maxJobs ?? 25, workerId: opts.workerId }));
        if (summary) opts.log(`[worker] ${summary} (${Math.round(performance.now() - started)}ms)`);
        lastError = "";
      } catch (err) {
        const message = (err as Error).message ?? String(err);
        if (message !== lastError) opts.log(`[worker] drain failed: ${message}`); // once per distinct error, not every 2 s
        lastError = message;
      }
    })().finally(() => {
      running = undefined;
    });
  };
  const timer = setInterval(tick, opts.intervalMs);
  opts.log(`[worker] draining memory_jobs every ${opts.intervalMs / 1000}s as ${opts.workerId}`);
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}

/**
 * pg_cron's schedule syntax → croner's: five-field cron passes through; pg_cron's '[1-59] seconds'
 * interval becomes a six-field pattern with seconds.
 */
export function toCronerPattern(schedule: string): string {
  const s = schedule.trim();
  const seconds = /^(\d{1,2})\s+seconds?$/i.exec(s);
  if (seconds) {
    const n = Number(seconds[1]);
    if (n < 1 || n > 59) throw new Error(`'${schedule}': pg_cron accepts 1-59 seconds`);
    return `*/${n} * * * * *`;
  }
  return s.replace(/\s+/g, " ");
}

interface ScheduleRow {
  job_name: string;
  schedule: string;
  command: string;
  enabled?: boolean;
  active?: boolean;
}

export async function startMaintenanceScheduler(sql: Sql, log: Log): Promise<Stoppable> {
  const [state] = await sql<{ has_cron: boolean; has_table: boolean }[]>`
    select exists (select from pg_extension where extname = 'pg_cron') as has_cron,
           to_regclass('public.memory_maintenance_schedules') is not null as has_table`;
  if (state?.has_cron) {
    log("[cron] pg_cron is installed: the database runs the maintenance jobs itself");
    return NOTHING;
  }
  if (!state?.has_table) {
    log("[cron] no pg_cron and no public.memory_maintenance_schedules table: no maintenance jobs to run");
    return NOTHING;
  }
  const rows = await sql<ScheduleRow[]>`select * from public.memory_maintenance_schedules order by job_name`;
  const jobs: Cron[] = [];
  const inFlight = new Set<Promise<unknown>>();
  for (const row of rows) {
    if (row.enabled === false || row.active === false) continue;
    let pattern: string;
    try {
      pattern = toCronerPattern(row.schedule);
    } catch (err) {
      log(`[cron] ${row.job_name}: ${(err as Error).message}; skipped`);
      continue;
    }
    const run = async () => {
      const started = performance.now();
      try {
        await sql.begin(async (tx) => {
          await tx`select set_config('memory.actor', ${`cron:${row.job_name}`}, true)`;
          await tx.unsafe(row.command);
        });
        log(`[cron] ${row.job_name} ok (${Math.round(performance.now() - started)}ms)`);
      } catch (err) {
        log(`[cron] ${row.job_name} failed: ${(err as Error).message}`);
      }
    };
    try {
      jobs.push(
        new Cron(pattern, { name: `devai-${row.job_name}`, protect: true }, () => {
          const p = run();
          inFlight.add(p);
          return p.finally(() => inFlight.delete(p));
        }),
      );
      log(`[cron] ${row.job_name} scheduled '${row.schedule}' (no pg_cron in this database)`);
    } catch (err) {
      log(`[cron] ${row.job_name}: bad schedule '${row.schedule}': ${(err as Error).message}; skipped`);
    }
  }
  return {
    async stop() {
      for (const job of jobs) job.stop();
      await Promise.allSettled([...inFlight]);
    },
  };
}
