// Suite 'write': the write path with an instantly answering fake LLM (in process, no HTTP).
//   remember   POST /memory/remember through the memory function's handler (in process, injected
//              embedder): the hot-path ingest of one user-stated fact (seed 003 target < 50 ms)
//   dedup      dedup jobs (5 candidates each) drained by the worker (memory-worker/drain.ts →
//              memory-dedup/dedup.ts): candidates/s including neighbour search, the LLM decision
//              (instant), the write, history triggers and relation linking; and drain time per
//              relation edge created (an upper bound of the per-edge cost: seed target <= 2 ms/edge)
// Skips with a message when those modules do not exist (older checkout).
import type { z } from "zod";
import type { Sql } from "../benchdb.ts";
import type { Corpus } from "../corpus.ts";
import { DIM, MODEL } from "../corpus.ts";
import { fmt, formatTable, hashString, log, now, rawVectorFor, round, summarize } from "../lib.ts";
import { benchEnv, signUserToken } from "./handler.ts";

export interface WriteResult {
  skipped?: string;
  table: string;
  [k: string]: unknown;
}

const here = (p: string) => new URL(`../../supabase/functions/${p}`, import.meta.url);

async function exists(u: URL): Promise<boolean> {
  try {
    await Deno.stat(u);
    return true;
  } catch {
    return false;
  }
}

/** Embedder from a table of known vectors; unknown texts (merged contents) get a hash-seeded vector. */
function embedderFrom(vectors: Map<string, number[]>) {
  return {
    provider: "openai" as const,
    model: MODEL,
    dimensions: DIM,
    embed: (texts: string[]) => Promise.resolve(texts.map((t) => vectors.get(t) ?? Array.from(rawVectorFor(hashString(t))))),
  };
}

/** The fake LLM: answers every dedup prompt at once, cycling ADD, ADD, UPDATE [0], NOOP. */
function instantLlm() {
  let n = 0;
  const usage = { promptTokens: 0, completionTokens: 0, totalTokens: 0, requests: 0 };
  return {
    model: "bench-instant",
    get totalUsage() {
      return usage;
    },
    completeJson<S extends z.ZodType>(schema: S, messages: { content: string }[]) {
      usage.requests++;
      const k = n++ % 4;
      const last = messages[messages.length - 1]?.content ?? "";
      const cand = /NEW candidate \([^)]*\): (.*?)\n/s.exec(last)?.[1] ?? "merged memory";
      const raw = k === 3 ? { action: "NOOP", target: 0, reason: "bench" }
        : k === 2 ? { action: "UPDATE", target: 0, content: `${cand} (merged)`, reason: "bench" }
        : { action: "ADD", target: null, reason: "bench" };
      return Promise.resolve({ value: schema.parse(raw) as z.infer<S>, usage: { ...usage, requests: 1 }, model: "bench-instant", repaired: false });
    },
  };
}

export async function runWrite(sql: Sql, url: string, corpus: Corpus, opts: { deadline: number; candidates: number }): Promise<WriteResult> {
  const need = ["memory/handler.ts", "memory-worker/drain.ts", "_shared/jobs.ts", "_shared/db.ts", "_shared/env.ts"];
  for (const p of need) if (!(await exists(here(p)))) return { skipped: `supabase/functions/${p} does not exist yet`, table: "" };
  // deno-lint-ignore no-explicit-any
  let memory: any, drain: any, jobs: any, db: any, env: any;
  try {
    [memory, drain, jobs, db, env] = await Promise.all(need.map((p) => import(here(p).href)));
  } catch (e) {
    return { skipped: `write-path modules do not load: ${e instanceof Error ? e.message : e}`, table: "" };
  }
  const big = corpus.tenants[0];
  if (!big) throw new Error("no tenants");
  const config = env.loadConfig(benchEnv(url));
  const pool = db.createSql(url, { max: 10, applicationName: "devai-bench-write" });
  const vectors = new Map<string, number[]>();
  const seeds = await sql<{ i: number }[]>`
    select (metadata->>'bench_i')::int as i from public.devai_memories
     where owner_id = ${big.id} and namespace = 'devai/project/task_forge' and is_valid and state = 'active' and embedding_model = ${MODEL}
     order by md5(id::text || 'write') limit ${opts.candidates}`;
  const result: Record<string, unknown> = {};
  const rows: string[][] = [];
  try {
    // 1. remember hot path.
    const token = await signUserToken(big.id);
    const handler = memory.createHandler({ sql: pool, config, embedder: embedderFrom(vectors) }) as (r: Request) => Promise<Response>;
    const rememberMs: number[] = [];
    const n = Math.min(seeds.length, Math.max(10, Math.floor(opts.candidates / 2)));
    for (let j = 0; j < n + 3; j++) {
      if (now() > opts.deadline) break;
      const r = corpus.row(seeds[j % seeds.length]?.i ?? 0);
      const content = `Remember: ${r.content.split(" (note")[0]} [bench remember ${j}]`;
      vectors.set(content, Array.from(corpus.query(5_000_000 + j, r.cluster, r.sub)));
      const t0 = now();
      const res = await handler(new Request("http://bench.local/memory/remember", {
        method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ content, project: "task_forge" }),
      }));
      const body = await res.text();
      if (res.status !== 201 && res.status !== 200) throw new Error(`remember answered ${res.status}: ${body.slice(0, 300)}`);
      if (j >= 3) rememberMs.push(now() - t0); // the first 3 warm up
    }
    const rs = summarize(rememberMs);
    result.remember = rs;
    rows.push(["remember (POST /memory/remember, in process)", String(rs.n), fmt(rs.p50), fmt(rs.p95), fmt(rs.p99), "target < 50 ms p50"]);
    log(`remember p50 ${fmt(rs.p50)} ms`);

    // 2. dedup throughput: jobs of 5 candidates near existing memories (similarity ~0.85-0.95).
    const candidates = seeds.map((s, j) => {
      const r = corpus.row(s.i);
      const content = `${r.content.split(" (note")[0]} (candidate ${j})`;
      vectors.set(content, Array.from(corpus.query(6_000_000 + j, r.cluster, r.sub)));
      return { content, type: "semantic", namespace: "devai/project/task_forge", source: "discovery", priority: "medium", importance: 3 };
    });
    const batches: typeof candidates[] = [];
    for (let i = 0; i < candidates.length; i += 5) batches.push(candidates.slice(i, i + 5));
    const runId = `bench-${Date.now()}`;
    for (const [k, b] of batches.entries()) {
      await db.withTenant(pool, { tenantId: big.id, actor: "bench" }, (tx: unknown) =>
        jobs.enqueueJob(tx, { ownerId: big.id, kind: "dedup", idempotencyKey: `${runId}-${k}`, payload: { candidates: b, origin: "api" } }));
    }
    const [e0] = await sql<{ n: number }[]>`select count(*)::int as n from public.memory_relations where owner_id = ${big.id}`;
    const llm = instantLlm();
    const t0 = now();
    const report = await drain.drainQueue({ sql: pool, config, embedder: embedderFrom(vectors), llm }, { workerId: "bench-worker", maxJobs: batches.length + 5, backoffBaseMs: 0, ownerId: big.id });
    const drainMs = now() - t0;
    const [e1] = await sql<{ n: number }[]>`select count(*)::int as n from public.memory_relations where owner_id = ${big.id}`;
    const edges = (e1?.n ?? 0) - (e0?.n ?? 0);
    const perCandidate = drainMs / (candidates.length || 1);
    result.dedup = {
      candidates: candidates.length, jobs: batches.length, report: { claimed: report.claimed, done: report.done, retried: report.retried, dead: report.dead },
      drainMs: round(drainMs, 1), candidatesPerSecond: round((candidates.length * 1000) / drainMs, 1), msPerCandidate: round(perCandidate, 2),
      relationEdgesCreated: edges, drainMsPerEdgeUpperBound: edges ? round(drainMs / edges, 2) : null, llmCalls: llm.totalUsage.requests,
    };
    rows.push(["dedup worker: candidates/s (fake LLM, 5 per job)", String(candidates.length), fmt(perCandidate) + " ms/cand", "", "", `${fmt((candidates.length * 1000) / drainMs, 1)} cand/s, ${llm.totalUsage.requests} LLM calls, ${report.dead} dead jobs`]);
    rows.push(["dedup worker: drain time per relation edge (upper bound)", String(edges), edges ? fmt(drainMs / edges) : "-", "", "", "seed target <= 2 ms/edge (for linking alone)"]);
    log(`dedup: ${candidates.length} candidates in ${fmt(drainMs, 0)} ms, ${edges} edges`);
  } catch (e) {
    await pool.end();
    return { skipped: `write path failed: ${e instanceof Error ? e.message : e}`, table: "", partial: result };
  }
  await pool.end();
  const table = [`## write path (in process, fake LLM answering instantly, precomputed embeddings)`, formatTable(["operation", "n", "p50 ms", "p95 ms", "p99 ms", "note"], rows)].join("\n");
  return { table, ...result };
}
