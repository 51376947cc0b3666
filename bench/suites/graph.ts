// Suite 'graph': the graph memory's hot paths on the loaded corpus (docs/graph.md).
//   episodes  POST /memory/episodes through the memory function's handler, in process: batches of
//             10 realistic coding messages for the biggest tenant (session row lock, digests,
//             inserts with HNSW/GIN index entries, temporal chain, rule entities, history). Two
//             embedders: the local one (embedded in the request: the default without a provider)
//             and a remote one (an 'embed' job is queued instead; no model call is timed)
//   lookup    public.memory_entity_lookup as the biggest tenant (RLS on) over an entity graph laid
//             over the corpus first (one entity per 10 memories of each tenant, 1-3 links per
//             memory, skewed so a few entities are linked to hundreds of memories): a popular
//             entity, a rare one, an alias-free miss, all case/punctuation variants
//   bfs       public.memory_graph_neighbours over the corpus's related_to edges, depth 3, 50 nodes
// The entity graph is written once per corpus (skipped when present). A failure fails the run.
import { createSql, type Tx, withTenant } from "../../supabase/functions/_shared/db.ts";
import { localEmbedder } from "../../supabase/functions/_shared/embeddings.ts";
import { loadConfig } from "../../supabase/functions/_shared/env.ts";
import { createHandler as createMemoryHandler } from "../../supabase/functions/memory/handler.ts";
import type { Sql } from "../benchdb.ts";
import type { Corpus } from "../corpus.ts";
import { DIM, MODEL } from "../corpus.ts";
import { fmt, formatTable, log, now, round, summarize, type Summary } from "../lib.ts";
import { benchEnv, signUserToken } from "./handler.ts";

export interface GraphResult {
  table: string;
  [k: string]: unknown;
}

const BATCH = 10;
const TEMPLATES = [
  "The build fails in src/components/Cart{i}.tsx with TS2322 after upgrading react@18.3.{i}",
  "I fixed the type in src/components/Cart{i}.tsx; run `pnpm run build` again",
  "Still ERR_MODULE_NOT_FOUND from ./lib/store{i}.ts when calling useCart{i}()",
  "See https://github.com/acme/shop/issues/{i} — @maria hit the same thing",
  "Ran `docker compose up -d postgres` and `deno test -A tests/` — all green",
  "ok, commit it with git commit and push",
  "The deploy uses kubectl apply on staging; ECONNREFUSED means the DB is down",
  "Let's keep parse_config{i}(path) pure and move the IO to main.ts",
  "npm install zod@4.1.{i} fixed the schema error",
  "thanks, that works",
];

/** Lays an entity graph over the corpus, once (1 entity per 10 memories per tenant, 1-3 skewed links per memory). */
async function ensureEntityGraph(
  sql: Sql,
): Promise<{ seconds: number; entities: number; links: number; created: boolean }> {
  const [have] = await sql<
    { n: number }[]
  >`select count(*)::int as n from public.memory_entities where canonical_name like 'bench-entity-%'`;
  const t0 = now();
  if ((have?.n ?? 0) === 0) {
    await sql`
      insert into public.memory_entities (owner_id, canonical_name, entity_type)
      select t.owner_id, 'bench-entity-' || t.rank || '-' || k,
             (array['person','project','organization','place','concept','tool','file','package','service','function','command','error'])[1 + k % 12]
        from (select owner_id, count(*) as n, row_number() over (order by owner_id) as rank
                from public.devai_memories group by owner_id) t
       cross join lateral generate_series(0, greatest(1, t.n / 10)::int) as k`;
    // A power-law pick: entity k = floor(n_entities * u^3), u uniform from the memory id and link number.
    await sql`
      insert into public.memory_entity_links (owner_id, memory_id, entity_id, mention, confidence, source)
      select distinct on (m.id, e.id) m.owner_id, m.id, e.id, e.canonical_name, 1, 'rules'
        from (select m.id, m.owner_id, t.rank, t.n from public.devai_memories m
                join (select owner_id, count(*) as n, row_number() over (order by owner_id) as rank
                        from public.devai_memories group by owner_id) t on t.owner_id = m.owner_id) m
       cross join lateral generate_series(1, 1 + abs(hashtext(m.id::text)) % 3) as j
        join public.memory_entities e
          on e.owner_id = m.owner_id
         and e.normalized_name = public.memory_entity_key('bench-entity-' || m.rank || '-' ||
               floor(greatest(1, m.n / 10) * power((abs(hashtext(m.id::text || ':' || j)) % 1000000) / 1000000.0, 3))::int)
      on conflict do nothing`;
    await sql`
      update public.memory_entities e set mention_count = c.n
        from (select entity_id, count(*)::int as n from public.memory_entity_links group by entity_id) c
       where e.id = c.entity_id and e.canonical_name like 'bench-entity-%'`;
    await sql`vacuum analyze public.memory_entities`;
    await sql`vacuum analyze public.memory_entity_links`;
  }
  const [counts] = await sql<{ entities: number; links: number }[]>`
    select (select count(*)::int from public.memory_entities) as entities, (select count(*)::int from public.memory_entity_links) as links`;
  return {
    seconds: round((now() - t0) / 1000, 1),
    entities: counts!.entities,
    links: counts!.links,
    created: (have?.n ?? 0) === 0,
  };
}

/** Batches of 10 messages for the biggest tenant through the handler; the first 3 warm up. */
async function timeEpisodeBatches(
  url: string,
  tenantId: string,
  remote: boolean,
  batches: number,
  deadline: number,
): Promise<Summary> {
  const config = loadConfig(benchEnv(url));
  const pool = createSql(url, { max: 4, applicationName: "devai-bench-graph" });
  const embedder = remote
    ? {
      provider: "openai" as const,
      model: MODEL,
      dimensions: DIM,
      embed: () => Promise.reject(new Error("no embedding call on the episode path")),
    }
    : localEmbedder();
  const handler = createMemoryHandler({ sql: pool, config, embedder });
  const token = await signUserToken(tenantId);
  const run = `${remote ? "remote" : "local"}-${Date.now()}`;
  const ms: number[] = [];
  try {
    for (let b = 0; b < batches + 3 && now() < deadline; b++) {
      const messages = Array.from({ length: BATCH }, (_, k) => ({
        role: k % 2 === 0 ? "user" : "assistant",
        content: TEMPLATES[k]!.replaceAll("{i}", String(b)) + ` (${run} ${b}.${k})`,
      }));
      const body = JSON.stringify({ session_id: `${run}-s${Math.floor(b / 5)}`, project: "task_forge", messages });
      const t0 = now();
      const res = await handler(
        new Request("http://bench.local/memory/episodes", {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body,
        }),
      );
      const text = await res.text();
      if (res.status !== 201) throw new Error(`episodes answered ${res.status}: ${text.slice(0, 300)}`);
      if (b >= 3) ms.push(now() - t0);
    }
  } finally {
    await pool.end();
  }
  return summarize(ms);
}

/** Calls of fn as the tenant (RLS on, as the edge functions run), ms each; rows of the last call. */
async function timeAsTenant(
  pool: Sql,
  tenantId: string,
  n: number,
  fn: (tx: Tx, i: number) => PromiseLike<readonly unknown[]>,
) {
  const ms: number[] = [];
  let rows = 0;
  for (let i = 0; i < n + 3; i++) {
    await withTenant(pool, { tenantId, actor: "bench" }, async (tx) => {
      const t0 = now();
      const out = await fn(tx, i);
      if (i >= 3) ms.push(now() - t0);
      rows = out.length;
    });
  }
  return { summary: summarize(ms), rows };
}

export async function runGraph(
  sql: Sql,
  url: string,
  corpus: Corpus,
  opts: { deadline: number; batches: number; lookups: number },
): Promise<GraphResult> {
  const big = corpus.tenants[0];
  if (!big) throw new Error("no tenants");
  const result: Record<string, unknown> = {};
  const rows: string[][] = [];

  const graph = await ensureEntityGraph(sql);
  result.entityGraph = graph;
  log(
    `entity graph: ${graph.entities} entities, ${graph.links} links${
      graph.created ? ` (written in ${graph.seconds} s)` : ""
    }`,
  );

  for (const remote of [false, true]) {
    const s = await timeEpisodeBatches(url, big.id, remote, opts.batches, opts.deadline);
    result[remote ? "episodesRemote" : "episodesLocal"] = s;
    rows.push([
      `POST /memory/episodes, batch of ${BATCH} (${
        remote ? "remote embedder: embed job queued" : "local embedder: embedded in the request"
      })`,
      String(s.n),
      fmt(s.p50),
      fmt(s.p95),
      fmt(s.p99),
      "target p95 < 50 ms",
    ]);
    log(`episodes (${remote ? "remote" : "local"}) p50 ${fmt(s.p50)} ms p95 ${fmt(s.p95)} ms`);
  }

  const pool = createSql(url, { max: 2, applicationName: "devai-bench-graph" });
  try {
    const [tenant] = await sql<{ popular: string; rare: string; popular_links: number; rare_links: number }[]>`
      with e as (select canonical_name, mention_count from public.memory_entities
                  where owner_id = ${big.id} and canonical_name like 'bench-entity-%' and mention_count > 0)
      select (select canonical_name from e order by mention_count desc, canonical_name limit 1) as popular,
             (select mention_count from e order by mention_count desc, canonical_name limit 1) as popular_links,
             (select canonical_name from e order by mention_count, canonical_name limit 1) as rare,
             (select mention_count from e order by mention_count, canonical_name limit 1) as rare_links`;
    if (!tenant?.popular || !tenant.rare) {
      throw new Error("the entity graph has no popular or no rare entity for the biggest tenant");
    }
    const cases: [string, (i: number) => string[]][] = [
      [`popular entity (${tenant!.popular_links} links)`, () => [tenant!.popular.toUpperCase()]],
      [
        `rare entity (${tenant!.rare_links} link${tenant!.rare_links === 1 ? "" : "s"})`,
        () => [tenant!.rare.replaceAll("-", " ")],
      ],
      ["3 terms: popular, rare, unknown", (i) => [tenant!.popular, tenant!.rare, `no-such-entity-${i}`]],
      ["unknown term", (i) => [`no-such-entity-${i}`]],
    ];
    const lookups: Record<string, unknown> = {};
    for (const [name, terms] of cases) {
      const r = await timeAsTenant(
        pool,
        big.id,
        opts.lookups,
        (tx, i) => tx`select * from public.memory_entity_lookup(${terms(i)}::text[], 50)`,
      );
      lookups[name] = r;
      rows.push([
        `memory_entity_lookup: ${name}, max_nodes 50`,
        String(r.summary.n),
        fmt(r.summary.p50),
        fmt(r.summary.p95),
        fmt(r.summary.p99),
        `${r.rows} rows`,
      ]);
    }
    result.lookup = lookups;

    const seeds = await sql<{ id: string }[]>`
      select r.from_id as id from public.memory_relations r where r.owner_id = ${big.id} and r.relation_type = 'related_to'
       order by md5(r.from_id::text) limit ${opts.lookups}`;
    if (seeds.length > 0) {
      const r = await timeAsTenant(
        pool,
        big.id,
        Math.min(opts.lookups, seeds.length),
        (tx, i) =>
          tx`select * from public.memory_graph_neighbours(array[${
            seeds[i % seeds.length]!.id
          }::uuid], null, 3, 50, null, null, 'both')`,
      );
      result.bfs = r;
      rows.push([
        "memory_graph_neighbours: all types, both ways, depth 3, max_nodes 50",
        String(r.summary.n),
        fmt(r.summary.p50),
        fmt(r.summary.p95),
        fmt(r.summary.p99),
        `${r.rows} rows (last call)`,
      ]);
    }
  } finally {
    await pool.end();
  }
  const table = [
    `## graph (in process; the biggest tenant; entity graph: ${graph.entities} entities, ${graph.links} links)`,
    formatTable(["operation", "n", "p50 ms", "p95 ms", "p99 ms", "note"], rows),
  ].join("\n");
  return { table, ...result };
}
