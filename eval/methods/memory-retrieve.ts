// Methods served by the memory-retrieve function itself, one per search mode. The ranked list
// comes from one call with the largest top_k and threshold 0, so every method is judged on the
// same 50 candidates at most; `now` is the dataset's fixed now, so time words in a question
// ("last week") mean what they meant when the set was written. `extra` adds request fields.
import { MAX_TOP_K } from "../../supabase/functions/_shared/retrieval/schemas.ts";
import type { RetrieveResponse } from "../../supabase/functions/_shared/retrieval/schemas.ts";
import { callFunction, type RetrievalMethod } from "./method.ts";

type Retrieved = RetrieveResponse["memories"][number];

/**
 * The function's order with exact ties (same score and similarity), which it breaks by uuid and
 * so differently on every run, ordered by content instead: two runs give the same list.
 */
export function inStableOrder(memories: readonly Retrieved[]): Retrieved[] {
  return [...memories].sort((a, b) =>
    b.score - a.score || b.relevance - a.relevance || a.content.localeCompare(b.content)
  );
}

export function memoryRetrieveMethod(
  name: string,
  description: string,
  extra: Record<string, unknown> = {},
): RetrievalMethod {
  return {
    name,
    description,
    async rank(q, ctx) {
      const res = await callFunction<RetrieveResponse>(ctx, q.tenant, "memory-retrieve", {
        message: q.text,
        project: q.project,
        top_k: MAX_TOP_K,
        threshold: 0,
        keyword_threshold: 0,
        now: ctx.now.toISOString(),
        ...extra,
      });
      return inStableOrder(res.memories).map((m) => m.id);
    },
  };
}

/** The vector signal alone (match_memories), ranked by similarity × strength + boosts: retrieval before hybrid search. */
export const vector = memoryRetrieveMethod("vector", "memory-retrieve, mode vector (top_k 50, thresholds 0)", {
  mode: "vector",
});
/** The keyword signal alone (BM25-style over fts, exact identifiers). */
export const keyword = memoryRetrieveMethod("keyword", "memory-retrieve, mode keyword (top_k 50)", { mode: "keyword" });
/** Keyword + vector fused, no graph hops. */
export const hybrid = memoryRetrieveMethod(
  "hybrid",
  "memory-retrieve, mode hybrid, graph_depth 0 (top_k 50, thresholds 0)",
  { mode: "hybrid", graph_depth: 0 },
);
/** Keyword + vector + two graph hops (typed edges and shared entities) for every question. */
export const hybridGraph = memoryRetrieveMethod(
  "hybrid+graph",
  "memory-retrieve, mode hybrid, graph_depth 2 (top_k 50, thresholds 0)",
  { mode: "hybrid", graph_depth: 2 },
);
/** What memory-retrieve does by default (hybrid, graph depth planned from intent and complexity). */
export const planned = memoryRetrieveMethod(
  "planned",
  "memory-retrieve, mode hybrid, everything planned (top_k 50, thresholds 0)",
  { mode: "hybrid" },
);
