// Suite 'handler': latency of the full memory-retrieve handler (auth → validate → embed → one
// statement as the tenant, public.retrieve_for_turn → rank → pack into the token budget → format;
// reinforcement and the memory_events row written behind the answer) WITHOUT the embedding call:
// the injected embedder returns the precomputed corpus vector for the message. Requests are made
// in process (createHandler(deps)(Request)), so no HTTP server is in the loop; the figure is
// handler + database time. Side by side in one run: the default hybrid search, the vector signal
// alone and the keyword signal alone (mode pinned), for the biggest tenant and a small one; 1 and
// 8 clients over both tenants' requests, with the CPU each request cost (bench/cpu.ts); the same
// with reads on a streaming replica when the bench started one (BENCH_READ_DATABASE_URL). A
// failing request fails the run: a benchmark of a broken handler is not a figure.
import { SignJWT } from "jose";
import { createSql, poolOptions } from "../../supabase/functions/_shared/db.ts";
import { preparesStatements } from "../../supabase/functions/_shared/db-prepare.ts";
import { loadConfig } from "../../supabase/functions/_shared/env.ts";
import { createHandler } from "../../supabase/functions/memory-retrieve/handler.ts";
import type { Sql } from "../benchdb.ts";
import type { Corpus } from "../corpus.ts";
import { DIM, MODEL } from "../corpus.ts";
import { fmt, formatTable, log, now, round, runConcurrent, summarize, type Summary } from "../lib.ts";
import { createReadSql, toVectorLiteral, withTenant } from "../../supabase/functions/_shared/db.ts";
import { flushSearchWrites } from "../../supabase/functions/_shared/retrieval/write-behind.ts";
import { drainQueue } from "../../supabase/functions/_shared/drain-queue.ts";
import { cpuMeter } from "../cpu.ts";
import { installSupabaseHybrid } from "../../eval/methods/supabase-hybrid.ts";

export interface HandlerResult {
  table: string;
  [k: string]: unknown;
}

const JWT_SECRET = "devai-bench-jwt-secret-at-least-32-characters-long";

export async function signUserToken(tenantId: string): Promise<string> {
  const t = Math.floor(Date.now() / 1000);
  return await new SignJWT({ role: "authenticated" }).setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject(tenantId).setIssuedAt(t - 5).setExpirationTime(t + 3600).sign(new TextEncoder().encode(JWT_SECRET));
}

export function benchEnv(url: string): Record<string, string> {
  return {
    DATABASE_URL: url,
    SUPABASE_JWT_SECRET: JWT_SECRET,
    EMBEDDING_PROVIDER: "openai",
    EMBEDDING_API_KEY: "unused-bench",
    EMBEDDING_MODEL: MODEL,
    OPENAI_API_KEY: "unused-bench",
    DB_POOL_MAX: "10",
    // The handler pool prepares its statements as a deployment on this URL would (auto, db.ts);
    // DB_PREPARE=off measures a deployment behind a transaction pooler.
    DB_PREPARE: Deno.env.get("DB_PREPARE") ?? "auto",
  };
}

/** An embedder that answers from a table of precomputed vectors (no network, no model). */
export function tableEmbedder(vectors: Map<string, number[]>) {
  return {
    provider: "openai" as const,
    model: MODEL,
    dimensions: DIM,
    embed: (texts: string[]) =>
      Promise.resolve(texts.map((t) => {
        const v = vectors.get(t);
        if (!v) throw new Error(`bench embedder: no vector for ${JSON.stringify(t.slice(0, 60))}`);
        return v;
      })),
  };
}

interface HandlerRun {
  mode: string;
  tenant: string;
  clients: number;
  via: "primary" | "replica";
  summary: Summary;
  /** Requests whose read was its session's first in the run's mode (newSessionReads). */
  newSessionReads: number;
  /** Messages whose median over the run's rounds is above twice the run's p50, of all its messages. */
  slowMessages: { slow: number; of: number };
  qps: number;
  denoCpuMs: number;
  postgresCpuMs: number | null;
}

/** The list `rounds` times over (once when unset). */
function repeated<T>(list: readonly T[], rounds = 1): T[] {
  return Array.from({ length: rounds }, () => list).flat();
}

/**
 * Counts the reads (public.retrieve_for_turn) served on a server session that had not yet read in
 * the run's mode: each pays that session's first call of the mode (plans, catalog entries, index
 * metadata; docs/operations.md#a-pools-connections), so a few of them make a run's p99. From
 * postgres.js's own hooks on the pools: `debug` names the connection a statement is sent on,
 * `onclose` ends its session.
 */
function newSessionReads(pools: Sql[]) {
  const read = new Map<string, Set<string>>(); // pool/connection -> modes its session has read in
  let mode = "", count = 0;
  for (const [i, pool] of pools.entries()) {
    const o = pool.options as unknown as Record<string, unknown>;
    o.debug = (id: number, statement: string) => {
      if (!statement.includes("retrieve_for_turn")) return;
      const modes = read.get(`${i}/${id}`) ?? new Set<string>();
      read.set(`${i}/${id}`, modes);
      if (!modes.has(mode)) (modes.add(mode), count++);
    };
    o.onclose = (id: number) => read.delete(`${i}/${id}`);
  }
  return {
    /** From now on reads are in `m`; the count starts again. */
    start: (m: string) => {
      mode = m;
      count = 0;
    },
    get count() {
      return count;
    },
  };
}

/**
 * How many of a run's messages are slow every time they are asked: their median over the rounds
 * above twice the run's p50. A p95 those messages make is theirs (a question that costs more to
 * answer: its scope holds few answers, and the vector walk went far for them before migration
 * 20261211100000); a p95 no message is slow for is noise from one request to the next.
 */
function slowMessages(times: Map<string, number[]>, p50: number): { slow: number; of: number } {
  const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor((a.length - 1) / 2)] ?? 0;
  return { slow: [...times.values()].filter((t) => median(t) > 2 * p50).length, of: times.size };
}

/** The label of the biggest tenant's rows with an HNSW index of its own. */
const OWN_INDEX = "big, own index";

/** Each target's figure, met or not: one line each. */
function handlerTargets(
  run: (mode: string, which: string, clients: number, via?: string) => HandlerRun | undefined,
  hybridServer: (which: string) => Summary | undefined,
): string[] {
  const lines: string[] = [];
  const mark = (ok: boolean | undefined) => (ok === undefined ? "n/a" : ok ? "met" : "NOT met");
  for (const which of ["big", "small"]) {
    const h = run("hybrid", which, 1), v = run("vector", which, 1), server = hybridServer(which);
    const ratio = h && server ? h.summary.p50 / server.p50 : undefined;
    lines.push(
      `${which} tenant, 1 client: handler p50 ${fmt(h?.summary.p50)} ms = ${fmt(ratio)}x hybrid_search's server p50 ${
        fmt(server?.p50)
      } ms (target <= 2x): ${mark(ratio === undefined ? undefined : ratio <= 2)}`,
    );
    lines.push(
      `${which} tenant, 1 client: handler p95 ${fmt(h?.summary.p95)} ms (target <= 15 ms): ${
        mark(h ? h.summary.p95 <= 15 : undefined)
      }${which === "big" ? " (on the shared index, as before the hourly job builds the tenant its own)" : ""}${
        h ? `; slow messages ${h.slowMessages.slow}/${h.slowMessages.of}` : ""
      }`,
    );
    const growth = h && v ? h.summary.p95 - v.summary.p95 : undefined;
    lines.push(
      `${which} tenant, 1 client: hybrid p95 - vector-only p95 = ${fmt(growth)} ms (target <= 5 ms): ${
        mark(growth === undefined ? undefined : growth <= 5)
      }`,
    );
  }
  const own = run("hybrid", OWN_INDEX, 1), ownVector = run("vector", OWN_INDEX, 1);
  if (own) {
    lines.push(
      `big tenant with its own index (what a deployment has within the hour), 1 client: handler p95 ${
        fmt(own.summary.p95)
      } ms (target <= 15 ms): ${mark(own.summary.p95 <= 15)}; p50 ${fmt(own.summary.p50)} ms; vector-only p95 ${
        fmt(ownVector?.summary.p95)
      } ms`,
    );
  }
  for (const via of ["primary", "replica"]) {
    const one = run("hybrid", "both", 1, via), eight = run("hybrid", "both", 8, via);
    if (!one || !eight) continue;
    const x = eight.qps / one.qps;
    lines.push(
      `hybrid, 8 clients (reads on the ${via}): ${fmt(eight.qps, 1)} req/s = ${fmt(x)}x one client's ${
        fmt(one.qps, 1)
      } (target >= 2.5x): ${mark(x >= 2.5)}; p95 ${fmt(eight.summary.p95)} ms (target <= 60 ms): ${
        mark(eight.summary.p95 <= 60)
      }`,
    );
    if (one.postgresCpuMs !== null) {
      const cpu = one.denoCpuMs + one.postgresCpuMs;
      lines.push(
        `  one client spends ${fmt(cpu)} ms of CPU per request in ${fmt(one.summary.p50)} ms p50: at most ${
          fmt(2000 / cpu, 0)
        } req/s on 2 cores, ${fmt(2000 / cpu / one.qps)}x one client`,
      );
    }
  }
  return lines;
}

export async function runHandler(
  sql: Sql,
  url: string,
  corpus: Corpus,
  opts: { deadline: number; queries: number; readUrl?: string; rounds?: number },
): Promise<HandlerResult> {
  // Queries: messages for the biggest tenant (project task_forge) and a small one.
  const big = corpus.tenants[0], small = corpus.tenants[Math.floor(corpus.tenants.length / 2)];
  if (!big || !small) throw new Error("no tenants");
  const vectors = new Map<string, number[]>();
  const reqs: { tenant: string; which: "big" | "small"; token: string; message: string; project: string }[] = [];
  for (const [ti, t, project] of [[0, big, "task_forge"], [1, small, small.projects[0] ?? "docs"]] as const) {
    const token = await signUserToken(t.id);
    const seeds = await sql<{ i: number }[]>`
      select (metadata->>'bench_i')::int as i from public.devai_memories
       where owner_id = ${t.id} and is_valid and state = 'active' and embedding_model = ${MODEL}
         and (namespace like 'devai/global%' or namespace like 'devai/user%' or namespace like ${
      "devai/project/" + project.replace(/[\\%_]/g, "\\$&") + "%"
    })
       order by md5(id::text || 'handler') limit ${Math.ceil(opts.queries / 2)}`;
    for (const [j, s] of seeds.entries()) {
      const r = corpus.row(s.i);
      const message = `How do we handle ${r.content.split(" (note")[0]?.toLowerCase()}? [h${ti}-${j}]`;
      vectors.set(message, Array.from(corpus.query(4_000_000 + ti * 100_000 + j, r.cluster, r.sub)));
      reqs.push({ tenant: t.id, which: ti === 0 ? "big" : "small", token, message, project });
    }
  }
  const bodyFor = (r: (typeof reqs)[number], mode: string) =>
    JSON.stringify({
      message: r.message,
      project: r.project,
      thread_id: "bench",
      budget_tokens: 2000,
      top_k: 15,
      mode,
    });
  const config = loadConfig(benchEnv(url));
  const app = "devai-bench-handler";
  const pool = createSql(url, poolOptions(config, app));
  const readPool = opts.readUrl ? createReadSql(opts.readUrl, pool, poolOptions(config, app)) : undefined;
  const prepared = preparesStatements(url, config.dbPrepare);
  const sessions = newSessionReads(readPool ? [pool, readPool] : [pool]);
  const handlers = {
    primary: createHandler({ sql: pool, config, embedder: tableEmbedder(vectors) }),
    replica: readPool
      ? createHandler({ sql: pool, readSql: readPool, config, embedder: tableEmbedder(vectors) })
      : undefined,
  };
  const replicaAdmin = opts.readUrl
    ? createSql(opts.readUrl, { max: 1, applicationName: "devai-bench-meter" })
    : undefined;
  const call = async (r: { token: string; body: string }, via: "primary" | "replica" = "primary") => {
    const t0 = now();
    const res = await handlers[via]!(
      new Request("http://bench.local/functions/v1/memory-retrieve", {
        method: "POST",
        headers: { authorization: `Bearer ${r.token}`, "content-type": "application/json" },
        body: r.body,
      }),
    );
    const text = await res.text();
    if (res.status !== 200) throw new Error(`memory-retrieve answered ${res.status}: ${text.slice(0, 300)}`);
    return now() - t0;
  };
  const out: HandlerRun[] = [];
  let ownIndexBuildMs: number | undefined;
  // One run: `which` tenant's messages (both: all of them) in `mode`, by `clients` at once, its
  // row labelled `label`.
  const measure = async (mode: string, which: string, clients: number, via: "primary" | "replica", label = which) => {
    // Each run asks its messages `rounds` times over: a p95 of 50 samples is the third slowest
    // and moved by several ms from run to run.
    const once = reqs.filter((r) => which === "both" || r.which === which).map((r) => ({
      token: r.token,
      body: bodyFor(r, mode),
      message: r.message,
    }));
    const batch = repeated(once, opts.rounds);
    await flushSearchWrites(pool); // the previous run's writes are not this one's work
    const spent = await cpuMeter([
      [sql, [app]],
      ...(replicaAdmin ? [[replicaAdmin, [app + "-read"]] as [Sql, string[]]] : []),
    ]);
    sessions.start(mode);
    const byMessage = new Map<string, number[]>();
    const { ms, wallMs } = await runConcurrent(batch, clients, async (r) => {
      const t = await call(r, via);
      byMessage.set(r.message, [...(byMessage.get(r.message) ?? []), t]);
      return t;
    });
    const newSessions = sessions.count;
    await flushSearchWrites(pool); // what the run left waiting is its work: written in its window
    const cpu = await spent();
    const n = ms.length;
    out.push({
      mode,
      tenant: label,
      clients,
      via,
      summary: summarize(ms),
      newSessionReads: newSessions,
      slowMessages: slowMessages(byMessage, summarize(ms).p50),
      qps: round((n * 1000) / wallMs, 1),
      denoCpuMs: round(cpu.denoMs / n, 2),
      postgresCpuMs: cpu.postgresMs === null ? null : round(cpu.postgresMs / n, 2),
    });
    log(
      `memory-retrieve handler, ${mode}, ${label} tenant(s), ${clients} client(s)${
        via === "replica" ? ", reads on the replica" : ""
      }: p50 ${fmt(summarize(ms).p50)} ms`,
    );
  };
  try {
    for (const r of reqs.slice(0, 3)) await call({ token: r.token, body: bodyFor(r, "hybrid") }); // warm-up (JIT, pool)
    type Run = [string, "big" | "small" | "both", number, "primary" | "replica"];
    const runs: Run[] = [
      ["vector", "big", 1, "primary"],
      ["hybrid", "big", 1, "primary"],
      ["keyword", "big", 1, "primary"],
      ["vector", "small", 1, "primary"],
      ["hybrid", "small", 1, "primary"],
      ["keyword", "small", 1, "primary"],
      ["vector", "both", 1, "primary"],
      ["hybrid", "both", 1, "primary"],
      ["vector", "both", 8, "primary"],
      ["hybrid", "both", 8, "primary"],
      ...(readPool ? [["hybrid", "both", 1, "replica"], ["hybrid", "both", 8, "replica"]] as Run[] : []),
    ];
    for (const [mode, which, clients, via] of runs) {
      if (now() > opts.deadline) break;
      await measure(mode, which, clients, via);
    }
    // The biggest tenant again with an HNSW index of its own
    // (docs/operations.md#a-dedicated-vector-index-for-a-big-tenant), queued as the hourly job queues
    // it (the threshold set to the tenant's size, so at every corpus size it is the one) and built by
    // the worker, dropped after.
    if (now() <= opts.deadline) {
      await sql`delete from public.memory_jobs where kind = 'vector_index' and owner_id = ${big.id}::uuid`; // an earlier run's, same day
      const [own] = await sql<{ drop: string; queued: { build: number } }[]>`
        select public.memory_dedicated_vector_index_sql(${big.id}::uuid, true) as drop,
               memory_private.enqueue_vector_index_jobs(now(), (
                 select count(*)::int from public.devai_memories
                  where owner_id = ${big.id}::uuid and is_valid and state = 'active'
                    and source is distinct from 'conversation')) as queued`;
      if (own!.queued.build < 1) {
        throw new Error(`no index build was queued for the biggest tenant: ${JSON.stringify(own)}`);
      }
      const t0 = now();
      const built = await drainQueue({ sql: pool, config, embedder: tableEmbedder(vectors) }, {
        ownerId: big.id,
        kinds: ["vector_index"],
      });
      if (built.done !== 1) throw new Error(`the worker did not build the index: ${JSON.stringify(built.jobs)}`);
      ownIndexBuildMs = now() - t0;
      await sql`analyze public.devai_memories`;
      try {
        for (const mode of ["vector", "hybrid"]) await measure(mode, "big", 1, "primary", OWN_INDEX);
      } finally {
        await sql.unsafe(own!.drop);
      }
    }
  } finally {
    await pool.end();
    await readPool?.end();
    await replicaAdmin?.end();
  }
  // Side by side in SQL, as the tenant: our hybrid_search and Supabase's documented hybrid_search
  // recipe (eval/sql/supabase_hybrid_search.sql, with a tenant filter) on the same queries. Server
  // time: clock_timestamp() at the end of the statement minus its start (no round trip).
  const sqlOut: { fn: string; tenant: string; summary: Summary; server: Summary }[] = [];
  await installSupabaseHybrid(sql);
  const sqlPool = createSql(url, { max: 2, applicationName: "devai-bench-hybrid-sql" });
  try {
    for (const which of ["big", "small"] as const) {
      const once = reqs.filter((r) => r.which === which);
      // Ours, also with a `when` question's window (the last 7 days: a few hundred of the biggest
      // tenant's 21k memories, which the vector list reads by their creation range).
      for (const fn of ["public.hybrid_search", "public.hybrid_search, last 7 days", "supabase hybrid_search"]) {
        // Ours as many times over as the handler's runs (its p50 is what they are held to); the
        // recipe once (the big tenant's queries take half a second each).
        const ours = fn.startsWith("public.hybrid_search");
        const after = fn.endsWith("last 7 days") ? new Date(Date.now() - 7 * 86_400_000).toISOString() : null;
        const batch = ours ? repeated(once, opts.rounds) : once;
        if (now() > opts.deadline) break;
        const ms: number[] = [], server: number[] = [];
        for (const r of batch) {
          const vec = toVectorLiteral(vectors.get(r.message)!);
          const scopes = ["devai/global", `devai/project/${r.project}`, "devai/user"];
          const t0 = now();
          const [row] = await withTenant(
            sqlPool,
            { tenantId: r.tenant, actor: "bench" },
            (tx) =>
              ours
                ? tx<
                  { ms: number }[]
                >`select (select count(*) from public.hybrid_search(${r.message}, ${vec}::extensions.vector, ${scopes}::text[], 15, 0.1, ${MODEL}, ${r.tenant}::uuid, graph_depth => 1,
                                                                    filter_after => ${after}::timestamptz)) as n,
                                            extract(epoch from clock_timestamp() - statement_timestamp()) * 1000 as ms`
                : tx<
                  { ms: number }[]
                >`select (select count(*) from eval.supabase_hybrid_search(${r.message}, ${vec}::extensions.vector, 15, ${r.tenant}::uuid, ${
                  scopes.map((x) => x + "/")
                }::text[], ${MODEL})) as n,
                                            extract(epoch from clock_timestamp() - statement_timestamp()) * 1000 as ms`,
          );
          ms.push(now() - t0);
          server.push(Number(row!.ms));
        }
        sqlOut.push({ fn, tenant: which, summary: summarize(ms), server: summarize(server) });
      }
    }
  } finally {
    await sqlPool.end();
  }
  const run = (mode: string, which: string, clients: number, via = "primary") =>
    out.find((o) => o.mode === mode && o.tenant === which && o.clients === clients && o.via === via);
  const table = [
    `## memory-retrieve handler (in process, precomputed embedding; includes rank, pack, format; reinforcement and the search event written behind, in each run's window; CPU per request: this process and the pool's Postgres backends; statements ${
      prepared ? "prepared" : "not prepared"
    }, DB_PREPARE=${config.dbPrepare})`,
    formatTable(
      [
        "mode",
        "tenant",
        "clients",
        "reads",
        "n",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "on a new session",
        "slow messages",
        "req/s",
        "cpu ms/req deno",
        "cpu ms/req pg",
        "2-core ceiling req/s",
      ],
      out.map((
        o,
      ) => [
        o.mode,
        o.tenant,
        String(o.clients),
        o.via,
        String(o.summary.n),
        fmt(o.summary.p50),
        fmt(o.summary.p95),
        fmt(o.summary.p99),
        String(o.newSessionReads),
        `${o.slowMessages.slow}/${o.slowMessages.of}`,
        fmt(o.qps, 1),
        fmt(o.denoCpuMs),
        o.postgresCpuMs === null ? "-" : fmt(o.postgresCpuMs),
        o.postgresCpuMs === null ? "-" : fmt(2000 / (o.denoCpuMs + o.postgresCpuMs), 0),
      ]),
    ),
    ``,
    `## hybrid search in SQL, as the tenant (one statement, 1 client): ours vs Supabase's documented recipe; server = inside the statement`,
    formatTable(
      ["function", "tenant", "n", "p50 ms", "p95 ms", "server p50 ms", "server p95 ms"],
      sqlOut.map((
        o,
      ) => [
        o.fn,
        o.tenant,
        String(o.summary.n),
        fmt(o.summary.p50),
        fmt(o.summary.p95),
        fmt(o.server.p50),
        fmt(o.server.p95),
      ]),
    ),
    ``,
    `## targets (issue: retrieval at the database's own speed)`,
    ...handlerTargets(
      run,
      (which) => sqlOut.find((o) => o.fn === "public.hybrid_search" && o.tenant === which)?.server,
    ),
    ...(ownIndexBuildMs === undefined ? [] : [
      `the biggest tenant's own index: queued and built by the worker (CREATE INDEX CONCURRENTLY) in ${
        fmt(ownIndexBuildMs / 1000, 1)
      } s, dropped after its rows`,
    ]),
  ].join("\n");
  return {
    table,
    latency: out,
    sql_latency: sqlOut,
    requests: reqs.length,
    own_index_build_ms: ownIndexBuildMs,
    note:
      "reinforcement and the search event are written behind the answers (write-behind), flushed inside each run's window",
  };
}
