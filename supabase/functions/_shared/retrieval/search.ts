// What both searches (retrieve and memory.query) share: the rows a search returns, the scopes it
// covers, how a response explains the search and the one memory_events row each search records.
import type { TenantContext, Tx } from "../db.ts";
import { fusionWeights, type HybridRow, type SearchMode, signalsOf } from "../search/hybrid.ts";
import type { ResolvedPlan } from "../search/plan.ts";
import type { SearchInfo } from "./schemas.ts";

/** A row of query_memories: a hybrid search row plus the category's context mode. */
export interface QueryRow extends HybridRow {
  category: string;
  category_context: "all" | "rag";
}

export { retrievalScopes } from "../scopes.ts";

/** One memory_events row per search: node context, op search, best similarity. */
export async function recordSearch(
  tx: Tx,
  caller: TenantContext,
  threadId: string | null,
  rows: readonly { similarity: number | null }[],
  category: string | null,
  meta: Record<string, unknown>,
): Promise<void> {
  const sims = rows.flatMap((r) => (r.similarity == null ? [] : [r.similarity]));
  const best = sims.length > 0 ? Math.max(...sims) : null;
  await tx`
    insert into public.memory_events (owner_id, thread_id, node, op, status, category, sim, meta)
    values (${caller.tenantId}::uuid, ${threadId}, 'context', 'search', 'ok', ${category}, ${best},
            ${tx.json(meta as never)})`;
}

/** The search block of a response: how the query was read and searched (docs/retrieval.md#explain). */
export async function searchInfo(tx: Tx, model: string, mode: SearchMode, resolved: ResolvedPlan, topK: number, budget: number): Promise<SearchInfo> {
  const w = resolved.window;
  return {
    mode,
    intent: resolved.intent.intent,
    intent_by: resolved.intent.by,
    complexity: resolved.complexity,
    top_k: topK,
    budget_tokens: budget,
    graph_depth: mode === "hybrid" ? resolved.plan.graphDepth : 0,
    weights: await fusionWeights(tx, model),
    time_window: w ? { after: w.after?.toISOString() ?? null, before: w.before?.toISOString() ?? null, from: w.from } : null,
  };
}

/** The fields every returned memory shares in both modes: what it is and which signals found it. */
export function explainRow(m: HybridRow & { score: number }) {
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
