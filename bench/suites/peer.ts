// Peer: mem0ai's open-source Memory (npm mem0ai, pgvector store) side by side with ours, on the same
// Postgres cluster (database mem0_bench), the same vectors and an instantly answering fake LLM.
//
// mem0 runs under Node from bench/peer/ (see bench/README.md for why not Deno). Its table is
// pre-loaded with COPY from our corpus (the rows our search can return: valid, active, same model),
// with mem0's own DDL and HNSW index, instead of calling add() 100k times.
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { fileURLToPath } from "node:url";
import type { Corpus } from "../corpus.ts";
import { DIM, MODEL } from "../corpus.ts";
import { asTenant, connect, type Sql } from "../benchdb.ts";
import { fmt, formatTable, log, now, round, summarize, type Summary, vectorLiteral } from "../lib.ts";
import { benchEnv, signUserToken } from "./handler.ts";
import { createSql, poolOptions, tenantItem } from "../../supabase/functions/_shared/db.ts";
import { type Config, loadConfig } from "../../supabase/functions/_shared/env.ts";
import { createHandler as createMemoryHandler } from "../../supabase/functions/memory/handler.ts";

export interface PeerResult {
  skipped?: string;
  table: string;
  [k: string]: unknown;
}

const PEER_DIR = fileURLToPath(new URL("../peer/", import.meta.url));

interface Mem0Out {
  search: number[];
  rawSearch: number[];
  add: number[];
  searchIds: string[][];
  rawIds: string[][];
  errors: string[];
}

function recallOf(got: string[][], truth: string[][]): number {
  let r = 0;
  truth.forEach((t, i) => {
    const g = new Set(got[i] ?? []);
    r += t.length ? t.filter((id) => g.has(id)).length / t.length : 1;
  });
  return round(r / (truth.length || 1), 4);
}

export async function runPeer(
  sql: Sql,
  url: string,
  corpus: Corpus,
  opts: { deadline: number; queries: number; adds: number },
): Promise<PeerResult> {
  try {
    await Deno.stat(`${PEER_DIR}node_modules/mem0ai/package.json`);
  } catch {
    return {
      skipped: "bench/peer/node_modules/mem0ai is missing (scripts/bench.sh installs it with npm; no registry access?)",
      table: "",
    };
  }
  const nodeOk = await new Deno.Command("node", { args: ["--version"], stdout: "piped", stderr: "null" }).output().then(
    (o) => o.success,
  ).catch(() => false);
  if (!nodeOk) return { skipped: "node is not installed: mem0 runs under Node", table: "" };
  const mem0Version = JSON.parse(await Deno.readTextFile(`${PEER_DIR}node_modules/mem0ai/package.json`))
    .version as string;

  // 1. A separate database with mem0's table, loaded from our corpus.
  await sql.unsafe(`drop database if exists mem0_bench with (force)`);
  await sql.unsafe(`create database mem0_bench`);
  const peerUrl = url.replace(/\/[^/?]*(\?|$)/, "/mem0_bench$1");
  const psql = connect(peerUrl, 2, "devai-bench-mem0-load");
  // The COPY source gets its own connection, ended after the load: a copy-out stream left on a
  // pooled connection of `sql` once hung the next query on it (100k, postgres.js under Deno).
  const copySql = connect(url, 1, "devai-bench-mem0-copy");
  let loadSeconds = 0, indexSeconds = 0, peerRows = 0, mem0Plan = "?";
  try {
    await psql`create extension if not exists vector`;
    // mem0ai 3.x PGVector.createCol DDL, verbatim.
    await psql.unsafe(
      `create table if not exists memories (id uuid primary key, vector vector(${DIM}), payload jsonb)`,
    );
    const t0 = now();
    const src = await copySql.unsafe(`copy (
      select id, embedding::text,
             jsonb_build_object('data', content, 'user_id', owner_id::text, 'hash', md5(content),
                                'textLemmatized', lower(content), 'createdAt', created_at, 'updatedAt', updated_at)::text
        from public.devai_memories
       where is_valid and state = 'active' and strength > 0.05 and embedding_model = '${MODEL}' and embedding is not null
    ) to stdout`).readable();
    const dst = await psql.unsafe(`copy memories (id, vector, payload) from stdin`).writable();
    await pipeline(src as unknown as Readable, dst);
    loadSeconds = (now() - t0) / 1000;
    const t1 = now();
    await psql`set maintenance_work_mem = '1GB'`;
    // mem0ai 3.x index DDL with hnsw: true (pgvector defaults m=16, ef_construction=64, same as ours).
    await psql.unsafe(`create index if not exists memories_hnsw_idx on memories using hnsw (vector vector_cosine_ops)`);
    indexSeconds = (now() - t1) / 1000;
    await psql`vacuum analyze memories`;
    const [c] = await psql<{ n: number }[]>`select count(*)::int as n from memories`;
    peerRows = c?.n ?? 0;
    // The access path of mem0's vector search (its SQL text, for the biggest tenant).
    const [probe] = await psql<{ v: string }[]>`select vector::text as v from memories limit 1`;
    const plan = await psql.unsafe(
      `explain SELECT id, vector <=> $1::vector AS distance, payload FROM "memories" WHERE payload->>'user_id' = $3 ORDER BY distance LIMIT $2`,
      [probe?.v ?? "", 60, corpus.tenants[0]?.id ?? ""],
    ) as { "QUERY PLAN": string }[];
    const text = plan.map((r) => r["QUERY PLAN"]).join("\n");
    mem0Plan = text.includes("memories_hnsw_idx")
      ? "hnsw index scan, post-filter on user_id (no iterative scan)"
      : text.includes("Seq Scan")
      ? "seq scan + exact sort (planner skips the HNSW index)"
      : "other";
  } finally {
    await psql.end();
    await copySql.end({ timeout: 5 });
  }
  log(`mem0 table loaded: ${peerRows} rows, COPY ${loadSeconds.toFixed(1)} s, hnsw ${indexSeconds.toFixed(1)} s`);

  // 2. Queries (the tenant-wide filter: mem0 scopes by user_id only) and adds, for two tenants.
  const big = corpus.tenants[0], small = corpus.tenants[Math.floor(corpus.tenants.length / 2)];
  if (!big || !small) throw new Error("no tenants");
  const queries: { userId: string; text: string; vector: number[]; vec: string; truth: string[] }[] = [];
  const adds: { userId: string; text: string; vector: number[]; vec: string }[] = [];
  for (const [ti, t] of [[0, big], [1, small]] as const) {
    const seeds = await sql<{ i: number }[]>`
      select (metadata->>'bench_i')::int as i from public.devai_memories
       where owner_id = ${t.id} and is_valid and state = 'active' and strength > 0.05 and embedding_model = ${MODEL}
       order by md5(id::text || 'peer') limit ${Math.ceil(opts.queries / 2)}`;
    for (const [j, s] of seeds.entries()) {
      const r = corpus.row(s.i);
      const v = corpus.query(2_000_000 + ti * 100_000 + j, r.cluster, r.sub);
      const vec = vectorLiteral(v);
      // Ground truth: exact top 15 above 0.1 (mem0's default search threshold, also used for ours below).
      const truth = await sql.unsafe(
        `select id from bench.match_memories_exact($1::extensions.vector, 'devai', 15, 0.1, $2::uuid, $3, null)`,
        [vec, t.id, MODEL],
      );
      queries.push({
        userId: t.id,
        text: `what do we know about ${r.content.split(" (note")[0]?.toLowerCase()} q${ti}-${j}`,
        vector: Array.from(v),
        vec,
        truth: truth.map((x) => String(x.id)),
      });
    }
    for (let j = 0; j < Math.ceil(opts.adds / 2); j++) {
      const r = corpus.row((j * 7919 + ti) % corpus.size);
      const v = corpus.query(3_000_000 + ti * 100_000 + j, r.cluster, r.sub);
      adds.push({
        userId: t.id,
        text: `the user now prefers running ${r.content.split(" (note")[0]?.toLowerCase()} (add ${ti}-${j})`,
        vector: Array.from(v),
        vec: vectorLiteral(v),
      });
    }
  }

  // 3. mem0 under Node.
  const inputFile = await Deno.makeTempFile({ suffix: ".json" });
  const home = await Deno.makeTempDir();
  await Deno.writeTextFile(
    inputFile,
    JSON.stringify({
      url: peerUrl,
      dim: DIM,
      queries: queries.map(({ vec: _v, truth: _t, ...q }) => q),
      adds: adds.map(({ vec: _v, ...a }) => a),
    }),
  );
  log(`running mem0ai ${mem0Version} under Node: ${queries.length} searches, ${adds.length} adds`);
  const proc = await new Deno.Command("node", {
    args: [`${PEER_DIR}mem0_bench.mjs`, inputFile],
    cwd: PEER_DIR,
    stdout: "piped",
    stderr: "piped",
    env: { MEM0_TELEMETRY: "false", HOME: home, OPENAI_API_KEY: "unused" },
    signal: AbortSignal.timeout(Math.max(60_000, opts.deadline - now() + 120_000)),
  }).output();
  await Deno.remove(inputFile).catch(() => {});
  await Deno.remove(home, { recursive: true }).catch(() => {});
  const stderr = new TextDecoder().decode(proc.stderr);
  if (!proc.success) return { skipped: `mem0 run failed (exit ${proc.code}): ${stderr.slice(-1500)}`, table: "" };
  const m = JSON.parse(new TextDecoder().decode(proc.stdout)) as Mem0Out;

  // 4. Ours, same queries and adds, as the tenant (whole transaction timed: begin, claims, query, commit).
  // Also as the service reads (one statement carrying role and claims: readAsTenant), the vector
  // search alone and the hybrid search (keyword + vector + one graph hop), the latter being what
  // mem0's Memory.search (vector + full text + entities) compares with.
  // "As the service reads" goes through a pool configured as the service's (poolOptions: statements
  // prepared where DB_PREPARE decides so, as it does by default for this local database).
  const serviceConfig = loadConfig(benchEnv(url));
  const servicePool = createSql(url, { ...poolOptions(serviceConfig, "devai-bench-peer"), max: 4 });
  const oursSearch: number[] = [], oursIds: string[][] = [], naiveSearch: number[] = [], naiveIds: string[][] = [];
  const oursOne: number[] = [], oursOneIds: string[][] = [], oursHybrid: number[] = [];
  const oursAdd: number[] = [], oursRemember: number[] = [];
  try {
    for (const q of queries) {
      const t2 = now();
      const one = await servicePool<{ id: string }[]>`
        select (public.match_memories(${q.vec}::extensions.vector, 'devai', 15, 0.1, ${q.userId}::uuid, ${MODEL}, null)).id
          from ${tenantItem(servicePool, q.userId)}`;
      oursOne.push(now() - t2);
      oursOneIds.push(one.map((r) => String(r.id)));
      const t3 = now();
      await servicePool`
        select (public.hybrid_search(${q.text}, ${q.vec}::extensions.vector, array['devai'], 15, 0.1, ${MODEL},
                                     ${q.userId}::uuid, graph_depth => 1)).id
          from ${tenantItem(servicePool, q.userId)}`;
      oursHybrid.push(now() - t3);
      const t0 = now();
      const rows = await asTenant(
        sql,
        q.userId,
        (tx) =>
          tx`select * from public.match_memories(${q.vec}::extensions.vector, 'devai', 15, 0.1, ${q.userId}::uuid, ${MODEL}, null)`,
      );
      oursSearch.push(now() - t0);
      oursIds.push(rows.map((r) => String(r.id)));
      const t1 = now();
      const nrows = await asTenant(
        sql,
        q.userId,
        (tx) =>
          tx`select * from bench.match_memories_naive(${q.vec}::extensions.vector, 'devai', 15, 0.1, ${q.userId}::uuid)`,
      );
      naiveSearch.push(now() - t1);
      naiveIds.push(nrows.map((r) => String(r.id)));
    }
    for (const a of adds) {
      const t0 = now();
      await asTenant(sql, a.userId, async (tx) => {
        // The remember path at SQL level: neighbours at the dedup threshold, then the insert (history,
        // change log and revision written by triggers).
        await tx`select id from public.match_memories(${a.vec}::extensions.vector, 'devai', 10, 0.8, ${a.userId}::uuid, ${MODEL}, null)`;
        await tx`insert into public.devai_memories (content, embedding, memory_type, namespace, priority, source, owner_id, embedding_model)
                 values (${a.text}, ${a.vec}::extensions.vector, 'semantic', 'devai/user', 'medium', 'user_stated', ${a.userId}::uuid, ${MODEL})`;
      });
      oursAdd.push(now() - t0);
    }
    // The real remember endpoint (memory function handler, in process).
    oursRemember.push(...await timeRememberHandler(servicePool, serviceConfig, adds));
  } finally {
    await servicePool.end();
  }
  await sql`delete from public.devai_memories where content like 'the user now prefers running %(add %'`;

  const truth = queries.map((q) => q.truth);
  const s = {
    mem0Search: summarize(m.search),
    mem0RawVectorSearch: summarize(m.rawSearch),
    mem0Add: summarize(m.add),
    oursSearch: summarize(oursOne),
    oursSearchTx: summarize(oursSearch),
    oursHybrid: summarize(oursHybrid),
    naiveSearch: summarize(naiveSearch),
    oursAddSqlPath: summarize(oursAdd),
    oursRememberHandler: summarize(oursRemember),
  };
  const recall = {
    mem0Search: recallOf(m.searchIds, truth),
    mem0RawVectorSearch: recallOf(m.rawIds, truth),
    ours: recallOf(oursOneIds, truth),
    oursTx: recallOf(oursIds, truth),
    naive: recallOf(naiveIds, truth),
  };
  const rowsReturned = {
    mem0RawVectorSearch: round(m.rawIds.reduce((x, y) => x + y.length, 0) / (m.rawIds.length || 1), 2),
    ours: round(oursIds.reduce((x, y) => x + y.length, 0) / (oursIds.length || 1), 2),
    naive: round(naiveIds.reduce((x, y) => x + y.length, 0) / (naiveIds.length || 1), 2),
  };
  const ratio = (a: Summary, b: Summary) => round(a.p50 / b.p50, 2);
  // The two tenants have very different costs (a p50 over both lands between them): split them.
  const isBig = queries.map((q) => q.userId === big.id);
  const part = (xs: number[], want: boolean) =>
    summarize(m.errors.length && xs.length !== queries.length ? [] : xs.filter((_, i) => isBig[i] === want));
  const byTenant = Object.fromEntries(([["big", true], ["small", false]] as const).map(([k, want]) => [k, {
    ours: part(oursOne, want),
    oursHybrid: part(oursHybrid, want),
    naive: part(naiveSearch, want),
    mem0Search: part(m.search, want),
    mem0RawVectorSearch: part(m.rawSearch, want),
  }]));
  const ratios = {
    searchP50_mem0_over_ours: ratio(s.mem0Search, s.oursSearch),
    searchP50_mem0_over_oursHybrid: ratio(s.mem0Search, s.oursHybrid),
    rawVectorSearchP50_mem0_over_ours: ratio(s.mem0RawVectorSearch, s.oursSearch),
    addP50_mem0_over_ours: ratio(s.mem0Add, s.oursAddSqlPath),
    addP50_mem0_over_oursRememberHandler: s.oursRememberHandler.n ? ratio(s.mem0Add, s.oursRememberHandler) : null,
    naiveSearchP50_over_ours: ratio(s.naiveSearch, s.oursSearch),
  };
  const row = (
    name: string,
    x: Summary,
    rec: number | string,
    rows: number | string,
    r: string,
  ) => [name, String(x.n), fmt(x.p50), fmt(x.p95), fmt(x.p99), String(rec), String(rows), r];
  const table = [
    `## peer @ ${corpus.size} rows: mem0ai ${mem0Version} (Node, pgvector store, hnsw) vs ours; filter = one tenant (user_id); fake LLM/embedder in process`,
    formatTable(["operation", "n", "p50 ms", "p95 ms", "p99 ms", "recall@15", "rows", "p50 ratio to ours"], [
      row("ours: match_memories (one statement as the tenant)", s.oursSearch, recall.ours, rowsReturned.ours, "1.00"),
      row(
        "ours: match_memories (tenant tx: 4 round trips)",
        s.oursSearchTx,
        recall.oursTx,
        "-",
        fmt(s.oursSearchTx.p50 / s.oursSearch.p50),
      ),
      row(
        "ours: hybrid_search (one statement, graph depth 1)",
        s.oursHybrid,
        "-",
        "-",
        fmt(s.oursHybrid.p50 / s.oursSearch.p50),
      ),
      row(
        "mem0: Memory.search (hybrid)",
        s.mem0Search,
        recall.mem0Search,
        "-",
        `${fmt(ratios.searchP50_mem0_over_ours)} (vs our hybrid ${fmt(ratios.searchP50_mem0_over_oursHybrid)})`,
      ),
      row(
        "mem0: vectorStore.search only",
        s.mem0RawVectorSearch,
        recall.mem0RawVectorSearch,
        rowsReturned.mem0RawVectorSearch,
        fmt(ratios.rawVectorSearchP50_mem0_over_ours),
      ),
      row(
        "seed naive match_memories",
        s.naiveSearch,
        recall.naive,
        rowsReturned.naive,
        fmt(ratios.naiveSearchP50_over_ours),
      ),
      row("ours: remember (SQL path: neighbours + insert + audit triggers)", s.oursAddSqlPath, "-", "-", "1.00"),
      row(
        "ours: POST /memory/remember handler (in process)",
        s.oursRememberHandler,
        "-",
        "-",
        fmt(s.oursRememberHandler.p50 / s.oursAddSqlPath.p50),
      ),
      row(
        "mem0: Memory.add (infer, fake LLM)",
        s.mem0Add,
        "-",
        "-",
        `${fmt(ratios.addP50_mem0_over_ours)} (vs handler ${fmt(ratios.addP50_mem0_over_oursRememberHandler ?? NaN)})`,
      ),
    ]),
    `\nsearch p50 by tenant (ms; ratio to ours in brackets): biggest tenant ${byTenant.big?.ours.n ?? 0} queries (${
      big.id.slice(0, 8)
    }), small tenant ${byTenant.small?.ours.n ?? 0} queries`,
    formatTable(
      ["operation", "big tenant p50", "small tenant p50"],
      ([
        ["ours: match_memories", "ours"],
        ["ours: hybrid_search", "oursHybrid"],
        ["mem0: Memory.search", "mem0Search"],
        [
          "mem0: vectorStore.search",
          "mem0RawVectorSearch",
        ],
        ["seed naive", "naive"],
      ] as const).map(([label, key]) => [
        label,
        ...(["big", "small"] as const).map((g) => {
          const x = byTenant[g]?.[key], o = byTenant[g]?.ours;
          return x && o ? `${fmt(x.p50)} (${fmt(x.p50 / o.p50)}x)` : "-";
        }),
      ]),
    ),
    `mem0 vector search access path (biggest tenant): ${mem0Plan}`,
    m.errors.length ? `mem0 errors: ${m.errors.slice(0, 3).join(" | ")}` : "",
  ].filter(Boolean).join("\n");
  return {
    table,
    mem0Version,
    peerRows,
    mem0Plan,
    peerLoadSeconds: round(loadSeconds, 1),
    peerIndexSeconds: round(indexSeconds, 1),
    summaries: s,
    byTenant,
    recall,
    rowsReturned,
    ratios,
    mem0Errors: m.errors.slice(0, 10),
    unequal: [
      "mem0 keeps no validity/state/strength/model columns: its table holds only the rows our search can return (same candidate set), scoped by payload->>'user_id' (no index on it) instead of owner_id + namespace.",
      "mem0 uses one pg Client per Memory (queries serialize); ours a pool. Single-client figures only.",
      "Memory.search is hybrid: vector search (limit max(4*topK,60)) + an unindexed full-text scan over payload->>'textLemmatized' + entity-store searches; ours is vector-only at SQL level (hybrid ranking happens in the handler).",
      "mem0's history store is disabled (default needs better-sqlite3); ours writes history, change log and revision rows in triggers on every insert.",
      "mem0's textLemmatized was filled with lower(content) at load (no stemming) for pre-loaded rows; rows added during the run use mem0's own lemmatizer.",
      "Ours is timed around one statement that sets role + claims and searches (how the service reads: readAsTenant), and again around a whole tenant transaction (begin, set role + claims, query, commit: 4 round trips); mem0 around its method call.",
      "mem0 runs pgvector's default ef_search (40) without iterative index scans; match_memories sets ef_search 100 with iterative scans on its HNSW path, and searches scopes of at most public.memory_exact_scan_limit memories exactly (exact_scan_max_rows, or more in a big table).",
    ],
  };
}

/** POST /memory/remember through the memory function's handler (in process), each add timed. */
async function timeRememberHandler(
  pool: Sql,
  config: Config,
  adds: { userId: string; text: string; vector: number[] }[],
): Promise<number[]> {
  const known = new Map(adds.map((a) => [`${a.text} [remember]`, a.vector]));
  const handler = createMemoryHandler({
    sql: pool,
    config,
    embedder: {
      provider: "openai",
      model: MODEL,
      dimensions: DIM,
      embed: (t: string[]) => Promise.resolve(t.map((x) => known.get(x) ?? [])),
    },
  });
  const tokens = new Map<string, string>();
  const times: number[] = [];
  for (const a of adds) {
    const token = tokens.get(a.userId) ?? await signUserToken(a.userId);
    tokens.set(a.userId, token);
    const t0 = now();
    const res = await handler(
      new Request("http://bench.local/memory/remember", {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ content: `${a.text} [remember]` }),
      }),
    );
    const body = await res.text();
    if (res.status !== 201) throw new Error(`remember answered ${res.status}: ${body.slice(0, 300)}`);
    times.push(now() - t0);
  }
  return times;
}
