// Suite 'handler': latency of the full memory-retrieve handler (auth → validate → embed → one
// hybrid_search call as the tenant → rank → pack into the token budget → format → reinforce →
// memory_events row) WITHOUT the embedding call: the injected embedder returns the precomputed
// corpus vector for the message. Requests are made in process (createHandler(deps)(Request)), so
// no HTTP server is in the loop; the figure is handler + database time. Side by side in one run:
// the default hybrid search, the vector signal alone and the keyword signal alone (mode pinned),
// for the biggest tenant and a small one. A failing request fails the run: a benchmark of a
// broken handler is not a figure.
import { SignJWT } from "jose";
import { createSql } from "../../supabase/functions/_shared/db.ts";
import { loadConfig } from "../../supabase/functions/_shared/env.ts";
import { createHandler } from "../../supabase/functions/memory-retrieve/handler.ts";
import type { Sql } from "../benchdb.ts";
import type { Corpus } from "../corpus.ts";
import { DIM, MODEL } from "../corpus.ts";
import { fmt, formatTable, log, now, round, runConcurrent, summarize, type Summary } from "../lib.ts";
import { toVectorLiteral, withTenant } from "../../supabase/functions/_shared/db.ts";
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
  return { DATABASE_URL: url, SUPABASE_JWT_SECRET: JWT_SECRET, EMBEDDING_PROVIDER: "openai", EMBEDDING_API_KEY: "unused-bench", EMBEDDING_MODEL: MODEL, OPENAI_API_KEY: "unused-bench", DB_POOL_MAX: "10" };
}

/** An embedder that answers from a table of precomputed vectors (no network, no model). */
export function tableEmbedder(vectors: Map<string, number[]>) {
  return {
    provider: "openai" as const,
    model: MODEL,
    dimensions: DIM,
    embed: (texts: string[]) => Promise.resolve(texts.map((t) => {
      const v = vectors.get(t);
      if (!v) throw new Error(`bench embedder: no vector for ${JSON.stringify(t.slice(0, 60))}`);
      return v;
    })),
  };
}

export async function runHandler(sql: Sql, url: string, corpus: Corpus, opts: { deadline: number; queries: number }): Promise<HandlerResult> {
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
         and (namespace like 'devai/global%' or namespace like 'devai/user%' or namespace like ${"devai/project/" + project.replace(/[\\%_]/g, "\\$&") + "%"})
       order by md5(id::text || 'handler') limit ${Math.ceil(opts.queries / 2)}`;
    for (const [j, s] of seeds.entries()) {
      const r = corpus.row(s.i);
      const message = `How do we handle ${r.content.split(" (note")[0]?.toLowerCase()}? [h${ti}-${j}]`;
      vectors.set(message, Array.from(corpus.query(4_000_000 + ti * 100_000 + j, r.cluster, r.sub)));
      reqs.push({ tenant: t.id, which: ti === 0 ? "big" : "small", token, message, project });
    }
  }
  const bodyFor = (r: (typeof reqs)[number], mode: string) =>
    JSON.stringify({ message: r.message, project: r.project, thread_id: "bench", budget_tokens: 2000, top_k: 15, mode });
  const config = loadConfig(benchEnv(url));
  const pool = createSql(url, { max: 10, applicationName: "devai-bench-handler" });
  const handler = createHandler({ sql: pool, config, embedder: tableEmbedder(vectors) });
  const call = async (r: { token: string; body: string }) => {
    const t0 = now();
    const res = await handler(new Request("http://bench.local/functions/v1/memory-retrieve", {
      method: "POST", headers: { authorization: `Bearer ${r.token}`, "content-type": "application/json" }, body: r.body,
    }));
    const text = await res.text();
    if (res.status !== 200) throw new Error(`memory-retrieve answered ${res.status}: ${text.slice(0, 300)}`);
    return now() - t0;
  };
  const out: { mode: string; tenant: string; clients: number; summary: Summary; qps: number }[] = [];
  try {
    for (const r of reqs.slice(0, 3)) await call({ token: r.token, body: bodyFor(r, "hybrid") }); // warm-up (JIT, pool)
    const runs: [string, "big" | "small" | "both", number][] = [
      ["vector", "big", 1], ["hybrid", "big", 1], ["keyword", "big", 1],
      ["vector", "small", 1], ["hybrid", "small", 1], ["keyword", "small", 1],
      ["vector", "both", 8], ["hybrid", "both", 8],
    ];
    for (const [mode, which, clients] of runs) {
      if (now() > opts.deadline) break;
      const batch = reqs.filter((r) => which === "both" || r.which === which).map((r) => ({ token: r.token, body: bodyFor(r, mode) }));
      const { ms, wallMs } = await runConcurrent(batch, clients, (r) => call(r));
      out.push({ mode, tenant: which, clients, summary: summarize(ms), qps: round((ms.length * 1000) / wallMs, 1) });
      log(`memory-retrieve handler, ${mode}, ${which} tenant(s), ${clients} client(s): p50 ${fmt(summarize(ms).p50)} ms`);
    }
  } finally {
    await pool.end();
  }
  // Side by side in SQL, as the tenant: our hybrid_search and Supabase's documented hybrid_search
  // recipe (eval/sql/supabase_hybrid_search.sql, with a tenant filter) on the same queries.
  const sqlOut: { fn: string; tenant: string; summary: Summary }[] = [];
  await installSupabaseHybrid(sql);
  const sqlPool = createSql(url, { max: 2, applicationName: "devai-bench-hybrid-sql" });
  try {
    for (const which of ["big", "small"] as const) {
      const batch = reqs.filter((r) => r.which === which);
      for (const fn of ["public.hybrid_search", "supabase hybrid_search"]) {
        if (now() > opts.deadline) break;
        const ms: number[] = [];
        for (const r of batch) {
          const vec = toVectorLiteral(vectors.get(r.message)!);
          const scopes = ["devai/global", `devai/project/${r.project}`, "devai/user"];
          const t0 = now();
          await withTenant(sqlPool, { tenantId: r.tenant, actor: "bench" }, (tx) =>
            fn === "public.hybrid_search"
              ? tx`select id from public.hybrid_search(${r.message}, ${vec}::extensions.vector, ${scopes}::text[], 15, 0.1, ${MODEL}, ${r.tenant}::uuid, graph_depth => 1)`
              : tx`select id from eval.supabase_hybrid_search(${r.message}, ${vec}::extensions.vector, 15, ${r.tenant}::uuid, ${scopes.map((x) => x + "/")}::text[], ${MODEL})`);
          ms.push(now() - t0);
        }
        sqlOut.push({ fn, tenant: which, summary: summarize(ms) });
      }
    }
  } finally {
    await sqlPool.end();
  }
  const p95Of = (mode: string, which: string) => out.find((o) => o.mode === mode && o.tenant === which && o.clients === 1)?.summary.p95;
  const growth = ["big", "small"].map((w) => {
    const h = p95Of("hybrid", w), v = p95Of("vector", w);
    return h !== undefined && v !== undefined ? `${w} tenant ${fmt(h - v)} ms` : `${w} tenant n/a`;
  }).join(", ");
  const table = [
    `## memory-retrieve handler (in process, precomputed embedding; includes rank, pack, format, reinforce, events)`,
    formatTable(["mode", "tenant", "clients", "n", "p50 ms", "p95 ms", "p99 ms", "req/s"],
      out.map((o) => [o.mode, o.tenant, String(o.clients), String(o.summary.n), fmt(o.summary.p50), fmt(o.summary.p95), fmt(o.summary.p99), fmt(o.qps, 1)])),
    `hybrid p95 minus vector-only p95 (1 client): ${growth}`,
    ``,
    `## hybrid search in SQL, as the tenant (one statement, 1 client): ours vs Supabase's documented recipe`,
    formatTable(["function", "tenant", "n", "p50 ms", "p95 ms"], sqlOut.map((o) => [o.fn, o.tenant, String(o.summary.n), fmt(o.summary.p50), fmt(o.summary.p95)])),
  ].join("\n");
  return { table, latency: out, sql_latency: sqlOut, requests: reqs.length, note: "reinforcement writes (access_count, last_accessed_at) happen in each request, as in production" };
}
