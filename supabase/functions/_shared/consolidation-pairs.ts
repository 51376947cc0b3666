// Which pairs of a tenant's memories the nightly consolidation looks at, without a model
// (docs/consolidation.md#nightly-consolidation):
//
//   pool        valid, active facts (no raw episodes, insights or session summaries): created or updated within
//               consolidation_recent_hours first, then the top decile by retrievals, then
//               importance ≥ 3, newest first; at most consolidation_pool_per_night
//   neighbours  each pool memory's hybrid search (the one every similarity lookup uses:
//               docs/retrieval.md) in its own scope (a project's, the user's, the global one),
//               with its stored vector when it is of the configured model (else by its words);
//               a neighbour counts when its cosine reaches the model's `consolidate` threshold,
//               or its words cover the memory as a near-verbatim restatement does
//   pre-filters the older memory touched within consolidation_recency_days; a fingerprint of the
//               pair (same rounded score) younger than consolidation_fingerprint_days skips it, and
//               so does a contradiction already recorded for it
//   split       near-verbatim (score ≥ the model's `verbatim` threshold and the same words):
//               merged without a model; lexical overlap or a numeric step: for the judge (unless
//               a near-verbatim merge takes one of the two away); the rest is left alone
import type { Tx } from "./db.ts";
import type { BackgroundSettings } from "./background-settings.ts";
import { NEAR_VERBATIM_COVERAGE } from "./dedup.ts";
import type { SimilarityThresholds } from "./embeddings.ts";
import { actionFor, olderFirst, type Pair, type PairMemory } from "./pair-judge.ts";
import { nearVerbatim, worthJudging } from "./pair-prefilter.ts";
import { hybridSearch } from "./search/hybrid.ts";

const NEIGHBOURS_PER_MEMORY = 10;
/** Session summaries are each one session's record, never a duplicate of another's. */
const SESSION_SUMMARY = "session_summary";
const FACT_TYPES = ["semantic", "episodic", "procedural"];

/** The scope a namespace belongs to: `<root>/project/<p>`, `<root>/user` or `<root>/global`. */
export function scopeBaseOf(namespace: string): string {
  const parts = namespace.split("/");
  return parts[1] === "project" && parts[2] ? parts.slice(0, 3).join("/") : parts.slice(0, 2).join("/");
}

interface PoolRow extends PairMemory {
  embedding: string | null;
  touched_at: Date;
}

export interface PairPlan {
  pool: number;
  /** Near-verbatim pairs, merged without a model. */
  verbatim: Pair[];
  /** Pairs for the judge, best score first. */
  judge: Pair[];
  /** Pairs skipped by a fresh fingerprint or a recorded contradiction. */
  skipped: number;
}

const key = (a: string, b: string) => (a < b ? `${a}|${b}` : `${b}|${a}`);
export const round2 = (x: number) => Math.round(x * 100) / 100;

export async function planPairs(
  tx: Tx,
  input: { ownerId: string; model: string; thresholds: SimilarityThresholds; settings: BackgroundSettings; now: Date },
): Promise<PairPlan> {
  const { settings, now, thresholds } = input;
  const pool = await tx<PoolRow[]>`
    with facts as (
      select m.* from public.devai_memories m
       where m.is_valid and m.state = 'active' and m.source is distinct from 'conversation'
         and m.memory_type = any (${FACT_TYPES}::text[]) and m.metadata ->> 'kind' is distinct from ${SESSION_SUMMARY}
    ),
    decile as (
      select coalesce(percentile_disc(0.9) within group (order by f.access_count), 0) as p90 from facts f
    )
    select f.id, f.content, f.memory_type, f.namespace, f.source, f.priority, f.pinned, f.access_count, f.created_at,
           case when f.embedding_model = ${input.model} then f.embedding::text end as embedding,
           greatest(f.created_at, f.updated_at, f.last_accessed_at) as touched_at
      from facts f, decile d
     where f.updated_at >= ${now}::timestamptz - make_interval(secs => ${settings.recentHours * 3600})
        or f.created_at >= ${now}::timestamptz - make_interval(secs => ${settings.recentHours * 3600})
        or f.importance >= 3
        or (f.access_count > 0 and f.access_count >= d.p90)
     order by (f.updated_at >= ${now}::timestamptz - make_interval(secs => ${settings.recentHours * 3600})
               or f.created_at >= ${now}::timestamptz - make_interval(secs => ${settings.recentHours * 3600})) desc,
              (f.access_count > 0 and f.access_count >= d.p90) desc,
              f.updated_at desc, f.id
     limit ${settings.poolPerNight}`;

  const [known] = await tx<{ fingerprints: Record<string, number>; contradicted: string[] }[]>`
    select coalesce((select jsonb_object_agg(c.id_a || '|' || c.id_b, c.score)
                       from public.memory_pair_checks c
                      where c.kind = 'consolidation'
                        and c.checked_at >= ${now}::timestamptz - make_interval(secs => ${
    settings.fingerprintDays * 86400
  })), '{}') as fingerprints,
           coalesce((select array_agg(least(x.memory_a, x.memory_b) || '|' || greatest(x.memory_a, x.memory_b))
                       from public.memory_contradictions x), '{}') as contradicted`;
  const contradicted = new Set(known!.contradicted);
  const recencyFloor = now.getTime() - settings.recencyDays * 86_400_000;

  const seen = new Set<string>();
  const plan: PairPlan = { pool: pool.length, verbatim: [], judge: [], skipped: 0 };
  for (const m of pool) {
    const found = await hybridSearch(tx, {
      queryText: m.content,
      vector: m.embedding ? (JSON.parse(m.embedding) as number[]) : undefined,
      embeddingModel: input.model,
      scopes: [scopeBaseOf(m.namespace)],
      ownerId: input.ownerId,
      limit: NEIGHBOURS_PER_MEMORY,
      threshold: thresholds.consolidate,
      graphDepth: 0,
      memoryTypes: FACT_TYPES,
    });
    for (const n of found) {
      if (n.id === m.id || n.metadata?.kind === SESSION_SUMMARY) continue;
      const score = Math.max(
        n.similarity ?? 0,
        (n.keyword_coverage ?? 0) >= NEAR_VERBATIM_COVERAGE ? thresholds.dedup : 0,
      );
      if (score < thresholds.consolidate) continue;
      const k = key(m.id, n.id);
      if (seen.has(k)) continue;
      seen.add(k);
      const other: PairMemory & { touched_at: Date } = {
        id: n.id,
        content: n.content,
        memory_type: n.memory_type,
        namespace: n.namespace,
        source: n.source,
        priority: n.priority,
        pinned: n.pinned,
        access_count: n.access_count,
        created_at: new Date(n.created_at),
        touched_at: new Date(Math.max(+new Date(n.created_at), +new Date(n.updated_at), +new Date(n.last_accessed_at))),
      };
      const me = { ...m, created_at: new Date(m.created_at), touched_at: new Date(m.touched_at) };
      const [older, newer] = olderFirst(me, other);
      if (older.touched_at.getTime() < recencyFloor) continue;
      if (contradicted.has(k) || known!.fingerprints[k] === round2(score)) {
        plan.skipped++;
        continue;
      }
      const pair: Pair = { older: strip(older), newer: strip(newer), score: Math.min(1, score) };
      if (score >= thresholds.verbatim && nearVerbatim(older.content, newer.content)) plan.verbatim.push(pair);
      else if (worthJudging(older.content, newer.content)) plan.judge.push(pair);
    }
  }
  // A memory a near-verbatim merge takes away needs no judging: its pairs with the survivor's
  // neighbours are the survivor's pairs too.
  const mergedAway = new Set(plan.verbatim.flatMap((p) => {
    const a = actionFor({ ...p, verdict: "verbatim", reason: "" });
    return a.action === "merge" ? [a.drop.id] : [];
  }));
  plan.judge = plan.judge.filter((p) => !mergedAway.has(p.older.id) && !mergedAway.has(p.newer.id));
  plan.judge.sort((a, b) =>
    b.score - a.score || key(a.older.id, a.newer.id).localeCompare(key(b.older.id, b.newer.id))
  );
  return plan;
}

function strip(m: PairMemory & { embedding?: unknown; touched_at?: unknown }): PairMemory {
  const { id, content, memory_type, namespace, source, priority, pinned, access_count, created_at } = m;
  return {
    id,
    content,
    memory_type,
    namespace,
    source,
    priority,
    pinned,
    access_count: Number(access_count),
    created_at,
  };
}
