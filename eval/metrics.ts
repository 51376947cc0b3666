// Ranking metrics of the eval, with binary relevance (a memory answers the question or not).
// Definitions: eval/README.md#metrics.

/** Share of the relevant memories found in the first k (0 when nothing is relevant). */
export function recallAt(ranked: readonly string[], relevant: ReadonlySet<string>, k: number): number {
  if (relevant.size === 0) return 0;
  let hits = 0;
  for (const id of ranked.slice(0, k)) if (relevant.has(id)) hits++;
  return hits / relevant.size;
}

/** 1 / rank of the first relevant memory; 0 when none is in the list. */
export function reciprocalRank(ranked: readonly string[], relevant: ReadonlySet<string>): number {
  const i = ranked.findIndex((id) => relevant.has(id));
  return i < 0 ? 0 : 1 / (i + 1);
}

/** nDCG@k: DCG of the list over the DCG of a list with every relevant memory first. */
export function ndcgAt(ranked: readonly string[], relevant: ReadonlySet<string>, k: number): number {
  if (relevant.size === 0) return 0;
  let dcg = 0;
  ranked.slice(0, k).forEach((id, i) => {
    if (relevant.has(id)) dcg += 1 / Math.log2(i + 2);
  });
  let ideal = 0;
  for (let i = 0; i < Math.min(k, relevant.size); i++) ideal += 1 / Math.log2(i + 2);
  return dcg / ideal;
}

/** Nearest-rank percentile (p in 0..100) of a non-empty sample. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

export const mean = (values: readonly number[]): number =>
  values.length === 0 ? NaN : values.reduce((a, b) => a + b, 0) / values.length;

export interface QualityFigures {
  n: number;
  recall_at_5: number;
  recall_at_10: number;
  recall_at_20: number;
  mrr: number;
  ndcg_at_10: number;
}

/** Mean of each metric over questions that have answers. */
export function qualityOf(
  rows: readonly { ranked: readonly string[]; relevant: ReadonlySet<string> }[],
): QualityFigures {
  const answerable = rows.filter((r) => r.relevant.size > 0);
  const avg = (f: (r: typeof answerable[number]) => number) => mean(answerable.map(f));
  return {
    n: answerable.length,
    recall_at_5: avg((r) => recallAt(r.ranked, r.relevant, 5)),
    recall_at_10: avg((r) => recallAt(r.ranked, r.relevant, 10)),
    recall_at_20: avg((r) => recallAt(r.ranked, r.relevant, 20)),
    mrr: avg((r) => reciprocalRank(r.ranked, r.relevant)),
    ndcg_at_10: avg((r) => ndcgAt(r.ranked, r.relevant, 10)),
  };
}
