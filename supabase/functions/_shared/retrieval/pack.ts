// Packs ranked memories into a token budget. The budget is exact (ARCHITECTURE invariant 6): the
// FINAL block text (heading, delta header, section titles, bullets, related bullets and the
// truncation line) is counted with the tokenizer and never exceeds budget_tokens.
//
// How: the best memory first, whole, or shortened at a word boundary and marked `…` when it alone
// does not fit (sized with exact counts of the rendered block): the block never leaves out the
// top hit for lower ones. Then greedy in priority order (delta bullets, the other memories by
// rank, at most MAX_RELATED related bullets), using per-line token counts as an estimate so the
// block is not re-tokenized for every candidate; then the rendered block is counted exactly and,
// while it is over budget, the last thing added is dropped (never the best memory). Per-line
// counts overestimate slightly (BPE merges across the joining newlines only ever save tokens), so
// the exact pass almost never has to drop anything. After the best one, a memory that does not
// fit is skipped and later, shorter ones are still tried. The exact count of a block is the sum of
// its lines' counts (kept by the line cache) with their line breaks (context/line-tokens.ts,
// joinedLineTokens): the block's text is tokenized again only when that sum could be off.
import { shortenToFit } from "../fit-text.ts";
import { countTokens, countTokensUpTo } from "../tokens.ts";
import { joinedLineTokens, lineTokens, lineTokensWithin } from "../context/line-tokens.ts";
import {
  BLOCK_HEADING,
  type FormatContext,
  type FormatMemory,
  memoryLine,
  relatedLine,
  renderBlock,
  type SectionKey,
  sectionOf,
  sectionTitle,
  truncationLine,
} from "./format.ts";

export { shortenToFit };

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
  /** Ids of injected memories the block shows shortened (only ever the best one). */
  shortened: string[];
}

/** A memory in the block; `text` when it is shown shortened. */
type Added<M> = { kind: "delta"; line: string } | { kind: "memory"; memory: M; text?: string } | {
  kind: "related";
  related: RelatedCandidate;
};

export function packIntoBudget<M extends FormatMemory>(input: PackInput<M>, ctx: FormatContext): PackResult<M> {
  const budget = input.budgetTokens;
  const total = input.ranked.length;
  // + the joining newline. Lines are counted through the process's line cache
  // (context/line-tokens.ts): the heading, section titles and truncation lines recur in every
  // call and were counted again for every candidate, and a memory's line recurs from one turn to
  // the next (4,034 → 1,631 characters counted per retrieval of the bench's handler suite:
  // docs/operations.md#cpu-per-retrieval).
  const lineCost = (line: string) => lineTokens(line) + 1;
  // lineCost when at most room, else a number above room (all that packing needs to know): a line
  // that cannot fit is counted only until that is known (20 memories of 8,000 characters were each
  // counted whole on every request).
  const lineCostWithin = (line: string, room: number) => lineTokensWithin(line, room - 1) + 1;
  const added: Added<M>[] = [];
  const sections = new Set<SectionKey>();
  let est = lineCost(BLOCK_HEADING);
  let injectedCount = 0;
  const truncCost = (n: number) => (n > 0 ? lineCost(truncationLine(n)) : 0);
  const fits = (extra: number, remaining: number) => est + extra + truncCost(remaining) <= budget;

  // 1. The best memory, whole or shortened to what the block can hold with it alone (when not even
  // its first word fits, it is left out like any other).
  const [best, ...others] = input.ranked;
  if (best) {
    const alone = (text?: string) =>
      assemble([{ kind: "memory", memory: best, text }], input, ctx, total, budget).tokenCount <= budget;
    const whole = alone();
    const text = whole ? undefined : shortenToFit(best.content, alone);
    if (whole || text !== undefined) {
      const key = sectionOf(best, ctx);
      est += lineCost(memoryLine({ content: text ?? best.content })) + lineCost(sectionTitle(key, ctx)) + 1;
      sections.add(key);
      injectedCount++;
      added.push({ kind: "memory", memory: best, text });
    }
  }

  // 2. Delta header: the header line comes with the first bullet that fits.
  const deltaBullets = input.deltaBullets ?? [];
  if (input.deltaHeader && deltaBullets.length > 0) {
    let headerPaid = false;
    for (const bullet of deltaBullets) {
      const extra = lineCost(bullet) + (headerPaid ? 0 : lineCost(input.deltaHeader) + 1);
      if (!fits(extra, total - injectedCount)) continue;
      est += extra;
      headerPaid = true;
      added.push({ kind: "delta", line: bullet });
    }
  }

  // 2b. The other memories in rank order; a section title is paid by its first memory.
  for (const m of others) {
    const key = sectionOf(m, ctx);
    const title = sections.has(key) ? 0 : lineCost(sectionTitle(key, ctx)) + 1;
    const room = budget - est - truncCost(total - injectedCount - 1) - title;
    const extra = lineCostWithin(memoryLine(m), room) + title;
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
    const extra = lineCostWithin(relatedLine(r.content), budget - est - truncCost(total - injectedCount));
    if (!fits(extra, total - injectedCount)) continue;
    est += extra;
    relatedCount++;
    injectedIds.add(r.id);
    added.push({ kind: "related", related: r });
  }

  // Not even the best memory's first words fit: a heading over "N more memories available"
  // would spend the budget on nothing the agent can use.
  if (added.length === 0) return emptyResult(total);

  // 4. Exact count of the final text; drop the last addition until it fits (the best memory
  // alone was sized to fit, so it is never dropped).
  for (;;) {
    const result = assemble(added, input, ctx, total);
    if (result.tokenCount <= budget) return result;
    if (added.length === 0) return emptyResult(total);
    added.pop();
  }
}

/** Nothing fits beside the heading and the truncation line: the block is empty. */
function emptyResult<M extends FormatMemory>(total: number): PackResult<M> {
  return {
    block: "",
    tokenCount: 0,
    injected: [],
    truncatedCount: total,
    related: [],
    deltaBullets: [],
    shortened: [],
  };
}

/** The block of what was added; its tokenCount exact when at most `limit`, else above it. */
function assemble<M extends FormatMemory>(
  added: readonly Added<M>[],
  input: PackInput<M>,
  ctx: FormatContext,
  total: number,
  limit = Number.POSITIVE_INFINITY,
): PackResult<M> {
  const injected: M[] = [];
  const shown: M[] = [];
  const shortened: string[] = [];
  const related: RelatedCandidate[] = [];
  const deltaBullets: string[] = [];
  for (const a of added) {
    if (a.kind === "memory") {
      injected.push(a.memory);
      shown.push(a.text === undefined ? a.memory : { ...a.memory, content: a.text });
      if (a.text !== undefined) shortened.push(a.memory.id);
    } else if (a.kind === "related") related.push(a.related);
    else deltaBullets.push(a.line);
  }
  // Related bullets whose anchor was dropped in the exact pass go with it.
  const injectedIds = new Set(injected.map((m) => m.id));
  const keptRelated = related.filter((r) => injectedIds.has(r.anchor_id));
  const relatedByAnchor = new Map<string, string[]>();
  for (const r of keptRelated) {
    relatedByAnchor.set(r.anchor_id, [...(relatedByAnchor.get(r.anchor_id) ?? []), r.content]);
  }
  const truncatedCount = total - injected.length;
  // The best memory shortened to a length being tried: counted up to the limit, not through the
  // line cache, which would keep every length tried. Otherwise from the lines' counts: exact.
  const probe = shortened.length > 0 && limit !== Number.POSITIVE_INFINITY;
  const block = renderBlock(
    {
      memories: shown,
      related: relatedByAnchor,
      delta: deltaBullets.length > 0 && input.deltaHeader ? [input.deltaHeader, ...deltaBullets] : [],
      truncated: truncatedCount,
    },
    ctx,
  );
  return {
    block,
    tokenCount: probe ? countTokensUpTo(block, limit).atLeast : joinedLineTokens(block) ?? countTokens(block),
    injected,
    truncatedCount,
    related: keptRelated,
    deltaBullets,
    shortened,
  };
}

export interface PackedTexts<T> {
  kept: T[];
  /** The text of each kept item, as counted (the first one shortened when `shortenFirst` had to). */
  texts: string[];
  tokenCount: number;
  truncatedCount: number;
}

/**
 * memory.query's packing: items in rank order, each contributing one text; the texts joined by
 * newlines must fit budgetTokens exactly. Same greedy-estimate-then-exact-check as packIntoBudget;
 * with shortenFirst, the best item is shortened at a word boundary (…) rather than left out.
 */
export function packTexts<T>(
  items: readonly T[],
  textOf: (item: T) => string,
  budgetTokens: number,
  opts: { shortenFirst?: boolean } = {},
): PackedTexts<T> {
  const kept: T[] = [];
  const texts: string[] = [];
  let est = 0;
  // Counted only until a text is known not to fit (countTokensUpTo), as packIntoBudget does.
  const within = (t: string, room: number) => countTokensUpTo(t, room).atLeast;
  items.forEach((item, i) => {
    let text = textOf(item);
    if (i === 0 && opts.shortenFirst && within(text, budgetTokens) > budgetTokens) {
      text = shortenToFit(text, (t) => within(t, budgetTokens) <= budgetTokens) ?? text;
    }
    const separator = kept.length > 0 ? 1 : 0;
    const cost = within(text, budgetTokens - est - separator) + separator;
    if (est + cost > budgetTokens) return;
    est += cost;
    kept.push(item);
    texts.push(text);
  });
  for (;;) {
    const tokenCount = countTokens(texts.join("\n"));
    if (tokenCount <= budgetTokens) return { kept, texts, tokenCount, truncatedCount: items.length - kept.length };
    kept.pop();
    texts.pop();
  }
}
