// pg_cron stand-in for PGlite: runs the rows of public.memory_maintenance_schedules
// (job_name, schedule, command) on their schedules, the same rows the schedules migration
// registers with pg_cron on a real server (one source of truth). Re-reads the table every
// minute, so a later `supabase db push` that changes schedules is picked up without a restart.
// Schedule syntax as pg_cron: 5-field cron in UTC, '[1-59] seconds', '$' = last day of month,
// and @hourly/@daily/... nicknames. Each run executes `command` as postgres (like pg_cron's job
// owner) outside any transaction (so procedures may COMMIT), between clients' transactions, and
// is recorded in devai_pglite.job_run_details. A job never overlaps itself (pg_cron: at most one
// run of a job at a time).
import { Cron } from "croner";
import type { WireServer } from "./wire-server.ts";

interface Schedule { job_name: string; schedule: string; command: string }

export class MaintenanceScheduler {
  #jobs = new Map<string, { sig: string; stop: () => void }>();
  #running = new Set<string>();
  #reload: ReturnType<typeof setInterval> | undefined;
  #stopped = false;

  constructor(readonly server: WireServer, readonly log: (m: string) => void) {}

  async start(): Promise<void> {
    await this.reload();
    this.#reload = setInterval(() => void this.reload().catch((e) => this.log(`cron: reload failed: ${e.message}`)), 60_000);
  }

  stop(): void {
    this.#stopped = true;
    if (this.#reload) clearInterval(this.#reload);
    for (const j of this.#jobs.values()) j.stop();
    this.#jobs.clear();
  }

  async reload(): Promise<void> {
    const rows = await this.server.exclusive("cron:reload", async (db) => {
      const exists = await db.query<{ t: string | null }>("select to_regclass('public.memory_maintenance_schedules')::text as t");
      if (!exists.rows[0]?.t) return [] as Schedule[];
      return (await db.query<Schedule>("select job_name, schedule, command from public.memory_maintenance_schedules order by job_name")).rows;
    });
    const seen = new Set<string>();
    for (const r of rows) {
      seen.add(r.job_name);
      const sig = `${r.schedule}\u0000${r.command}`;
      if (this.#jobs.get(r.job_name)?.sig === sig) continue;
      this.#jobs.get(r.job_name)?.stop();
      try {
        this.#jobs.set(r.job_name, { sig, stop: this.#schedule(r) });
        this.log(`cron: scheduled ${r.job_name} (${r.schedule})`);
      } catch (err) {
        this.#jobs.delete(r.job_name);
        this.log(`cron: cannot schedule ${r.job_name} '${r.schedule}': ${(err as Error).message}`);
      }
    }
    for (const [name, j] of this.#jobs) {
      if (!seen.has(name)) {
        j.stop();
        this.#jobs.delete(name);
        this.log(`cron: unscheduled ${name}`);
      }
    }
  }

  #schedule(r: Schedule): () => void {
    const seconds = /^\s*(\d+)\s+seconds?\s*$/i.exec(r.schedule);
    if (seconds) {
      const n = Number(seconds[1]);
      if (n < 1 || n > 59) throw new Error("seconds must be between 1 and 59");
      const t = setInterval(() => void this.run(r.job_name), n * 1000);
      return () => clearInterval(t);
    }
    // pg_cron's '$' (last day of month) is croner's 'L'.
    const fields = r.schedule.trim().split(/\s+/);
    if (fields.length === 5 && fields[2] === "$") fields[2] = "L";
    const cron = new Cron(fields.join(" "), { timezone: "UTC" }, () => void this.run(r.job_name));
    return () => cron.stop();
  }

  /** Runs one job now (also used by tests). Returns the run's status. */
  async run(jobName: string): Promise<"succeeded" | "failed" | "skipped"> {
    if (this.#stopped || this.#running.has(jobName)) return "skipped";
    this.#running.add(jobName);
    try {
      return await this.server.exclusive(`cron:${jobName}`, async (db) => {
        const job = (await db.query<Schedule>("select job_name, schedule, command from public.memory_maintenance_schedules where job_name = $1", [jobName])).rows[0];
        if (!job) return "skipped";
        const runid = (await db.query<{ runid: number }>(
          "insert into devai_pglite.job_run_details (job_name, command, status) values ($1, $2, 'running') returning runid",
          [job.job_name, job.command],
        )).rows[0]!.runid;
        let status: "succeeded" | "failed" = "succeeded";
        let message: string | null = null;
        try {
          const results = await db.exec(job.command);
          const last = results.at(-1);
          message = last ? `${last.rows.length} row(s)` : null;
        } catch (err) {
          status = "failed";
          message = (err as Error).message;
          if (db.isInTransaction()) await db.exec("rollback");
          this.log(`cron: ${jobName} failed: ${message}`);
        }
        await db.query("update devai_pglite.job_run_details set status = $2, return_message = $3, end_time = clock_timestamp() where runid = $1", [runid, status, message]);
        return status;
      });
    } finally {
      this.#running.delete(jobName);
    }
  }
}
