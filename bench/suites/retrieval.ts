// Retrieval: latency of match_memories (client and server side, 1 and 8 clients) and recall@15
// against exact search, under tenant + namespace filters of varying selectivity, with and without
// iterative index scans, at several hnsw.ef_search values; plus the seed's naive function.
import type { Corpus } from "../corpus.ts";
import { MODEL } from "../corpus.ts";
import { asTenant, type Sql } from "../benchdb.ts";
import { fmt, log, now, round, runConcurrent, summarize, type Summary, vectorLiteral } from "../lib.ts";

export interface Scenario {
  name: string;
  description: string;
  tenant: number;
  ownerId: string;
  scopes: string[];
  /** Eligible rows (valid, active, strength > 0.05, same model) in scope. */
  eligible: number;
  selectivityPct: number;
  /** The path match_memories takes for this scope: exact (scope ≤ public.memory_exact_scan_limit) or HNSW. */
  plan: string;
  queries: string[];
}

/** as shipped = public.match_memories (it picks exact or HNSW by scope size, ef_search 100); hnsw = HNSW path pinned. */
export const MODES = ["as shipped", "hnsw, iterative off", "hnsw, relaxed_order"] as const;
export type Mode = typeof MODES[number] | "naive (seed)";

export interface RecallPoint {
  scenario: string;
  mode: Mode;
  efSearch: number;
  queries: number;
  recallAt15: number;
  recallAt15AboveThreshold: number;
  meanRowsReturned: number;
  meanExactRows: number;
  clientMsP50: number;
  foreignScopeRows?: number;
}

export interface LatencyRow {
  scenario: string;
  fn: string;
  clients: number;
  side: "client" | "server";
  summary: Summary;
  qps?: number;
}

export interface RetrievalResult {
  scenarios: Omit<Scenario, "queries">[];
  recall: RecallPoint[];
  latency: LatencyRow[];
  efSearchValues: number[];
  recommendation: {
    efSearch: number | null;
    shipped: number;
    shippedSuffices: boolean;
    rule: string;
    evidence: string;
  };
  notes: string[];
}

export function pgTextArray(items: readonly string[]): string {
  return `{${items.map((s) => `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`).join(",")}}`;
}

async function buildScenarios(sql: Sql, corpus: Corpus, q: number): Promise<Scenario[]> {
  const total = corpus.size;
  const big = corpus.tenants[0];
  // Small tenant: the one at the middle of the size ranking (a few dozen to a few hundred rows).
  const small = corpus.tenants[Math.floor(corpus.tenants.length / 2)];
  if (!big || !small) throw new Error("corpus has no tenants");
  const smallProject = small.projects[0] ?? "docs";
  const defs: Omit<Scenario, "eligible" | "selectivityPct" | "queries" | "plan">[] = [
    {
      name: "big-retrieval",
      description: "biggest tenant, retrieval scopes (global + user + project task_forge)",
      tenant: 0,
      ownerId: big.id,
      scopes: ["devai/global", "devai/user", "devai/project/task_forge"],
    },
    {
      name: "small-retrieval",
      description: `small tenant, retrieval scopes (global + user + project ${smallProject})`,
      tenant: small.index,
      ownerId: small.id,
      scopes: ["devai/global", "devai/user", `devai/project/${smallProject}`],
    },
    {
      name: "big-project",
      description:
        "biggest tenant, one project scope devai/project/task_forge (LIKE would also match taskxforge, task_forge2)",
      tenant: 0,
      ownerId: big.id,
      scopes: ["devai/project/task_forge"],
    },
    {
      name: "narrow",
      description: "biggest tenant, nested namespace devai/project/task_forge/backend/db",
      tenant: 0,
      ownerId: big.id,
      scopes: ["devai/project/task_forge/backend/db"],
    },
    // The same kind of scope, the one that sorts first among the biggest tenant's namespaces: a
    // scope range read past its end would read nearly the whole tenant here (see the check below).
    {
      name: "narrow-first",
      description: "biggest tenant, its nested namespace that sorts first",
      tenant: 0,
      ownerId: big.id,
      scopes: [await firstNestedScope(sql, big.id)],
    },
    {
      name: "tenant-wide",
      description: "biggest tenant, whole tenant (scope devai): the filter mem0 uses (user_id only)",
      tenant: 0,
      ownerId: big.id,
      scopes: ["devai"],
    },
  ];
  const out: Scenario[] = [];
  for (const d of defs) {
    const scopes = pgTextArray(d.scopes.map((s) => s + "/"));
    const [c] = await sql<{ n: number }[]>`
      select count(*)::int as n from public.devai_memories
       where owner_id = ${d.ownerId} and is_valid and state = 'active' and strength > 0.05
         and embedding_model = ${MODEL} and embedding is not null and (namespace || '/') ^@ any(${scopes}::text[])`;
    const seeds = await sql<{ i: number }[]>`
      select (metadata->>'bench_i')::int as i from public.devai_memories
       where owner_id = ${d.ownerId} and is_valid and state = 'active' and strength > 0.05
         and embedding_model = ${MODEL} and (namespace || '/') ^@ any(${scopes}::text[])
       order by md5(id::text) limit ${q}`;
    const queries = seeds.map((s, j) => {
      const r = corpus.row(s.i);
      return vectorLiteral(corpus.query(1_000_000 + j * 7919 + d.tenant, r.cluster, r.sub));
    });
    const eligible = c?.n ?? 0;
    out.push({
      ...d,
      eligible,
      selectivityPct: round((100 * eligible) / total, 3),
      plan: await pathOf(sql, d.ownerId, d.scopes),
      queries,
    });
  }
  return out;
}

/** The tenant's nested project namespace (devai/project/<p>/<sub>) that sorts first. */
async function firstNestedScope(sql: Sql, ownerId: string): Promise<string> {
  const [row] = await sql<{ namespace: string }[]>`
    select namespace from public.devai_memories
     where owner_id = ${ownerId} and is_valid and state = 'active' and namespace ~ '^devai/project/[^/]+/'
     order by namespace limit 1`;
  return row?.namespace ?? "devai/project/task_forge/backend/db";
}

/**
 * Scopes of about the same size should cost about the same, wherever their namespaces sort: the
 * server p50 of each small exact-path scenario of the biggest tenant against the small tenant's.
 * Under row level security a scope bound computed with a non-leakproof function (`||`) stopped
 * being an index condition, and a 109-row scope of the biggest tenant read everything that sorts
 * after it (migration 20261124800100): narrow cost 7x small-retrieval, narrow-first more.
 */
export function sameSizeSameCost(
  latency: readonly LatencyRow[],
  scenarios: readonly { name: string; eligible: number; plan: string }[],
): string {
  const server = (name: string) =>
    latency.find((l) => l.scenario === name && l.side === "server" && l.fn === "match_memories")?.summary.p50;
  const base = server("small-retrieval");
  const lines = scenarios.filter((s) => s.name.startsWith("narrow") && s.plan.startsWith("exact")).map((s) => {
    const p50 = server(s.name);
    const ratio = p50 !== undefined && base ? p50 / base : undefined;
    return `${s.name} (${s.eligible} rows) ${ratio === undefined ? "n/a" : `${ratio.toFixed(1)}x`}${
      ratio !== undefined && ratio > 3 ? " ANOMALY: a small scope of a big tenant costs more than its size" : ""
    }`;
  });
  return `same-size scopes cost alike (server p50 vs small-retrieval's ${
    base?.toFixed(2) ?? "-"
  } ms; > 3x flags an anomaly): ${lines.join(", ") || "n/a"}`;
}

/** match_memories' own ef_search (SET on the function by 20261123000300). */
export const SHIPPED_EF_SEARCH = 100;

/** The path match_memories takes for these scopes: it counts the scope as the function does. */
async function pathOf(sql: Sql, ownerId: string, scopes: string[]): Promise<string> {
  const [r] = await sql<{ n: number; max: number }[]>`
    select count(*)::int as n, public.memory_exact_scan_limit(15, public.memory_vector_index_of(${ownerId}::uuid)) as max
      from public.devai_memories
     where owner_id = ${ownerId} and is_valid and state = 'active'
       and (namespace || '/') ^@ any(${pgTextArray(scopes.map((s) => s + "/"))}::text[])`;
  return r && r.n <= r.max ? `exact (${r.n} in scope <= ${r.max})` : `hnsw + iterative scan (${r?.n} in scope)`;
}

interface Hit {
  id: string;
  similarity: number;
  namespace: string;
}

async function callVariant(
  sql: Sql,
  fn: string,
  sc: Scenario,
  vec: string,
  ef: number | null,
): Promise<{ hits: Hit[]; ms: number }> {
  return await sql.begin(async (tx) => {
    if (ef !== null) await tx.unsafe(`set local hnsw.ef_search = ${Math.floor(ef)}`);
    const t0 = now();
    const rows = fn === "naive"
      ? await tx.unsafe(
        `select id, similarity, namespace from bench.match_memories_naive($1::extensions.vector, $2, 15, -1, $3::uuid)`,
        [vec, sc.scopes[0] ?? "devai", sc.ownerId],
      )
      : await tx.unsafe(
        `select id, similarity, namespace from ${fn}($1::extensions.vector, $2, 15, -1, $3::uuid, $4, $5::text[])`,
        [vec, sc.scopes[0] ?? "devai", sc.ownerId, MODEL, pgTextArray(sc.scopes)],
      );
    const ms = now() - t0;
    return {
      hits: rows.map((r) => ({ id: String(r.id), similarity: Number(r.similarity), namespace: String(r.namespace) })),
      ms,
    };
  }) as { hits: Hit[]; ms: number };
}

function inScope(ns: string, scopes: readonly string[]): boolean {
  return scopes.some((s) => ns === s || ns.startsWith(s + "/"));
}

export interface RetrievalOptions {
  recallQueries: number;
  latencyQueries: number;
  efSearch: number[];
  threshold: number;
  deadline: number;
}

export async function runRetrieval(sql: Sql, corpus: Corpus, opts: RetrievalOptions): Promise<RetrievalResult> {
  const notes: string[] = [];
  const scenarios = await buildScenarios(sql, corpus, Math.max(opts.recallQueries, opts.latencyQueries));
  for (const s of scenarios) {
    log(
      `scenario ${s.name}: ${s.eligible} eligible rows (${s.selectivityPct}% of corpus), ${s.queries.length} queries`,
    );
  }

  // Ground truth: exact top-15 over every eligible row (no index scans).
  const exact = new Map<string, Hit[][]>();
  for (const sc of scenarios) {
    const list: Hit[][] = [];
    for (const vec of sc.queries.slice(0, opts.recallQueries)) {
      list.push((await callVariant(sql, "bench.match_memories_exact", sc, vec, null)).hits);
    }
    exact.set(sc.name, list);
  }

  const recall: RecallPoint[] = [];
  const measure = async (sc: Scenario, fn: string, mode: RecallPoint["mode"], ef: number) => {
    const truth = exact.get(sc.name) ?? [];
    let r15 = 0, rThr = 0, nThr = 0, rows = 0, exactRows = 0, foreign = 0;
    const ms: number[] = [];
    for (let i = 0; i < truth.length; i++) {
      if (now() > opts.deadline) break;
      const { hits, ms: t } = await callVariant(sql, fn, sc, sc.queries[i] ?? "", ef);
      ms.push(t);
      const e = truth[i] ?? [];
      const got = new Set(hits.map((h) => h.id));
      r15 += e.length ? e.filter((h) => got.has(h.id)).length / e.length : 1;
      const eThr = e.filter((h) => h.similarity > opts.threshold);
      const gotThr = new Set(hits.filter((h) => h.similarity > opts.threshold).map((h) => h.id));
      if (eThr.length) {
        rThr += eThr.filter((h) => gotThr.has(h.id)).length / eThr.length;
        nThr++;
      }
      rows += hits.length;
      exactRows += e.length;
      foreign += hits.filter((h) => !inScope(h.namespace, sc.scopes)).length;
    }
    if (ms.length === 0) return; // deadline reached before this configuration
    const n = ms.length;
    recall.push({
      queries: n,
      scenario: sc.name,
      mode,
      efSearch: ef,
      recallAt15: round(r15 / n, 4),
      recallAt15AboveThreshold: round(nThr ? rThr / nThr : 1, 4),
      meanRowsReturned: round(rows / n, 2),
      meanExactRows: round(exactRows / n, 2),
      clientMsP50: summarize(ms).p50,
      ...(mode === "naive (seed)" ? { foreignScopeRows: foreign } : {}),
    });
  };
  for (const ef of opts.efSearch) {
    for (const sc of scenarios) {
      await measure(sc, "bench.match_memories_hnsw_off", "hnsw, iterative off", ef);
      await measure(sc, "bench.match_memories_hnsw_relaxed", "hnsw, relaxed_order", ef);
    }
    log(`recall at ef_search=${ef} done`);
  }
  // As shipped: the function sets its own ef_search (SHIPPED_EF_SEARCH), so it is measured once.
  for (const sc of scenarios) await measure(sc, "public.match_memories", "as shipped", SHIPPED_EF_SEARCH);
  for (const sc of scenarios.filter((s) => s.scopes.length === 1)) await measure(sc, "naive", "naive (seed)", 40);

  // Latency of match_memories as shipped (its own path choice and ef_search), as the tenant.
  const latency: LatencyRow[] = [];
  const lat = opts.latencyQueries;
  for (const sc of scenarios) {
    const qs = sc.queries.slice(0, lat);
    const client: number[] = [], server: number[] = [];
    const scopes = pgTextArray(sc.scopes);
    for (const vec of qs) {
      if (now() > opts.deadline) break;
      client.push(
        await asTenant(sql, sc.ownerId, async (tx) => {
          const t0 = now();
          await tx`select * from public.match_memories(${vec}::extensions.vector, ${
            sc.scopes[0] ?? "devai"
          }, 15, ${opts.threshold}, ${sc.ownerId}::uuid, ${MODEL}, ${scopes}::text[])`;
          return now() - t0;
        }),
      );
      const [s] = await asTenant(sql, sc.ownerId, (tx) =>
        tx<{ ms: number }[]>`
        select ms from bench.timed_match('ours', ${vec}::extensions.vector, ${
          sc.scopes[0] ?? "devai"
        }, 15, ${opts.threshold}, ${sc.ownerId}::uuid, ${scopes}::text[])`);
      server.push(Number(s?.ms ?? NaN));
    }
    latency.push({ scenario: sc.name, fn: "match_memories", clients: 1, side: "client", summary: summarize(client) });
    latency.push({ scenario: sc.name, fn: "match_memories", clients: 1, side: "server", summary: summarize(server) });
    if (sc.scopes.length === 1) {
      const nc: number[] = [], ns: number[] = [];
      for (const vec of qs) {
        if (now() > opts.deadline) break;
        nc.push(
          await asTenant(sql, sc.ownerId, async (tx) => {
            const t0 = now();
            await tx`select * from bench.match_memories_naive(${vec}::extensions.vector, ${
              sc.scopes[0] ?? "devai"
            }, 15, ${opts.threshold}, ${sc.ownerId}::uuid)`;
            return now() - t0;
          }),
        );
        const [s] = await asTenant(sql, sc.ownerId, (tx) =>
          tx<{ ms: number }[]>`
          select ms from bench.timed_match('naive', ${vec}::extensions.vector, ${
            sc.scopes[0] ?? "devai"
          }, 15, ${opts.threshold}, ${sc.ownerId}::uuid, null)`);
        ns.push(Number(s?.ms ?? NaN));
      }
      latency.push({ scenario: sc.name, fn: "naive (seed)", clients: 1, side: "client", summary: summarize(nc) });
      latency.push({ scenario: sc.name, fn: "naive (seed)", clients: 1, side: "server", summary: summarize(ns) });
    }
    log(`latency ${sc.name} done`);
  }
  // 8 concurrent clients over the mix of scenarios.
  const mix = scenarios.flatMap((sc) => sc.queries.slice(0, lat).map((vec) => ({ sc, vec })));
  for (let i = mix.length - 1; i > 0; i--) {
    const j = (i * 7919) % (i + 1);
    const a = mix[i], b = mix[j];
    if (a && b) {
      mix[i] = b;
      mix[j] = a;
    }
  }
  for (const clients of [1, 8]) {
    if (now() > opts.deadline) break;
    const { ms, wallMs } = await runConcurrent(mix, clients, async ({ sc, vec }) => {
      return await asTenant(sql, sc.ownerId, async (tx) => {
        const t0 = now();
        await tx`select * from public.match_memories(${vec}::extensions.vector, ${
          sc.scopes[0] ?? "devai"
        }, 15, ${opts.threshold}, ${sc.ownerId}::uuid, ${MODEL}, ${pgTextArray(sc.scopes)}::text[])`;
        return now() - t0;
      });
    });
    latency.push({
      scenario: "mix",
      fn: "match_memories",
      clients,
      side: "client",
      summary: summarize(ms),
      qps: round((ms.length * 1000) / wallMs, 1),
    });
    log(`mix with ${clients} clients: ${fmt((ms.length * 1000) / wallMs, 1)} q/s`);
  }

  // Recommendation: the smallest ef_search at which relaxed_order keeps recall@15 >= 0.95 in every scenario.
  const target = 0.95;
  let chosen: number | null = null;
  // Only scopes holding >= 1% of the corpus count: tiny scopes take the exact path in
  // match_memories (and through HNSW, relaxed_order is bounded by hnsw.max_scan_tuples, not by
  // ef_search: see small-retrieval / narrow).
  const considered = scenarios.filter((sc) => sc.selectivityPct >= 1).map((sc) => sc.name);
  for (const ef of opts.efSearch) {
    const pts = recall.filter((r) =>
      r.mode === "hnsw, relaxed_order" && r.efSearch === ef && considered.includes(r.scenario)
    );
    if (pts.length === considered.length && pts.every((p) => p.recallAt15 >= target)) {
      chosen = ef;
      break;
    }
  }
  const at = (ef: number | null) =>
    recall.filter((r) => r.mode === "hnsw, relaxed_order" && r.efSearch === ef).map((r) =>
      `${r.scenario} ${r.recallAt15}${considered.includes(r.scenario) ? "" : " (not counted)"}`
    ).join(", ");
  const evidence = chosen === null
    ? `no tested ef_search reaches recall@15 >= ${target} in every scenario; at the largest (${
      opts.efSearch[opts.efSearch.length - 1]
    }): ${at(opts.efSearch[opts.efSearch.length - 1] ?? null)}`
    : `HNSW path with relaxed_order at ef_search=${chosen}: ${
      at(chosen)
    }; at ${SHIPPED_EF_SEARCH} (what match_memories sets): ${at(SHIPPED_EF_SEARCH)}`;
  const viaHnsw = scenarios.filter((s) => s.plan.startsWith("hnsw")).map((s) => s.name);
  notes.push(
    viaHnsw.length
      ? `match_memories takes the HNSW path for: ${
        viaHnsw.join(", ")
      } (scope > public.memory_exact_scan_limit: exact_scan_max_rows, or more in a big table); there ef_search and iterative scans decide recall; the other scenarios are searched exactly (recall 1)`
      : "every scenario's scope is at most public.memory_exact_scan_limit: match_memories searches them exactly (recall 1); the pinned-HNSW rows show the index path bigger scopes take",
  );
  notes.push(sameSizeSameCost(latency, scenarios));
  if (now() > opts.deadline) notes.push("deadline reached: some loops stopped early (see n in the summaries)");
  return {
    scenarios: scenarios.map(({ queries: _q, ...rest }) => rest),
    recall,
    latency,
    efSearchValues: opts.efSearch,
    recommendation: {
      efSearch: chosen,
      shipped: SHIPPED_EF_SEARCH,
      shippedSuffices: chosen !== null && chosen <= SHIPPED_EF_SEARCH,
      rule:
        `smallest tested hnsw.ef_search at which the HNSW path with relaxed_order keeps recall@15 >= ${target} in every scenario whose scope holds >= 1% of the corpus (${
          considered.join(", ")
        })`,
      evidence,
    },
    notes,
  };
}
