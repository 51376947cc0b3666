// What both searches (retrieve and memory.query) share: the rows a search returns, the scopes it
// covers, how a response explains the search and what each search writes behind its answer.
import type { FusionWeights, HybridRow, SearchMode } from "../search/hybrid.ts";
import { signalsOf } from "../search/hybrid.ts";
import type { ResolvedPlan } from "../search/plan.ts";
import type { SearchInfo } from "./schemas.ts";
import type { SearchWrite } from "./write-behind.ts";

/** A row of query_memories: a hybrid search row plus the category's context mode. */
export interface QueryRow extends HybridRow {
  category: string;
  category_context: "all" | "rag";
}

export { retrievalScopes } from "../scopes.ts";

/**
 * What a search writes, queued behind its answer (write-behind.ts): the memories it used, to
 * reinforce at the search's instant `at`, and its one memory_events row (node context, op search,
 * the best similarity). `reinforce` is empty for a search that must not reinforce (as of an instant).
 */
export function searchWrite(
  at: string,
  reinforce: readonly string[],
  threadId: string | null,
  rows: readonly { similarity: number | null }[],
  category: string | null,
  meta: Record<string, unknown>,
): SearchWrite {
  const sims = rows.flatMap((r) => (r.similarity == null ? [] : [r.similarity]));
  const best = sims.length > 0 ? Math.max(...sims) : null;
  return { at, ids: [...reinforce], thread_id: threadId, category, sim: best, meta };
}

/** The search block of a response: how the query was read and searched (docs/retrieval.md#explain). */
export function searchInfo(
  weights: FusionWeights,
  mode: SearchMode,
  resolved: ResolvedPlan,
  topK: number,
  budget: number,
): SearchInfo {
  const w = resolved.window;
  // The weights the fusion used (public.hybrid_search): a pinned mode's other signals, and the
  // graph with neither hops nor names to look up, weigh nothing.
  const graph = mode === "hybrid" && (resolved.plan.graphDepth > 0 || resolved.entityTerms.length > 0);
  return {
    mode,
    intent: resolved.intent.intent,
    intent_by: resolved.intent.by,
    complexity: resolved.complexity,
    top_k: topK,
    budget_tokens: budget,
    graph_depth: mode === "hybrid" ? resolved.plan.graphDepth : 0,
    weights: {
      ...weights,
      keyword: mode === "vector" ? 0 : weights.keyword,
      vector: mode === "keyword" ? 0 : weights.vector,
      graph: graph ? weights.graph : 0,
    },
    time_window: w
      ? { after: w.after?.toISOString() ?? null, before: w.before?.toISOString() ?? null, from: w.from }
      : null,
  };
}

/**
 * A search row as public.retrieve_for_turn gives it: the fields a retrieval reads of a memory
 * (ranking, lineage, packing, the answer's explanation), not its usage counters, session, category
 * or last change (migration 20261210100000; docs/retrieval.md#one-call).
 */
export type TurnRow = Omit<
  HybridRow,
  "importance" | "session_id" | "access_count" | "last_accessed_at" | "updated_at" | "category"
>;

const TIMESTAMPS = ["last_accessed_at", "created_at", "updated_at"] as const;

/** A search row as jsonb gives it (timestamps as text) back in the shape postgres.js gives rows. */
export function rowFromJson<T extends TurnRow>(row: Record<string, unknown>): T {
  const out: Record<string, unknown> = { ...row };
  for (const k of TIMESTAMPS) if (k in row) out[k] = new Date(row[k] as string);
  return out as T;
}

/** The fields every returned memory shares in both modes: what it is and which signals found it. */
export function explainRow(m: TurnRow & { score: number }) {
  return {
    id: m.id,
    content: m.content,
    memory_type: m.memory_type,
    namespace: m.namespace,
    similarity: m.similarity,
    relevance: m.relevance,
    signals: signalsOf(m),
    strength: m.strength,
    score: m.score,
  };
}
