// Server time of memory-retrieve on a tenant with 10k memories, without the embedding call.
//
//   DATABASE_URL=postgresql://postgres@127.0.0.1:54322/postgres \
//     deno run -A --config supabase/functions/deno.json scripts/retrieve-latency.ts [--memories 10000] [--requests 300] [--keep]
//
// Seeds one fresh tenant (local-embedder vectors, batched inserts) across global, 20 project
// and user namespaces, then calls the handler directly (no HTTP, no gateway) with an embedder
// that returns precomputed query vectors, so what is measured is the handler: JWT check, body
// validation, the match_memories query, ranking, exact packing, delta, reinforcement and the
// event insert. Prints p50/p95/p99 of the whole handler and of its database part (server-timing).
// Removes the tenant afterwards unless --keep.
import { createSql, toVectorLiteral } from "../supabase/functions/_shared/db.ts";
import { type Embedder, EMBEDDING_DIMENSIONS, embedLocally } from "../supabase/functions/_shared/embeddings.ts";
import { LOCAL_EMBEDDING_MODEL } from "../supabase/functions/_shared/env.ts";
import { createHandler } from "../supabase/functions/memory-retrieve/handler.ts";
import { userToken } from "../tests/support/auth.ts";
import { testConfig } from "../tests/support/config.ts";

function arg(name: string, fallback: number): number {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Number(Deno.args[i + 1]) : fallback;
}
const MEMORIES = arg("memories", 10_000);
const REQUESTS = arg("requests", 300);
const KEEP = Deno.args.includes("--keep");

const url = Deno.env.get("DATABASE_URL");
if (!url) throw new Error("set DATABASE_URL");
const sql = createSql(url, { max: 4, applicationName: "retrieve-latency" });
const tenant = crypto.randomUUID();

const TOPICS = [
  "auth",
  "deploy",
  "database",
  "migration",
  "tests",
  "frontend",
  "api",
  "cache",
  "queue",
  "logging",
  "docker",
  "config",
];
const VERBS = ["uses", "needs", "breaks without", "is configured with", "was fixed by", "depends on"];
const THINGS = [
  "JWT tokens",
  "a manual activation step",
  "the REST API",
  "pgvector indexes",
  "retry with backoff",
  "env variables",
  "the transaction pooler",
  "node-appwrite/file imports",
  "hnsw iterative scans",
  "a feature flag",
];
const pick = <T>(xs: readonly T[], i: number) => xs[i % xs.length]!;

function syntheticMemory(i: number) {
  const scope = i % 10;
  const namespace = scope < 2
    ? `devai/global/${pick(TOPICS, i)}`
    : scope < 4
    ? `devai/user/preferences`
    : `devai/project/p${i % 20}/${pick(TOPICS, i >> 3)}`;
  const content = `${pick(TOPICS, i)} in service ${i % 97} ${pick(VERBS, i >> 2)} ${pick(THINGS, i >> 4)} (note ${i})`;
  const type = i % 5 === 0 ? "procedural" : i % 3 === 0 ? "episodic" : "semantic";
  return { content, namespace, memory_type: type };
}

console.log(`seeding ${MEMORIES} memories for tenant ${tenant} ...`);
const seedStart = performance.now();
const BATCH = 500;
for (let start = 0; start < MEMORIES; start += BATCH) {
  const rows = [];
  for (let i = start; i < Math.min(MEMORIES, start + BATCH); i++) {
    const m = syntheticMemory(i);
    rows.push({
      owner_id: tenant,
      content: m.content,
      namespace: m.namespace,
      memory_type: m.memory_type,
      embedding: toVectorLiteral(embedLocally(m.content)),
      embedding_model: LOCAL_EMBEDDING_MODEL,
      strength: 0.3 + ((i * 7919) % 70) / 100,
    });
  }
  await sql`insert into public.devai_memories ${
    sql(rows, "owner_id", "content", "namespace", "memory_type", "embedding", "embedding_model", "strength")
  }`;
}
await sql`analyze public.devai_memories`;
console.log(`seeded in ${((performance.now() - seedStart) / 1000).toFixed(1)} s`);

// Precomputed query vectors: the measured handler never waits for an embedding.
const queries = Array.from(
  { length: 50 },
  (_, i) => `how does ${pick(TOPICS, i * 5)} ${pick(VERBS, i)} ${pick(THINGS, i * 3)} work?`,
);
const vectors = new Map(queries.map((q) => [q, embedLocally(q)]));
const precomputed: Embedder = {
  provider: "local",
  model: LOCAL_EMBEDDING_MODEL,
  dimensions: EMBEDDING_DIMENSIONS,
  embed: (texts) => Promise.resolve(texts.map((t) => vectors.get(t.split("\n\n")[0]!) ?? embedLocally(t))),
};

const handler = createHandler({ sql, config: testConfig({ databaseUrl: url }), embedder: precomputed });
const token = await userToken(tenant);

async function once(i: number): Promise<{ total: number; db: number }> {
  const req = new Request("http://localhost/functions/v1/memory-retrieve", {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({
      message: queries[i % queries.length],
      project: `p${i % 20}`,
      thread_id: "bench",
      since_revision: 0,
    }),
  });
  const t0 = performance.now();
  const res = await handler(req);
  await res.text();
  const total = performance.now() - t0;
  if (res.status !== 200) throw new Error(`status ${res.status}`);
  const db = Number(/db;dur=([\d.]+)/.exec(res.headers.get("server-timing") ?? "")?.[1] ?? NaN);
  return { total, db };
}

for (let i = 0; i < 30; i++) await once(i); // warm-up: connections, plans, JIT
const totals: number[] = [];
const dbs: number[] = [];
for (let i = 0; i < REQUESTS; i++) {
  const r = await once(i);
  totals.push(r.total);
  dbs.push(r.db);
}
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const fmt = (xs: number[]) =>
  `p50 ${pct(xs, 50).toFixed(1)} ms  p95 ${pct(xs, 95).toFixed(1)} ms  p99 ${pct(xs, 99).toFixed(1)} ms`;
console.log(`memory-retrieve, ${MEMORIES} memories, ${REQUESTS} requests, no embedding call:`);
console.log(`  handler total: ${fmt(totals)}`);
console.log(`  database part: ${fmt(dbs)}`);

if (!KEEP) {
  await sql.begin(async (tx) => {
    await tx`delete from public.memory_events where owner_id = ${tenant}`;
    await tx`delete from public.devai_memories where owner_id = ${tenant}`;
    await tx`delete from public.memory_change_log where owner_id = ${tenant}`;
    await tx`delete from public.memory_thread_revisions where owner_id = ${tenant}`;
    await tx`delete from public.memory_history where owner_id = ${tenant}`;
  });
}
await sql.end();
