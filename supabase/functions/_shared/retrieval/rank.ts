// Ranking of retrieved memories: relevance × strength, where relevance is what the hybrid search
// fused from its signals (0..1; docs/retrieval.md#fusion), plus small, bounded boosts so they
// reorder near-ties but never lift a weak match over a clearly better one:
//   priority   highest +0.05, high +0.03, medium +0.01, low 0 (user-stated facts win ties)
//   relation   +0.05 × the strongest relation edge touching the memory (seed 001 §2: w_rel × max
//              related strength); linked memories are corroborated knowledge
//   pinned     +0.02 (the user marked it as important)
// The largest total boost (0.12) is smaller than the gap between a memory two signals rank first
// and one only a single signal found, so relevance × strength stays the dominant term.
// Insights (how the user works, inferred by a model: docs/consolidation.md#insights) count at
// INSIGHT_WEIGHT of their relevance: context for the agent, never ahead of a fact that answers.

export const PRIORITY_BOOST: Readonly<Record<string, number>> = { highest: 0.05, high: 0.03, medium: 0.01, low: 0 };
export const RELATION_WEIGHT = 0.05;
export const PINNED_BOOST = 0.02;
export const INSIGHT_WEIGHT = 0.5;

export interface RankInput {
  id: string;
  relevance: number;
  strength: number;
  priority: string;
  pinned?: boolean;
  max_relation_strength?: number | null;
  memory_type?: string;
}

export function scoreMemory(m: RankInput): number {
  const base = m.relevance * m.strength * (m.memory_type === "insight" ? INSIGHT_WEIGHT : 1);
  const priority = PRIORITY_BOOST[m.priority] ?? 0;
  const relation = RELATION_WEIGHT * Math.min(1, Math.max(0, m.max_relation_strength ?? 0));
  return base + priority + relation + (m.pinned ? PINNED_BOOST : 0);
}

/** Highest score first; ties by relevance, then id, so the order is deterministic. */
export function rankMemories<T extends RankInput>(memories: readonly T[]): (T & { score: number })[] {
  return memories
    .map((m) => ({ ...m, score: scoreMemory(m) }))
    .sort((a, b) => b.score - a.score || b.relevance - a.relevance || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
