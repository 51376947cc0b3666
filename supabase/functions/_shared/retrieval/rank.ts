// Ranking of retrieved memories: relevance × strength × usage (× a caller's factor), where relevance is what the hybrid
// search fused from its signals (0..1; docs/retrieval.md#fusion), plus small, bounded boosts so
// they reorder near-ties but never lift a weak match over a clearly better one:
//   priority   highest +0.05, high +0.03, medium +0.01, low 0 (user-stated facts win ties)
//   relation   +0.05 × the strongest relation edge touching the memory (w_rel × max related
//              strength); linked memories are corroborated knowledge
//   pinned     +0.02 (the user marked it as important)
// The largest total boost (0.12) is smaller than the gap between a memory two signals rank first
// and one only a single signal found, so relevance × strength stays the dominant term.
// Insights (how the user works, inferred by a model: docs/consolidation.md#insights) count at
// INSIGHT_WEIGHT of their relevance: context for the agent, never ahead of a fact that answers.
//
// usage is what agents reported about the memory (POST memory/usage; docs/context.md#usage-feedback):
//   usage = 1 − 0.5 × ignores / (ignores + citations + 3) + 0.25 × citations / (ignores + citations + 3)
// A memory never reported ranks as before (1); one injected often and never cited sinks toward
// 0.5 (10 ignores: 0.62); one cited every time rises toward 1.25 (5 citations: 1.16). The prior of
// 3 keeps one or two reports from moving it much.

export const PRIORITY_BOOST: Readonly<Record<string, number>> = { highest: 0.05, high: 0.03, medium: 0.01, low: 0 };
export const RELATION_WEIGHT = 0.05;
export const PINNED_BOOST = 0.02;
export const INSIGHT_WEIGHT = 0.5;
export const USAGE_PRIOR = 3;
export const IGNORE_PENALTY = 0.5;
export const CITATION_BONUS = 0.25;

export interface UsageCounts {
  citation_count: number;
  ignore_count: number;
}

export interface RankInput {
  id: string;
  relevance: number;
  strength: number;
  priority: string;
  pinned?: boolean;
  max_relation_strength?: number | null;
  memory_type?: string;
  usage?: UsageCounts;
  /** A caller's multiplier of relevance × strength (code lineage: the branch checked out). */
  factor?: number;
  /** Breaks exact ties: the newer memory first. */
  created_at?: Date | string;
}

/** The usage factor of the module comment: 1 without reports, 0.5..1.25 with them. */
export function usageFactor(usage?: UsageCounts): number {
  if (!usage) return 1;
  const cited = Math.max(0, usage.citation_count);
  const ignored = Math.max(0, usage.ignore_count);
  const n = cited + ignored + USAGE_PRIOR;
  return 1 - IGNORE_PENALTY * (ignored / n) + CITATION_BONUS * (cited / n);
}

export function scoreMemory(m: RankInput): number {
  const base = m.relevance * m.strength * usageFactor(m.usage) * (m.factor ?? 1) *
    (m.memory_type === "insight" ? INSIGHT_WEIGHT : 1);
  const priority = PRIORITY_BOOST[m.priority] ?? 0;
  const relation = RELATION_WEIGHT * Math.min(1, Math.max(0, m.max_relation_strength ?? 0));
  return base + priority + relation + (m.pinned ? PINNED_BOOST : 0);
}

/**
 * Highest score first; ties by relevance, then the newer memory, then id, so the order is
 * deterministic and the same wherever the same memories are stored (ids differ between databases).
 */
export function rankMemories<T extends RankInput>(memories: readonly T[]): (T & { score: number })[] {
  const time = (m: T) => (m.created_at === undefined ? 0 : new Date(m.created_at).getTime()) || 0;
  const newer = (a: T, b: T) => time(b) - time(a);
  return memories
    .map((m) => ({ ...m, score: scoreMemory(m) }))
    .sort((a, b) =>
      b.score - a.score || b.relevance - a.relevance || newer(a, b) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
    );
}
