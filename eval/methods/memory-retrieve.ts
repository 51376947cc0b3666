// Methods served by the memory-retrieve function itself. The ranked list comes from one call with
// the largest top_k and threshold 0, so every method is judged on the same 50 candidates at most;
// `extra` adds request fields, e.g. a retrieval mode once the function has one:
//   memoryRetrieveMethod("keyword", "memory-retrieve, mode keyword", { mode: "keyword" })
import { MAX_TOP_K } from "../../supabase/functions/memory-retrieve/schemas.ts";
import type { RetrieveResponse } from "../../supabase/functions/memory-retrieve/schemas.ts";
import { callFunction, type RetrievalMethod } from "./method.ts";

type Retrieved = RetrieveResponse["memories"][number];

/**
 * The function's order with exact ties (same score and similarity), which it breaks by uuid and
 * so differently on every run, ordered by content instead: two runs give the same list.
 */
export function inStableOrder(memories: readonly Retrieved[]): Retrieved[] {
  return [...memories].sort((a, b) => b.score - a.score || b.similarity - a.similarity || a.content.localeCompare(b.content));
}

export function memoryRetrieveMethod(name: string, description: string, extra: Record<string, unknown> = {}): RetrievalMethod {
  return {
    name,
    description,
    async rank(q, ctx) {
      const res = await callFunction<RetrieveResponse>(ctx, q.tenant, "memory-retrieve", {
        message: q.text,
        project: q.project,
        top_k: MAX_TOP_K,
        threshold: 0,
        ...extra,
      });
      return inStableOrder(res.memories).map((m) => m.id);
    },
  };
}

/** Today's memory-retrieve: vector search (match_memories), ranked by similarity × strength + boosts. */
export const vector = memoryRetrieveMethod("vector", "memory-retrieve as shipped (vector search, top_k 50, threshold 0)");
