// What retrieval (memory-retrieve and memory.query) takes from living context, so a memory is
// judged the same way in a retrieval block as in an assembled context: the usage agents reported
// (ranking's usage factor, retrieval/rank.ts) and code lineage (another branch's unmerged notes
// and memories citing deleted or renamed files are left out; the branch checked out is
// preferred). docs/context.md#code-lineage, #usage-feedback.
import type { Tx } from "../db.ts";
import type { UsageCounts } from "../retrieval/rank.ts";
import { type Excluded, judgeMemory, LINEAGE_BOOST } from "./lineage.ts";
import type { LineageSignals } from "./schemas.ts";

export interface Feedback extends UsageCounts {
  cited_files: string[];
}

/** Usage counters and cited files of the given memories (context_candidates' details, as the tenant). */
export async function loadFeedback(tx: Tx, ids: readonly string[], scopes: readonly string[], ownerId: string): Promise<Map<string, Feedback>> {
  if (ids.length === 0) return new Map();
  const rows = await tx<(Feedback & { id: string })[]>`
    select id, cited_files, citation_count, ignore_count
      from public.context_candidates(match_namespaces => ${[...scopes]}::text[], given_ids => ${[...ids]}::uuid[],
                                     match_owner => ${ownerId}::uuid)`;
  return new Map(rows.map((r) => [r.id, { cited_files: r.cited_files ?? [], citation_count: r.citation_count, ignore_count: r.ignore_count }]));
}

/**
 * Rows minus what lineage leaves out, each with its usage counts and lineage factor for ranking.
 * A row without feedback (not visible to context_candidates' live rules, e.g. answered as_of) is
 * kept as it is.
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
    const judged = judgeMemory(row.id, row.metadata, f?.cited_files ?? [], signals);
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
