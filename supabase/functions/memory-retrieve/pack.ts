// Packs ranked memories into a token budget. The budget is exact (ARCHITECTURE invariant 6): the
// FINAL block text (heading, delta header, section titles, bullets, related bullets and the
// truncation line) is counted with the tokenizer and never exceeds budget_tokens.
//
// How: greedy in priority order (delta bullets, then memories by rank, then at most MAX_RELATED
// related bullets), using per-line token counts as an estimate so the block is not re-tokenized
// for every candidate; then the rendered block is counted exactly and, while it is over budget,
// the last thing added is dropped. Per-line counts overestimate slightly (BPE merges across the
// joining newlines only ever save tokens), so the exact pass almost never has to drop anything.
// A memory that does not fit is skipped and later, shorter ones are still tried.
import { countTokens } from "../_shared/tokens.ts";
import { BLOCK_HEADING, type FormatContext, type FormatMemory, memoryLine, relatedLine, renderBlock, type SectionKey, sectionOf, sectionTitle, truncationLine } from "./format.ts";

export const MAX_RELATED = 2;

export interface RelatedCandidate {
  id: string;
  anchor_id: string;
  content: string;
}

export interface PackInput<M extends FormatMemory> {
  /** Candidates in rank order (best first). */
  ranked: readonly M[];
  budgetTokens: number;
  /** Delta header: its first line ("Memory updates since rev X:") and up to 3 bullets. */
  deltaHeader?: string;
  deltaBullets?: readonly string[];
  related?: readonly RelatedCandidate[];
}

export interface PackResult<M extends FormatMemory> {
  block: string;
  tokenCount: number;
  injected: M[];
  /** Ranked memories left out (the N of the truncation line). */
  truncatedCount: number;
  related: RelatedCandidate[];
  deltaBullets: string[];
}

type Added<M> = { kind: "delta"; line: string } | { kind: "memory"; memory: M } | { kind: "related"; related: RelatedCandidate };

export function packIntoBudget<M extends FormatMemory>(input: PackInput<M>, ctx: FormatContext): PackResult<M> {
  const budget = input.budgetTokens;
  const total = input.ranked.length;
  const lineCost = (line: string) => countTokens(line) + 1; // + the joining newline
  const added: Added<M>[] = [];
  const sections = new Set<SectionKey>();
  let est = lineCost(BLOCK_HEADING);
  let injectedCount = 0;
  const truncCost = (n: number) => (n > 0 ? lineCost(truncationLine(n)) : 0);
  const fits = (extra: number, remaining: number) => est + extra + truncCost(remaining) <= budget;

  // 1. Delta header: the header line comes with the first bullet that fits.
  const deltaBullets = input.deltaBullets ?? [];
  if (input.deltaHeader && deltaBullets.length > 0) {
    let headerPaid = false;
    for (const bullet of deltaBullets) {
      const extra = lineCost(bullet) + (headerPaid ? 0 : lineCost(input.deltaHeader) + 1);
      if (!fits(extra, total)) continue;
      est += extra;
      headerPaid = true;
      added.push({ kind: "delta", line: bullet });
    }
  }

  // 2. Memories in rank order; a section title is paid by its first memory.
  for (const m of input.ranked) {
    const key = sectionOf(m, ctx);
    const extra = lineCost(memoryLine(m)) + (sections.has(key) ? 0 : lineCost(sectionTitle(key, ctx)) + 1);
    if (!fits(extra, total - injectedCount - 1)) continue;
    est += extra;
    sections.add(key);
    injectedCount++;
    added.push({ kind: "memory", memory: m });
  }

  // 3. Related bullets (seed 001 §2), only under an injected memory and never duplicating one.
  const injectedIds = new Set(added.flatMap((a) => (a.kind === "memory" ? [a.memory.id] : [])));
  let relatedCount = 0;
  for (const r of input.related ?? []) {
    if (relatedCount >= MAX_RELATED) break;
    if (!injectedIds.has(r.anchor_id) || injectedIds.has(r.id)) continue;
    const extra = lineCost(relatedLine(r.content));
    if (!fits(extra, total - injectedCount)) continue;
    est += extra;
    relatedCount++;
    injectedIds.add(r.id);
    added.push({ kind: "related", related: r });
  }

  // 4. Exact count of the final text; drop the last addition until it fits.
  for (;;) {
    const result = assemble(added, input, ctx, total);
    if (result.tokenCount <= budget) return result;
    if (added.length === 0) {
      // Not even the heading and truncation line fit: inject nothing.
      return { block: "", tokenCount: 0, injected: [], truncatedCount: total, related: [], deltaBullets: [] };
    }
    added.pop();
  }
}

function assemble<M extends FormatMemory>(added: readonly Added<M>[], input: PackInput<M>, ctx: FormatContext, total: number): PackResult<M> {
  const injected: M[] = [];
  const related: RelatedCandidate[] = [];
  const deltaBullets: string[] = [];
  for (const a of added) {
    if (a.kind === "memory") injected.push(a.memory);
    else if (a.kind === "related") related.push(a.related);
    else deltaBullets.push(a.line);
  }
  // Related bullets whose anchor was dropped in the exact pass go with it.
  const injectedIds = new Set(injected.map((m) => m.id));
  const keptRelated = related.filter((r) => injectedIds.has(r.anchor_id));
  const relatedByAnchor = new Map<string, string[]>();
  for (const r of keptRelated) relatedByAnchor.set(r.anchor_id, [...(relatedByAnchor.get(r.anchor_id) ?? []), r.content]);
  const truncatedCount = total - injected.length;
  const block = renderBlock(
    {
      memories: injected,
      related: relatedByAnchor,
      delta: deltaBullets.length > 0 && input.deltaHeader ? [input.deltaHeader, ...deltaBullets] : [],
      truncated: truncatedCount,
    },
    ctx,
  );
  return { block, tokenCount: countTokens(block), injected, truncatedCount, related: keptRelated, deltaBullets };
}

export interface PackedTexts<T> {
  kept: T[];
  tokenCount: number;
  truncatedCount: number;
}

/**
 * memory.query's packing: items in rank order, each contributing one text; the texts joined by
 * newlines must fit budgetTokens exactly. Same greedy-estimate-then-exact-check as packIntoBudget.
 */
export function packTexts<T>(items: readonly T[], textOf: (item: T) => string, budgetTokens: number): PackedTexts<T> {
  const kept: T[] = [];
  let est = 0;
  for (const item of items) {
    const cost = countTokens(textOf(item)) + (kept.length > 0 ? 1 : 0);
    if (est + cost > budgetTokens) continue;
    est += cost;
    kept.push(item);
  }
  for (;;) {
    const tokenCount = countTokens(kept.map(textOf).join("\n"));
    if (tokenCount <= budgetTokens) return { kept, tokenCount, truncatedCount: items.length - kept.length };
    kept.pop();
  }
}
