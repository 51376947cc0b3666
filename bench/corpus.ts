// Deterministic synthetic corpus of coding-agent memories, and a fast loader (COPY, index after).
//
// Every row is a pure function of (seed, row index), so any row (and its 512-d vector) can be
// regenerated on its own: the peer benchmark and the fake embedder use that.
//
// Embeddings are clustered: K cluster centres, 8 sub-topics per cluster, each memory is
// normalize(centre + 0.5·subtopic + σ·noise) with σ varying per memory, so in-cluster cosine
// similarity is ~0.65-0.9 (above the 0.7 retrieval threshold for same-sub-topic pairs) and
// unrelated memories sit near 0. Each (tenant, namespace) draws from a few clusters, so a scope has
// real nearest neighbours.
import type postgres from "postgres";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { hashString, log, normalize, now, Rng, splitmix32 } from "./lib.ts";

export const DIM = 512;
export const MODEL = "text-embedding-3-small";
export const OTHER_MODEL = "local-hash-v1";
export const SIZES: Record<string, number> = { "10k": 10_000, "100k": 100_000, "1m": 1_000_000 };

/** Project names, including the ones whose `_` / `%` would make a LIKE prefix match a neighbour. */
export const PROJECTS = [
  "task_forge",
  "taskxforge",
  "task_forge2",
  "100%_done",
  "100xx_done",
  "web-app",
  "api_gateway",
  "apixgateway",
  "billing",
  "infra",
  "mobile",
  "ml_pipeline",
  "docs",
  "cli",
  "sdk_js",
  "data%lake",
] as const;
const SUBSPACES = ["backend", "frontend", "backend/db", "ci"] as const;
const TYPES = [["semantic", 0.55], ["episodic", 0.30], ["procedural", 0.15]] as const;
const PRIORITIES = [["highest", 0.05], ["high", 0.20], ["medium", 0.55], ["low", 0.20]] as const;
const SOURCES = [
  ["user_stated", 0.15],
  ["error_resolution", 0.15],
  ["pattern", 0.2],
  ["discovery", 0.25],
  ["correction", 0.05],
  ["compaction", 0.15],
  [null, 0.05],
] as const;
const SUBJECTS = [
  "migrations",
  "the test runner",
  "eslint",
  "the build",
  "auth tokens",
  "the cache",
  "retries",
  "logging",
  "the CI pipeline",
  "feature flags",
  "pagination",
  "rate limits",
  "the ORM",
  "docker images",
  "env vars",
  "the release",
];
const VERBS = [
  "prefers",
  "always runs",
  "never touches",
  "fixed",
  "documented",
  "wraps",
  "pins",
  "splits",
  "renamed",
  "profiles",
];
const TAILS = [
  "before merging",
  "in watch mode",
  "with pnpm",
  "behind a flag",
  "on Fridays",
  "after the schema change",
  "for the staging env",
  "via the Makefile",
  "with strict types",
  "in one transaction",
];

export interface Tenant {
  index: number;
  id: string;
  weight: number;
  namespaces: string[];
  nsWeights: number[];
  projects: string[];
}

export interface MemoryRow {
  index: number;
  id: string;
  tenant: number;
  ownerId: string;
  namespace: string;
  content: string;
  memoryType: string;
  priority: string;
  source: string | null;
  strength: number;
  baseStrength: number;
  accessCount: number;
  lastAccessedAt: Date;
  createdAt: Date;
  sessionId: string;
  isValid: boolean;
  state: "active" | "soft_deleted";
  purgeAt: Date | null;
  importance: number;
  pinned: boolean;
  embeddingModel: string | null;
  embedding: Float32Array | null;
  cluster: number;
  sub: number;
}

function weighted<T>(rng: Rng, items: readonly (readonly [T, number])[]): T {
  let r = rng.next();
  for (const [v, w] of items) {
    if ((r -= w) < 0) return v;
  }
  const last = items[items.length - 1];
  if (!last) throw new Error("empty weights");
  return last[0];
}

export class Corpus {
  readonly size: number;
  readonly seed: number;
  readonly tenants: Tenant[];
  readonly clusters: number;
  private readonly cumTenant: Float64Array;
  private readonly centres: Float32Array;
  private readonly subs: Float32Array;
  /** Fixed "now" so ages (decay, TTL, purge) are reproducible relative to the load time. */
  readonly epoch: number;

  constructor(size: number, seed = 42, epoch = Date.now()) {
    this.size = size;
    this.seed = seed;
    this.epoch = epoch;
    const tenantCount = Math.max(20, Math.min(2000, Math.round(size / 500)));
    const rng = new Rng(seed, 0x7e4a47);
    this.tenants = [];
    let total = 0;
    for (let t = 0; t < tenantCount; t++) {
      // Zipf-like sizes: tenant 0 holds ~1/5 of the corpus, the tail a few dozen rows.
      const weight = 1 / Math.pow(t + 1, 1.1);
      total += weight;
      const projectCount = Math.max(1, Math.min(PROJECTS.length, Math.round(12 / Math.pow(t + 1, 0.35))));
      const projects: string[] = [];
      if (t === 0) projects.push("task_forge", "taskxforge", "task_forge2", "100%_done", "100xx_done");
      while (projects.length < projectCount) {
        const p = rng.pick(PROJECTS);
        if (!projects.includes(p)) projects.push(p);
      }
      const namespaces = ["devai/global", "devai/user"];
      const nsWeights = [0.2, 0.15];
      for (const p of projects) {
        namespaces.push(`devai/project/${p}`);
        nsWeights.push(0.35 / projects.length);
        for (const s of SUBSPACES) {
          namespaces.push(`devai/project/${p}/${s}`);
          nsWeights.push(0.30 / projects.length / SUBSPACES.length);
        }
      }
      this.tenants.push({ index: t, id: rng.uuid(), weight, namespaces, nsWeights, projects });
    }
    this.cumTenant = new Float64Array(tenantCount);
    let acc = 0;
    this.tenants.forEach((t, i) => {
      t.weight /= total;
      acc += t.weight;
      this.cumTenant[i] = acc;
    });
    this.clusters = Math.max(64, Math.min(2000, Math.round(size / 200)));
    this.centres = new Float32Array(this.clusters * DIM);
    this.subs = new Float32Array(this.clusters * 8 * DIM);
    const crng = new Rng(seed, 0xc1a55);
    for (let k = 0; k < this.clusters; k++) {
      const c = normalize(Float32Array.from({ length: DIM }, () => crng.gauss()));
      this.centres.set(c, k * DIM);
      for (let s = 0; s < 8; s++) {
        const v = normalize(Float32Array.from({ length: DIM }, () => crng.gauss()));
        this.subs.set(v, (k * 8 + s) * DIM);
      }
    }
  }

  tenantOf(rng: Rng): number {
    const r = rng.next();
    let lo = 0, hi = this.cumTenant.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((this.cumTenant[mid] ?? 1) < r) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The clusters a (tenant, namespace) scope draws its topics from. */
  scopeClusters(tenant: number, namespace: string): number[] {
    const h = hashString(`${this.seed}:${tenant}:${namespace}`);
    return [0, 1, 2, 3, 4, 5].map((j) => splitmix32(h + j) % this.clusters);
  }

  /** A vector of cluster k / sub-topic s with noise sigma, drawn from rng. */
  vector(rng: Rng, k: number, s: number, sigma: number): Float32Array {
    const v = new Float32Array(DIM);
    const co = k * DIM, so = (k * 8 + s) * DIM;
    for (let i = 0; i < DIM; i++) {
      v[i] = (this.centres[co + i] ?? 0) + 0.5 * (this.subs[so + i] ?? 0) + sigma * rng.gauss();
    }
    return normalize(v);
  }

  row(index: number): MemoryRow {
    const rng = new Rng(this.seed, index, 0x3e3);
    const tenant = this.tenantOf(rng);
    const t = this.tenants[tenant] as Tenant;
    let r = rng.next(), nsIdx = 0;
    for (; nsIdx < t.namespaces.length - 1; nsIdx++) if ((r -= t.nsWeights[nsIdx] ?? 0) < 0) break;
    const namespace = t.namespaces[nsIdx] as string;
    const clusters = this.scopeClusters(tenant, namespace);
    const cluster = rng.pick(clusters);
    const sub = rng.int(8);
    const memoryType = weighted(rng, TYPES);
    const priority = weighted(rng, PRIORITIES);
    const source = weighted(rng, SOURCES);
    const day = 86_400_000;
    const ageDays = Math.pow(rng.next(), 1.5) * 365;
    const createdAt = new Date(this.epoch - ageDays * day);
    const idleDays = Math.min(ageDays, Math.pow(rng.next(), 2) * 120);
    const lastAccessedAt = new Date(this.epoch - idleDays * day);
    const pinned = rng.next() < 0.02;
    const baseStrength = 0.3 + 0.7 * rng.next();
    const decays = !(pinned || priority === "highest");
    const strength = decays ? baseStrength * Math.pow(0.95, Math.floor(idleDays)) : baseStrength;
    const isValid = rng.next() >= 0.08;
    const softDeleted = rng.next() < 0.03;
    const purgeAt = softDeleted ? new Date(this.epoch + (rng.next() < 0.5 ? -1 : 1) * rng.next() * 30 * day) : null;
    const modelRoll = rng.next();
    const embeddingModel = modelRoll < 0.005 ? null : modelRoll < 0.035 ? OTHER_MODEL : MODEL;
    const sigma = 0.014 + 0.018 * rng.next();
    const embedding = embeddingModel === null ? null : this.vector(rng, cluster, sub, sigma);
    const project = namespace.split("/")[2] ?? "the workspace";
    const content = memoryType === "procedural"
      ? `To ship ${project}: run ${rng.pick(SUBJECTS)} checks ${rng.pick(TAILS)}, then ${rng.pick(VERBS)} ${
        rng.pick(SUBJECTS)
      } (note m${index})`
      : memoryType === "episodic"
      ? `Session ${rng.int(9999)}: ${rng.pick(VERBS)} ${rng.pick(SUBJECTS)} in ${project} ${
        rng.pick(TAILS)
      } (note m${index})`
      : `The user ${rng.pick(VERBS)} ${rng.pick(SUBJECTS)} ${rng.pick(TAILS)} in ${project} (note m${index})`;
    return {
      index,
      id: rng.uuid(),
      tenant,
      ownerId: t.id,
      namespace,
      content,
      memoryType,
      priority,
      source,
      strength: Math.max(0, Math.min(1, strength)),
      baseStrength,
      accessCount: rng.int(40),
      lastAccessedAt,
      createdAt,
      sessionId: `s-${tenant}-${rng.int(500)}`,
      isValid,
      state: softDeleted ? "soft_deleted" : "active",
      purgeAt,
      importance: 1 + rng.int(5),
      pinned,
      embeddingModel,
      embedding,
      cluster,
      sub,
    };
  }

  /** A query vector near cluster k (sub-topic s): similarity > 0.7 to same-sub-topic memories. */
  query(seedIndex: number, k: number, s: number): Float32Array {
    return this.vector(new Rng(this.seed, seedIndex, 0x9e7), k, s, 0.02);
  }
}

// ---------------------------------------------------------------- loading

const COPY_COLUMNS = [
  "id",
  "content",
  "embedding",
  "memory_type",
  "namespace",
  "priority",
  "source",
  "strength",
  "base_strength",
  "access_count",
  "last_accessed_at",
  "session_id",
  "is_valid",
  "state",
  "purge_at",
  "created_at",
  "updated_at",
  "owner_id",
  "importance",
  "pinned",
  "embedding_model",
  "metadata",
];

function copyText(v: string | null): string {
  if (v === null) return "\\N";
  return v.replace(/\\/g, "\\\\").replace(/\t/g, "\\t").replace(/\n/g, "\\n").replace(/\r/g, "\\r");
}

function vectorText(v: Float32Array): string {
  const parts = new Array<string>(v.length);
  for (let i = 0; i < v.length; i++) parts[i] = (v[i] ?? 0).toFixed(5);
  return `[${parts.join(",")}]`;
}

export function copyLine(r: MemoryRow): string {
  const metadata = JSON.stringify({
    agent_id: "devai",
    category: r.memoryType,
    keywords: [r.namespace.split("/").pop()],
    bench_i: r.index,
  });
  const cells = [
    r.id,
    copyText(r.content),
    r.embedding ? vectorText(r.embedding) : "\\N",
    r.memoryType,
    copyText(r.namespace),
    r.priority,
    r.source ?? "\\N",
    String(r.strength),
    String(r.baseStrength),
    String(r.accessCount),
    r.lastAccessedAt.toISOString(),
    copyText(r.sessionId),
    r.isValid ? "t" : "f",
    r.state,
    r.purgeAt ? r.purgeAt.toISOString() : "\\N",
    r.createdAt.toISOString(),
    r.createdAt.toISOString(),
    r.ownerId,
    String(r.importance),
    r.pinned ? "t" : "f",
    r.embeddingModel ?? "\\N",
    copyText(metadata),
  ];
  return cells.join("\t") + "\n";
}

/** Streams lines produced by lineOf(i) for i in [0, n) into a COPY ... FROM STDIN. */
export async function copyRows(
  sql: postgres.Sql,
  copySql: string,
  n: number,
  lineOf: (i: number) => string | null,
): Promise<void> {
  const writable = await sql.unsafe(copySql).writable();
  const batch = 256;
  async function* lines() {
    for (let i = 0; i < n; i += batch) {
      let chunk = "";
      for (let j = i; j < Math.min(n, i + batch); j++) chunk += lineOf(j) ?? "";
      if (chunk) yield chunk;
    }
  }
  await pipeline(Readable.from(lines()), writable);
}

export interface LoadResult {
  rows: number;
  generateAndCopySeconds: number;
  indexBuildSeconds: Record<string, number>;
  analyzeSeconds: number;
  tableSizeMb: number;
  hnswSizeMb: number;
  triggersDuringLoad: string;
}

/**
 * Loads the corpus into public.devai_memories: drops the HNSW and full-text indexes, COPYs with
 * triggers off (session_replication_role=replica: a bulk import, so no history rows and no
 * revision bumps), then rebuilds the dropped indexes exactly as the migrations defined them.
 */
export async function loadCorpus(url: string, corpus: Corpus): Promise<LoadResult> {
  const postgresMod = (await import("postgres")).default;
  const sql = postgresMod(url, {
    max: 1,
    onnotice: () => {},
    connection: { session_replication_role: "replica", application_name: "devai-bench-load" },
  });
  try {
    await sql`truncate public.devai_memories cascade`;
    const indexes = await sql<{ indexname: string; indexdef: string }[]>`
      select indexname, indexdef from pg_indexes
       where schemaname = 'public' and tablename = 'devai_memories'
         and (indexdef ilike '%using hnsw%' or indexdef ilike '%using gin%')`;
    for (const ix of indexes) await sql.unsafe(`drop index public.${quoteIdent(ix.indexname)}`);
    log(`loading ${corpus.size} rows with COPY (indexes dropped: ${indexes.map((i) => i.indexname).join(", ")})`);
    const t0 = now();
    await copyRows(
      sql,
      `copy public.devai_memories (${COPY_COLUMNS.join(", ")}) from stdin`,
      corpus.size,
      (i) => copyLine(corpus.row(i)),
    );
    const copySeconds = (now() - t0) / 1000;
    log(`COPY done in ${copySeconds.toFixed(1)} s`);
    // ~20% of memories get a related_to edge to a neighbour in their scope (relation boost input).
    await sql`truncate public.memory_relations`;
    await sql`
      insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength)
      select owner_id, id, nxt, 'related_to', 0.5 + (abs(hashtext(id::text)) % 500) / 1000.0
        from (select owner_id, id, lead(id) over (partition by owner_id, namespace order by created_at, id) as nxt
                from public.devai_memories) s
       where nxt is not null and abs(hashtext(id::text)) % 5 = 0`;
    const indexBuildSeconds: Record<string, number> = {};
    await sql`set maintenance_work_mem = '1GB'`;
    await sql`set max_parallel_maintenance_workers = 2`;
    for (const ix of indexes) {
      const t1 = now();
      await sql.unsafe(ix.indexdef);
      indexBuildSeconds[ix.indexname] = (now() - t1) / 1000;
      log(`index ${ix.indexname} built in ${(indexBuildSeconds[ix.indexname] ?? 0).toFixed(1)} s`);
    }
    const t2 = now();
    await sql`vacuum analyze public.devai_memories`;
    const analyzeSeconds = (now() - t2) / 1000;
    // What the devai-keyword-statistics job (every 15 minutes) would do after this ANALYZE.
    await sql`select memory_private.refresh_keyword_common_terms()`;
    const [sizes] = await sql<{ table_mb: number; hnsw_mb: number }[]>`
      select pg_total_relation_size('public.devai_memories')::float8 / 1048576 as table_mb,
             coalesce((select pg_relation_size(indexrelid)::float8 / 1048576 from pg_index i join pg_class c on c.oid = i.indexrelid
                        where i.indrelid = 'public.devai_memories'::regclass and c.relname = 'devai_memories_embedding_hnsw'), 0) as hnsw_mb`;
    return {
      rows: corpus.size,
      generateAndCopySeconds: copySeconds,
      indexBuildSeconds,
      analyzeSeconds,
      tableSizeMb: Math.round(sizes?.table_mb ?? 0),
      hnswSizeMb: Math.round(sizes?.hnsw_mb ?? 0),
      triggersDuringLoad: "off (session_replication_role=replica: bulk import, no history rows)",
    };
  } finally {
    await sql.end();
  }
}

export function quoteIdent(s: string): string {
  return `"${s.replace(/"/g, '""')}"`;
}
