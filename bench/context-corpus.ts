// The `context` suite's tenant: 10,000 coding memories of one project, deterministic from a seed,
// written the way the service writes them (triggers on: fts and history; entity links by the
// rules and metadata.files, as the tenant), embedded with the offline embedder. A repository of
// 20 areas × 2 modules × 10 files; memories of twelve categories mention its files, error codes,
// commands and identifiers; 60% record the files they are about, 10% a feature branch (half of
// those merged), some sit in the user and global scopes.
import { citedFileLinks, filesOf } from "../supabase/functions/_shared/context/lineage.ts";
import { withTenant } from "../supabase/functions/_shared/db.ts";
import { embedLocally } from "../supabase/functions/_shared/embeddings.ts";
import { LOCAL_EMBEDDING_MODEL } from "../supabase/functions/_shared/env.ts";
import { linkEntities, linkEntitiesByRules } from "../supabase/functions/_shared/entities.ts";
import type { Sql } from "./benchdb.ts";
import { Rng, vectorLiteral } from "./lib.ts";

export const CONTEXT_TENANT = "c0a7e470-0000-4000-8000-00000000c0de";
export const CONTEXT_PROJECT = "shop-platform";

const AREAS = [
  "auth",
  "cart",
  "checkout",
  "payments",
  "orders",
  "inventory",
  "search",
  "catalog",
  "pricing",
  "shipping",
  "notifications",
  "users",
  "admin",
  "reports",
  "api",
  "db",
  "jobs",
  "cache",
  "config",
  "i18n",
];
const SUBS = ["core", "http"];
const FILES = ["index", "service", "handler", "schema", "client", "queue", "store", "rules", "mapper", "errors"];
export const ERRORS = [
  "TS2345",
  "TS2339",
  "ERR_MODULE_NOT_FOUND",
  "ERR_PNPM_OUTDATED_LOCKFILE",
  "TypeError",
  "RangeError",
  "ECONNREFUSED",
  "ETIMEDOUT",
  "SQLSTATE 23505",
  "SQLSTATE 40001",
  "E11000",
  "ERR_INVALID_ARG_TYPE",
];
const THINGS = [
  "the retry budget",
  "the idempotency key",
  "the cursor pagination",
  "the price cache",
  "the tax table",
  "the outbox",
  "the rate limiter",
  "the session store",
  "the feature flag",
  "the audit log",
  "the webhook signature",
  "the batch size",
];
const REASONS = [
  "latency under load",
  "a duplicate charge incident",
  "the p95 budget",
  "consistency across regions",
  "the security review",
  "cost",
  "a flaky integration test",
  "the migration to Postgres 17",
];
const CATEGORIES: [string | null, number][] = [
  ["architecture", 15],
  ["decisions", 12],
  ["conventions", 8],
  ["errors_and_fixes", 15],
  ["commands", 8],
  ["testing", 10],
  ["build", 5],
  ["dependencies", 5],
  ["workflows", 4],
  ["procedural", 8],
  [null, 10],
];

export const contextFile = (area: string, sub: string, file: string) => `src/${area}/${sub}/${file}.ts`;

export interface ContextRow {
  content: string;
  memory_type: "semantic" | "procedural" | "episodic";
  namespace: string;
  metadata: Record<string, unknown>;
  importance: number;
}

function category(rng: Rng): string | null {
  let r = rng.int(100);
  for (const [c, w] of CATEGORIES) {
    if (r < w) return c;
    r -= w;
  }
  return null;
}

export function contextRow(seed: number, i: number): ContextRow {
  const rng = new Rng(seed, i);
  const area = rng.pick(AREAS), sub = rng.pick(SUBS), file = contextFile(area, sub, rng.pick(FILES));
  const cat = category(rng);
  const thing = rng.pick(THINGS), reason = rng.pick(REASONS), err = rng.pick(ERRORS), n = i % 997;
  const content = ({
    architecture: `${file} owns ${thing} of the ${area} ${sub} module and talks to ${
      rng.pick(AREAS)
    } through its client (case ${n}).`,
    decisions: `The team chose to keep ${thing} in ${file} because of ${reason} (decision ${n}).`,
    conventions:
      `In ${area} code, ${thing} is always configured through ${area}_${sub}_config and never inline (rule ${n}).`,
    errors_and_fixes:
      `${err} in ${file} came from ${thing}; the fix was to validate it before the ${area} call (incident ${n}).`,
    commands: `Run pnpm --filter ${area} test:${sub} to check ${thing} locally (command ${n}).`,
    testing: `The ${area} ${sub} tests stub ${thing} with a fake clock and assert on ${file} (suite ${n}).`,
    build: `The ${area} package builds with tsup and emits ${area}-${sub}.js; ${thing} is tree-shaken (build ${n}).`,
    dependencies: `${area}-${sub} depends on zod 4 and postgres 3 for ${thing} (dependency ${n}).`,
    workflows:
      `Changes to ${thing} in ${area} need a reviewer from the ${area} team and a staging soak (workflow ${n}).`,
    procedural:
      `To rotate ${thing} in ${area}: drain the queue, flip the flag, redeploy ${area}-${sub}, verify (procedure ${n}).`,
    none: `${area} ${sub} notes: ${thing} was discussed in relation to ${reason} (note ${n}).`,
  } as Record<string, string>)[cat ?? "none"]!;
  const metadata: Record<string, unknown> = cat && cat !== "procedural" ? { category: cat } : {};
  if (rng.int(100) < 60) metadata.files = [file];
  if (rng.int(100) < 10) {
    metadata.branch = `feat/${area}-${rng.int(20)}`;
    metadata.commit = rng.int(0x7fffffff).toString(16).padStart(8, "0") +
      rng.int(0x7fffffff).toString(16).padStart(8, "0");
  }
  const scope = rng.int(100);
  const namespace = scope < 5
    ? "devai/user/preferences"
    : scope < 8
    ? "devai/global/notes"
    : `devai/project/${CONTEXT_PROJECT}/${area}`;
  return {
    content,
    memory_type: cat === "procedural" ? "procedural" : "semantic",
    namespace,
    metadata,
    importance: 1 + rng.int(5),
  };
}

/** Branches of the corpus merged into main (what a client on main reports as merged_branches). */
export function mergedBranches(): string[] {
  return AREAS.flatMap((a) => Array.from({ length: 10 }, (_, k) => `feat/${a}-${k * 2}`));
}

/** A file of the corpus' repository, drawn from a stream (the suite's requests). */
export function randomFile(rng: Rng): { area: string; file: string } {
  const area = rng.pick(AREAS);
  return { area, file: contextFile(area, rng.pick(SUBS), rng.pick(FILES)) };
}

/** Loads the tenant (idempotent: skipped when it has `count` memories already); returns seconds. */
export async function loadContextTenant(
  sql: Sql,
  count: number,
  seed: number,
): Promise<{ seconds: number; loaded: number }> {
  const t0 = performance.now();
  const [have] = await sql<
    { n: number }[]
  >`select count(*)::int as n from public.devai_memories where owner_id = ${CONTEXT_TENANT}`;
  if ((have?.n ?? 0) >= count) return { seconds: 0, loaded: 0 };
  for (let start = 0; start < count; start += 250) {
    const rows = Array.from({ length: Math.min(250, count - start) }, (_, k) => contextRow(seed, start + k));
    const ids = await sql.begin(async (tx) => {
      await tx`select set_config('memory.actor', 'bench:context', true)`;
      return await tx<{ id: string }[]>`
        insert into public.devai_memories (owner_id, content, embedding, embedding_model, memory_type, namespace, importance, metadata, source)
        select ${CONTEXT_TENANT}::uuid, r.content, r.embedding::extensions.vector, ${LOCAL_EMBEDDING_MODEL}, r.memory_type, r.namespace, r.importance,
               r.metadata, 'discovery'
          from jsonb_to_recordset(${
        tx.json(rows.map((r) => ({ ...r, embedding: vectorLiteral(embedLocally(r.content)) })) as never)
      })
               as r(content text, embedding text, memory_type text, namespace text, importance smallint, metadata jsonb)
        returning id`;
    });
    const written = rows.map((r, k) => ({ id: ids[k]!.id, content: r.content, metadata: r.metadata }));
    await withTenant(sql, { tenantId: CONTEXT_TENANT, actor: "bench:context" }, async (tx) => {
      for (let k = 0; k < written.length; k += 50) {
        const part = written.slice(k, k + 50);
        await linkEntitiesByRules(tx, part);
        await linkEntities(tx, part.flatMap((m) => citedFileLinks(m.id, filesOf(m.metadata))));
      }
    });
  }
  await sql`analyze public.devai_memories`;
  await sql`analyze public.memory_entities`;
  await sql`analyze public.memory_entity_links`;
  return { seconds: (performance.now() - t0) / 1000, loaded: count };
}
