// What retrieval (memory-retrieve and memory.query) takes from living context, so a memory is
// judged the same way in a retrieval block as in an assembled context: the usage agents reported
// (ranking's usage factor, retrieval/rank.ts) and code lineage (another branch's unmerged notes
// and memories citing deleted or renamed files are left out; the branch checked out is
// preferred). docs/context.md#code-lineage, #usage-feedback.
import type { UsageCounts } from "../retrieval/rank.ts";
import { type Excluded, filesOf, judgeMemory, LINEAGE_BOOST } from "./lineage.ts";
import type { LineageSignals } from "./schemas.ts";

export interface Feedback extends UsageCounts {
  cited_files: string[];
}

/** A memory's usage counters and cited files as the searches' statements give them (public.memory_feedback). */
export type FeedbackRow = Feedback & { id: string; cited_files: string[] | null };

/** The rows by memory id. */
export function feedbackOf(rows: readonly FeedbackRow[]): Map<string, Feedback> {
  return new Map(
    rows.map((
      r,
    ) => [r.id, { cited_files: r.cited_files ?? [], citation_count: r.citation_count, ignore_count: r.ignore_count }]),
  );
}

/**
 * Rows minus what lineage leaves out, each with its usage counts and lineage factor for ranking.
 * A row without feedback (not visible to context_candidates' live rules, e.g. answered as_of) has
 * no usage counts, and is judged by the files its own metadata cites.
 */
export function applyFeedback<T extends { id: string; metadata: Record<string, unknown> }>(
  rows: readonly T[],
  feedback: ReadonlyMap<string, Feedback>,
  signals: LineageSignals = {},
): { kept: (T & { usage?: UsageCounts; factor: number })[]; excluded: Excluded[] } {
  const kept: (T & { usage?: UsageCounts; factor: number })[] = [];
  const excluded: Excluded[] = [];
  for (const row of rows) {
    const f = feedback.get(row.id);
    const judged = judgeMemory(row.id, row.metadata, f?.cited_files ?? filesOf(row.metadata), signals);
    if (judged.excluded) {
      excluded.push(judged.excluded);
      continue;
    }
    kept.push({
      ...row,
      ...(f ? { usage: { citation_count: f.citation_count, ignore_count: f.ignore_count } } : {}),
      factor: judged.lineage === "current_branch" ? LINEAGE_BOOST : 1,
    });
  }
  return { kept, excluded };
}
