// Lifecycle: time of the nightly jobs on the loaded corpus, in both forms, and what they do to the
// requests that arrive while they run.
//   - One-shot form (memory_private.run_decay(), run_ttl(), run_purge()): each job runs twice
//     inside one transaction that is rolled back, so the corpus is unchanged for later suites and
//     the second run shows the cost of an idempotent re-run.
//   - Step form (run_decay_step(), run_ttl_step(), run_purge_step(), what pg_cron runs every minute
//     of the job's window, with their default 5 batches per call): one night's run, call after call
//     with no pause between them (pg_cron waits a minute: this is the worst case for the probes).
//     Each call is its own transaction, rolled back here too; the run's progress row is carried to
//     the next call by hand, so every call does on the unchanged corpus what it would do in the
//     real run. Purge has no progress to carry: one call.
//   - While the first run is under way, a probe repeats, for the biggest tenant, what
//     memory-retrieve does in its transaction (match_memories + reinforce_memories of what it
//     found, as the tenant under RLS) and what a remember does (one insert, which bumps the
//     tenant's thread revision); the same probe just before the job is the baseline. The job holds
//     its row locks until it commits: retrieval must not wait on them (reads are MVCC, and
//     reinforcement skips locked rows), writes to rows or revisions the job touched do: for the
//     whole job in the one-shot form, for one call in the step form.
import type postgres from "postgres";
import { asTenant, connect, type Sql } from "../benchdb.ts";
import type { Corpus } from "../corpus.ts";
import { MODEL } from "../corpus.ts";
import { fmt, formatTable, log, now, round, summarize, type Summary, vectorLiteral } from "../lib.ts";

export interface ProbeFigures {
  baseline: { retrieve: Summary; write: Summary };
  duringJob: { retrieve: Summary; write: Summary };
}

export interface LifecycleJob {
  fn: string;
  firstRunMs: number;
  secondRunMs: number;
  result: unknown;
  historyRowsWritten: number;
  probe: ProbeFigures;
}

export interface LifecycleStepJob {
  fn: string;
  calls: number;
  longestCallMs: number;
  allCallsMs: number;
  /** The counts of the calls added up (decay, TTL), or the one purge call's result. */
  result: Record<string, number>;
  historyRowsWritten: number;
  probe: ProbeFigures;
}

export interface LifecycleResult {
  jobs: LifecycleJob[];
  steps: LifecycleStepJob[];
  table: string;
}

const JOBS = ["memory_private.run_decay", "memory_private.run_ttl", "memory_private.run_purge"];
const STEP_JOBS = [
  { fn: "memory_private.run_decay_step", job: "decay", counts: ["decayed", "invalidated"] },
  { fn: "memory_private.run_ttl_step", job: "ttl", counts: ["soft_deleted"] },
  { fn: "memory_private.run_purge_step", job: null, counts: ["purged", "remaining"] },
] as const;
const MAX_STEP_CALLS = 10_000;
const BASELINE_PROBES = 30;
const PROBE_MARK = "bench lifecycle probe";

class Rollback<T> extends Error {
  constructor(readonly value: T) {
    super("rollback");
  }
}

/** Runs fn in a transaction that is rolled back; returns what fn returned. */
async function rolledBack<T>(sql: Sql, fn: (tx: postgres.TransactionSql) => Promise<T>): Promise<T> {
  return await sql.begin(async (tx) => {
    throw new Rollback(await fn(tx));
  }).catch((e) => {
    if (e instanceof Rollback) return e.value as T;
    throw e;
  });
}

interface StepCall {
  ms: number;
  history: number;
  r: Record<string, unknown> & { run?: { next_page: number; total_pages: number; finished: boolean } };
}

/** One night's run of a step job, call after call, each call rolled back (see the header). */
async function stepNight(sql: Sql, step: (typeof STEP_JOBS)[number]): Promise<Omit<LifecycleStepJob, "probe">> {
  const [{ clock } = { clock: new Date() }] = await sql<{ clock: Date }[]>`select now() as clock`;
  if (step.job) await sql`delete from memory_private.lifecycle_runs where job = ${step.job}`;
  const calls: StepCall[] = [];
  let progress: { next_page: number; total_pages: number } | undefined;
  for (let i = 0; i < MAX_STEP_CALLS; i++) {
    const call = await rolledBack(sql, async (tx): Promise<StepCall> => {
      if (step.job && progress) {
        await tx`insert into memory_private.lifecycle_runs (job, clock, next_page, total_pages)
                 values (${step.job}, ${clock}, ${progress.next_page}, ${progress.total_pages})`;
      }
      const [h0] = await tx<{ n: number }[]>`select count(*)::int as n from public.memory_history`;
      const t0 = now();
      const [row] = await tx.unsafe(`select ${step.fn}(5, $1::timestamptz) as r`, [clock.toISOString()]);
      const ms = now() - t0;
      const [h1] = await tx<{ n: number }[]>`select count(*)::int as n from public.memory_history`;
      return { ms, history: (h1?.n ?? 0) - (h0?.n ?? 0), r: row?.r };
    });
    calls.push(call);
    if (!step.job || !call.r.run || call.r.run.finished) break;
    if (call.r.action !== (i === 0 ? "started" : "continued")) {
      throw new Error(`${step.fn}: unexpected ${JSON.stringify(call.r)}`);
    }
    progress = { next_page: call.r.run.next_page, total_pages: call.r.run.total_pages };
  }
  if (step.job) await sql`delete from memory_private.lifecycle_runs where job = ${step.job}`;
  const result = Object.fromEntries(step.counts.map((k) => [k, calls.reduce((n, c) => n + Number(c.r[k] ?? 0), 0)]));
  return {
    fn: step.fn,
    calls: calls.length,
    longestCallMs: round(Math.max(...calls.map((c) => c.ms)), 1),
    allCallsMs: round(calls.reduce((n, c) => n + c.ms, 0), 1),
    result,
    historyRowsWritten: calls.reduce((n, c) => n + c.history, 0),
  };
}

/** The probe columns of a table row: retrieve and write p50/p95/max during (before), probes. */
function probeCells(p: ProbeFigures): string[] {
  const cell = (during: Summary, before: Summary) =>
    `${fmt(during.p50)}/${fmt(during.p95)}/${fmt(during.max)} (${fmt(before.p50)}/${fmt(before.p95)}/${
      fmt(before.max)
    })`;
  return [
    cell(p.duringJob.retrieve, p.baseline.retrieve),
    cell(p.duringJob.write, p.baseline.write),
    String(p.duringJob.retrieve.n),
  ];
}

export async function runLifecycle(sql: Sql, url: string, corpus: Corpus): Promise<LifecycleResult> {
  const tenant = corpus.tenants[0];
  if (!tenant) throw new Error("no tenants");
  const [seed] = await sql<{ i: number }[]>`
    select (metadata->>'bench_i')::int as i from public.devai_memories
     where owner_id = ${tenant.id} and namespace = 'devai/project/task_forge' and is_valid and state = 'active' and embedding_model = ${MODEL}
     order by md5(id::text || 'lifecycle') limit 1`;
  if (!seed) throw new Error("the biggest tenant has no memory in devai/project/task_forge");
  const r = corpus.row(seed.i);
  const vec = vectorLiteral(corpus.query(7_000_000, r.cluster, r.sub));
  const probes = connect(url, 2, "devai-bench-lifecycle-probe");
  let written = 0;

  const retrieveOnce = () =>
    asTenant(probes, tenant.id, async (tx) => {
      const t0 = now();
      const found = await tx<{ id: string }[]>`
      select id from public.match_memories(${vec}::extensions.vector, 'devai/global', 15, 0.7, ${tenant.id}::uuid, ${MODEL},
                                           ${["devai/project/task_forge", "devai/user"]}::text[])`;
      await tx`select count(*) from public.reinforce_memories(${found.map((f) => f.id)}::uuid[])`;
      return now() - t0;
    });
  const writeOnce = () =>
    asTenant(probes, tenant.id, async (tx) => {
      const t0 = now();
      await tx`insert into public.devai_memories (owner_id, content, memory_type, namespace)
             values (${tenant.id}, ${`${PROBE_MARK} ${written++}`}, 'episodic', 'devai/project/task_forge')`;
      return now() - t0;
    });
  const probeWhile = async (running: () => boolean, min: number) => {
    const retrieve: number[] = [], write: number[] = [];
    for (let i = 0; running() || i < min; i++) {
      retrieve.push(await retrieveOnce());
      write.push(await writeOnce());
      if (!running() && i + 1 >= min) break;
    }
    return { retrieve: summarize(retrieve), write: summarize(write) };
  };

  /** Probes before `job`, then while it runs. */
  const probeAround = async <T>(job: () => Promise<T>): Promise<{ figures: T; probe: ProbeFigures }> => {
    const baseline = await probeWhile(() => false, BASELINE_PROBES);
    let done = false;
    const running = job().finally(() => {
      done = true;
    });
    // Let the job take its first locks before probing.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const duringJob = await probeWhile(() => !done, 1);
    return { figures: await running, probe: { baseline, duringJob } };
  };

  const jobs: LifecycleJob[] = [];
  const steps: LifecycleStepJob[] = [];
  try {
    for (const fn of JOBS) {
      const { figures, probe } = await probeAround(() =>
        rolledBack(sql, async (tx) => {
          const [h0] = await tx<{ n: number }[]>`select count(*)::int as n from public.memory_history`;
          const t0 = now();
          const [r1] = await tx.unsafe(`select ${fn}() as r`);
          const t1 = now();
          await tx.unsafe(`select ${fn}() as r`);
          const t2 = now();
          const [h1] = await tx<{ n: number }[]>`select count(*)::int as n from public.memory_history`;
          return {
            fn,
            firstRunMs: round(t1 - t0, 1),
            secondRunMs: round(t2 - t1, 1),
            result: r1?.r,
            historyRowsWritten: (h1?.n ?? 0) - (h0?.n ?? 0),
          };
        })
      );
      jobs.push({ ...figures, probe });
      log(
        `${fn}: ${figures.firstRunMs} ms (re-run ${figures.secondRunMs} ms); retrieve p95 ${
          fmt(probe.duringJob.retrieve.p95)
        } ms during the job (${fmt(probe.baseline.retrieve.p95)} before), write max ${
          fmt(probe.duringJob.write.max)
        } ms`,
      );
    }
    for (const step of STEP_JOBS) {
      const { figures, probe } = await probeAround(() => stepNight(sql, step));
      steps.push({ ...figures, probe });
      log(
        `${step.fn}: ${figures.calls} calls, longest ${figures.longestCallMs} ms, all ${figures.allCallsMs} ms; write max ${
          fmt(probe.duringJob.write.max)
        } ms during the calls`,
      );
    }
  } finally {
    await sql`delete from public.devai_memories where owner_id = ${tenant.id} and content like ${PROBE_MARK + " %"}`;
    await probes.end();
  }

  const table = [
    "## lifecycle jobs (each run twice in one rolled-back transaction; probes = the biggest tenant's requests while the first run is under way)",
    formatTable(
      [
        "job",
        "1st run ms",
        "re-run ms",
        "history rows",
        "retrieve p50/p95/max ms during (before)",
        "write p50/p95/max ms during (before)",
        "probes",
      ],
      jobs.map((j) => [
        j.fn,
        fmt(j.firstRunMs, 1),
        fmt(j.secondRunMs, 1),
        String(j.historyRowsWritten),
        ...probeCells(j.probe),
      ]),
    ),
    "",
    "## lifecycle jobs, step form (what pg_cron runs: 5 batches per call; one night's calls back to back, each rolled back, progress carried over; probes as above)",
    formatTable(
      [
        "job",
        "calls",
        "longest call ms",
        "all calls ms",
        "result",
        "history rows",
        "retrieve p50/p95/max ms during (before)",
        "write p50/p95/max ms during (before)",
        "probes",
      ],
      steps.map((j) => [
        j.fn,
        String(j.calls),
        fmt(j.longestCallMs, 1),
        fmt(j.allCallsMs, 1),
        Object.entries(j.result).map(([k, v]) => `${k} ${v}`).join(", "),
        String(j.historyRowsWritten),
        ...probeCells(j.probe),
      ]),
    ),
  ].join("\n");
  return { jobs, steps, table };
}
