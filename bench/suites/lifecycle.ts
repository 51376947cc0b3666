// Lifecycle: time of the nightly jobs memory_private.run_decay(), run_ttl(), run_purge() on the
// loaded corpus. Each job runs twice inside one transaction that is rolled back, so the corpus is
// unchanged for later suites and the second run shows the cost of an idempotent re-run.
import type { Sql } from "../benchdb.ts";
import { log, now, round } from "../lib.ts";

export interface LifecycleJob {
  fn: string;
  status: "ok" | "missing" | "error";
  firstRunMs?: number;
  secondRunMs?: number;
  result?: unknown;
  historyRowsWritten?: number;
  error?: string;
}

export interface LifecycleResult {
  skipped?: string;
  jobs: LifecycleJob[];
}

const JOBS = ["memory_private.run_decay", "memory_private.run_ttl", "memory_private.run_purge"];

export async function runLifecycle(sql: Sql): Promise<LifecycleResult> {
  const found = await sql<{ fn: string; kind: string; args: string }[]>`
    select n.nspname || '.' || p.proname as fn, p.prokind::text as kind, pg_get_function_arguments(p.oid) as args
      from pg_proc p join pg_namespace n on n.oid = p.pronamespace
     where n.nspname || '.' || p.proname = any(${JOBS}::text[])`;
  if (found.length === 0) {
    const msg = "memory_private.run_decay/run_ttl/run_purge do not exist yet (lifecycle migration 20261122001*_lifecycle*.sql not applied): suite skipped";
    log(msg);
    return { skipped: msg, jobs: JOBS.map((fn) => ({ fn, status: "missing" as const })) };
  }
  const jobs: LifecycleJob[] = [];
  for (const fn of JOBS) {
    const f = found.find((x) => x.fn === fn);
    if (!f) { jobs.push({ fn, status: "missing" }); continue; }
    if (f.kind !== "f" || f.args.split(",").some((a) => a.trim() && !/default/i.test(a))) {
      jobs.push({ fn, status: "error", error: `unsupported signature (${f.kind}: ${f.args}); expected a function callable with no arguments` });
      continue;
    }
    try {
      const job = await sql.begin(async (tx) => {
        const [h0] = await tx<{ n: number }[]>`select count(*)::int as n from public.memory_history`;
        const t0 = now();
        const [r1] = await tx.unsafe(`select ${fn}() as r`);
        const t1 = now();
        await tx.unsafe(`select ${fn}() as r`);
        const t2 = now();
        const [h1] = await tx<{ n: number }[]>`select count(*)::int as n from public.memory_history`;
        throw new RollbackWith({ fn, status: "ok", firstRunMs: round(t1 - t0, 1), secondRunMs: round(t2 - t1, 1), result: r1?.r, historyRowsWritten: (h1?.n ?? 0) - (h0?.n ?? 0) });
      });
      jobs.push(job as LifecycleJob);
    } catch (e) {
      if (e instanceof RollbackWith) jobs.push(e.job);
      else jobs.push({ fn, status: "error", error: e instanceof Error ? e.message : String(e) });
    }
    log(`${fn}: ${JSON.stringify(jobs[jobs.length - 1])}`);
  }
  return { jobs };
}

class RollbackWith extends Error {
  constructor(readonly job: LifecycleJob) {
    super("rollback");
  }
}
