// Lifecycle: time of the nightly jobs memory_private.run_decay(), run_ttl(), run_purge() on the
// loaded corpus, and what they do to the requests that arrive while they run.
//   - Each job runs twice inside one transaction that is rolled back, so the corpus is unchanged
//     for later suites and the second run shows the cost of an idempotent re-run.
//   - While the first run is under way, a probe repeats, for the biggest tenant, what
//     memory-retrieve does in its transaction (match_memories + reinforce_memories of what it
//     found, as the tenant under RLS) and what a remember does (one insert, which bumps the
//     tenant's thread revision); the same probe just before the job is the baseline. The job holds
//     its row locks until it commits: retrieval must not wait on them (reads are MVCC, and
//     reinforcement skips locked rows), writes to rows or revisions the job touched do.
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

export interface LifecycleResult {
  jobs: LifecycleJob[];
  table: string;
}

const JOBS = ["memory_private.run_decay", "memory_private.run_ttl", "memory_private.run_purge"];
const BASELINE_PROBES = 30;
const PROBE_MARK = "bench lifecycle probe";

class Rollback extends Error {
  constructor(readonly job: Omit<LifecycleJob, "probe">) {
    super("rollback");
  }
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

  const retrieveOnce = () => asTenant(probes, tenant.id, async (tx) => {
    const t0 = now();
    const found = await tx<{ id: string }[]>`
      select id from public.match_memories(${vec}::extensions.vector, 'devai/global', 15, 0.7, ${tenant.id}::uuid, ${MODEL},
                                           ${["devai/project/task_forge", "devai/user"]}::text[])`;
    await tx`select count(*) from public.reinforce_memories(${found.map((f) => f.id)}::uuid[])`;
    return now() - t0;
  });
  const writeOnce = () => asTenant(probes, tenant.id, async (tx) => {
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

  const jobs: LifecycleJob[] = [];
  try {
    for (const fn of JOBS) {
      const baseline = await probeWhile(() => false, BASELINE_PROBES);
      let done = false;
      const job = sql.begin(async (tx) => {
        const [h0] = await tx<{ n: number }[]>`select count(*)::int as n from public.memory_history`;
        const t0 = now();
        const [r1] = await tx.unsafe(`select ${fn}() as r`);
        const t1 = now();
        await tx.unsafe(`select ${fn}() as r`);
        const t2 = now();
        const [h1] = await tx<{ n: number }[]>`select count(*)::int as n from public.memory_history`;
        throw new Rollback({ fn, firstRunMs: round(t1 - t0, 1), secondRunMs: round(t2 - t1, 1), result: r1?.r, historyRowsWritten: (h1?.n ?? 0) - (h0?.n ?? 0) });
      }).catch((e) => {
        if (e instanceof Rollback) return e.job;
        throw e;
      }).finally(() => {
        done = true;
      });
      // Let the job take its first locks before probing.
      await new Promise((resolve) => setTimeout(resolve, 50));
      const duringJob = await probeWhile(() => !done, 1);
      const figures = await job;
      jobs.push({ ...figures, probe: { baseline, duringJob } });
      log(`${fn}: ${figures.firstRunMs} ms (re-run ${figures.secondRunMs} ms); retrieve p95 ${fmt(duringJob.retrieve.p95)} ms during the job (${fmt(baseline.retrieve.p95)} before), write max ${fmt(duringJob.write.max)} ms`);
    }
  } finally {
    await sql`delete from public.devai_memories where owner_id = ${tenant.id} and content like ${PROBE_MARK + " %"}`;
    await probes.end();
  }

  const table = [
    "## lifecycle jobs (each run twice in one rolled-back transaction; probes = the biggest tenant's requests while the first run is under way)",
    formatTable(
      ["job", "1st run ms", "re-run ms", "history rows", "retrieve p50/p95/max ms during (before)", "write p50/p95/max ms during (before)", "probes"],
      jobs.map((j) => [
        j.fn,
        fmt(j.firstRunMs, 1),
        fmt(j.secondRunMs, 1),
        String(j.historyRowsWritten),
        `${fmt(j.probe.duringJob.retrieve.p50)}/${fmt(j.probe.duringJob.retrieve.p95)}/${fmt(j.probe.duringJob.retrieve.max)} (${fmt(j.probe.baseline.retrieve.p50)}/${fmt(j.probe.baseline.retrieve.p95)}/${fmt(j.probe.baseline.retrieve.max)})`,
        `${fmt(j.probe.duringJob.write.p50)}/${fmt(j.probe.duringJob.write.p95)}/${fmt(j.probe.duringJob.write.max)} (${fmt(j.probe.baseline.write.p50)}/${fmt(j.probe.baseline.write.p95)}/${fmt(j.probe.baseline.write.max)})`,
        String(j.probe.duringJob.retrieve.n),
      ]),
    ),
  ].join("\n");
  return { jobs, table };
}
