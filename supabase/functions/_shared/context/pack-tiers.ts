// Packs ranked memories into the four tiers of a context budget (docs/context.md#tiers). The
// budget is exact: the final text is counted with the tokenizer and never exceeds it, whatever
// the memories (a memory longer than its whole tier is compressed, shortened or pointed to).
//
// Per tier, in order critical → relevant → background → index, with the tier's share plus what
// the tiers before it left unused:
//   1. every memory in rank order at the tier's preferred level, else the first more compressed
//      level that fits (the first memory of an empty tier is shortened at a word boundary when
//      not even its compressed form fits), so as many memories as possible get in;
//   2. with budget left, memories are upgraded in rank order to richer levels, up to the tier's
//      richest (relevant: summary → full), so the best ones carry more detail;
//   3. what the tier leaves flows to the next one.
// The index lists the stale memories and then the index keys of everything that did not make a
// fact tier. Costs are per-line estimates (the line's tokens + its newline, BPE merges across
// newlines only ever save tokens); the final text is then counted exactly and, while it is over
// budget, the last pointer or bullet of the lowest tier is dropped.
import { bulletText, shortenToFit } from "../fit-text.ts";
import { type ContextCount, countContext } from "./count-context.ts";
import { lineTokens, lineTokensWithin } from "./line-tokens.ts";
import { type CompressionForms, type Level, LEVELS, textAt } from "./compress.ts";
import type { StaleCitation } from "./lineage.ts";
import {
  askLine,
  bulletLine,
  CONTEXT_HEADING,
  type CriticalTag,
  type IndexPointer,
  type PlacedLine,
  renderContext,
  type RenderInput,
  staleLine,
  staleNote,
  TIER_TITLES,
} from "./render.ts";
import { type Tier, TIER_LEVELS, tierBudgets, TIERS, type TierShares } from "./tiers.ts";

export interface TierCandidate {
  id: string;
  content: string;
  forms: CompressionForms;
  tag?: CriticalTag;
  /** The other side of an unresolved contradiction, shown on the same bullet. */
  pair?: { id: string; content: string; forms: CompressionForms };
}

export interface StaleCandidate {
  id: string;
  forms: CompressionForms;
  stale: StaleCitation;
}

export interface PackTiersInput {
  budget: number;
  shares: TierShares;
  critical: readonly TierCandidate[];
  relevant: readonly TierCandidate[];
  background: readonly TierCandidate[];
  stale: readonly StaleCandidate[];
}

export interface PlacedMemory {
  id: string;
  tier: Tier;
  level: Level;
  /** Exact tokens of its bullet, its share of a contradiction's (of its key, for an index pointer). */
  tokens: number;
  tag?: CriticalTag;
  shortened?: true;
  stale?: StaleCitation;
}

export interface TierReport {
  /** The tier's share plus what earlier tiers left. */
  budget: number;
  /** Exact tokens of the tier's section. */
  token_count: number;
  memories: number;
}

export interface PackedContext {
  text: string;
  tokenCount: number;
  tiers: Record<Tier, TierReport>;
  placed: PlacedMemory[];
}

const lineCost = (line: string) => lineTokens(line) + 1; // + its newline
/**
 * lineCost when it is at most room, else a number above room: a line that cannot fit is counted
 * only until it is known not to (line-tokens.ts), and the choices are those of its whole count.
 */
const lineCostWithin = (line: string, room: number) => lineTokensWithin(line, room - 1) + 1;
const sectionCost = (tier: Tier) => lineTokens(TIER_TITLES[tier]) + 3; // title, its newline, the blank line before it

function textsAt(c: TierCandidate, level: Level): { text: string; pairText?: string } {
  return {
    text: textAt(c.content, c.forms, level),
    pairText: c.pair ? textAt(c.pair.content, c.pair.forms, level) : undefined,
  };
}

type Line = PlacedLine & { shortened?: true };

/**
 * Steps 1 and 2 of the module comment for one fact tier; returns the lines, the estimated tokens
 * used and the memories whose bullet repeats words already in the context (shown by those words:
 * no line, and no index pointer to text the agent has).
 */
function packFactTier(
  tier: Exclude<Tier, "index">,
  candidates: readonly TierCandidate[],
  budget: number,
  seen: Set<string>,
) {
  const { preferred, richest } = TIER_LEVELS[tier];
  const first = LEVELS.indexOf(preferred), top = LEVELS.indexOf(richest), last = LEVELS.indexOf("compressed");
  const lines: { line: Line; candidate: TierCandidate; cost: number }[] = [];
  const repeated: string[] = [];
  let used = sectionCost(tier);
  if (candidates.length === 0 || used > budget) return { lines: [] as Line[], used: 0, repeated };

  for (const c of candidates) {
    let placed = false;
    for (let i = first; i <= last && !placed; i++) {
      const level = LEVELS[i]!;
      const line: Line = { id: c.id, pairId: c.pair?.id, tag: c.tag, level, ...textsAt(c, level) };
      const key = bulletLine(line);
      if (seen.has(key)) {
        placed = true; // the same words are in the context already
        repeated.push(c.id, ...(c.pair ? [c.pair.id] : []));
        break;
      }
      const cost = lineCostWithin(key, budget - used);
      if (used + cost > budget) continue;
      lines.push({ line, candidate: c, cost });
      seen.add(key);
      used += cost;
      placed = true;
    }
    if (!placed && lines.length === 0 && !c.pair) {
      // A memory longer than the whole tier: its preferred text, cut at a word boundary.
      const text = shortenToFit(
        textAt(c.content, c.forms, preferred),
        (t) => used + lineCostWithin(bulletLine({ tag: c.tag, text: t }), budget - used) <= budget,
      );
      if (text !== undefined) {
        const line: Line = { id: c.id, tag: c.tag, level: preferred, text, shortened: true };
        const cost = lineCost(bulletLine(line));
        lines.push({ line, candidate: c, cost });
        used += cost;
      }
    }
  }

  // Upgrades: richest level first, for the best memories first.
  for (const entry of lines) {
    if (entry.line.shortened) continue;
    for (let i = top; i < LEVELS.indexOf(entry.line.level); i++) {
      const level = LEVELS[i]!;
      const line: Line = { ...entry.line, level, ...textsAt(entry.candidate, level) };
      const key = bulletLine(line);
      if (key === bulletLine(entry.line) || seen.has(key)) continue;
      const cost = lineCostWithin(key, budget - used + entry.cost);
      if (used - entry.cost + cost > budget) continue;
      seen.add(key);
      used += cost - entry.cost;
      entry.line = line;
      entry.cost = cost;
      break;
    }
  }
  return { lines: lines.map((e) => e.line), used, repeated };
}

/** The index: stale notes first (flags, not facts), then the keys of what did not fit, while they fit. */
function packIndex(pointers: readonly IndexPointer[], budget: number): IndexPointer[] {
  let used = sectionCost("index");
  if (pointers.length === 0 || used > budget) return [];
  const out: IndexPointer[] = [];
  let askPaid = false, stalePaid = false;
  for (const p of pointers) {
    const piece = p.stale ? staleNote(p) : p.key;
    const frame = p.stale ? (stalePaid ? 0 : lineCost(staleLine([]))) : (askPaid ? 0 : lineCost(askLine([])));
    const cost = lineTokens(piece) + 1 + frame; // + the separator
    if (used + cost > budget) continue;
    used += cost;
    if (p.stale) stalePaid = true;
    else askPaid = true;
    out.push(p);
  }
  return out;
}

export function packTiers(input: PackTiersInput): PackedContext {
  const available = Math.max(0, input.budget - lineTokens(CONTEXT_HEADING));
  const budgets = tierBudgets(available, input.shares);
  const state: RenderInput = { critical: [], relevant: [], background: [], index: [] };
  const given: Record<Tier, number> = { critical: 0, relevant: 0, background: 0, index: 0 };
  const placedIds = new Set<string>();
  const seen = new Set<string>();
  let carry = 0;

  for (const tier of ["critical", "relevant", "background"] as const) {
    given[tier] = budgets[tier] + carry;
    const candidates = input[tier].filter((c) => !placedIds.has(c.id) && !(c.pair && placedIds.has(c.pair.id)));
    const { lines, used, repeated } = packFactTier(tier, candidates, given[tier], seen);
    state[tier] = lines;
    for (const id of repeated) placedIds.add(id);
    for (const l of lines) {
      placedIds.add(l.id);
      if (l.pairId) placedIds.add(l.pairId);
    }
    carry = given[tier] - used;
  }

  given.index = budgets.index + carry;
  const keys = new Set<string>();
  const pointers: IndexPointer[] = input.stale.map((s) => ({ id: s.id, key: s.forms.index, stale: s.stale }));
  // A contradiction that fit nowhere points to both of its sides (its other side is no candidate of its own).
  const sides = (c: TierCandidate) => (c.pair ? [c, c.pair] : [c]);
  for (const c of [...input.critical, ...input.relevant, ...input.background].flatMap(sides)) {
    if (placedIds.has(c.id) || keys.has(c.forms.index)) continue;
    placedIds.add(c.id);
    keys.add(c.forms.index);
    pointers.push({ id: c.id, key: c.forms.index });
  }
  state.index = packIndex(pointers, given.index);

  // Exact pass: drop from the lowest tier until the text fits (rarely needed: estimates run high).
  for (;;) {
    const { text, sections } = renderContext(state);
    const counted = countContext(text, sections);
    if (counted.total <= input.budget) return report(text, counted, state, given);
    const tier = [...TIERS].reverse().find((t) => state[t].length > 0)!;
    (state[tier] as unknown[]).pop();
  }
}

function report(
  text: string,
  counted: ContextCount,
  state: RenderInput,
  given: Record<Tier, number>,
): PackedContext {
  const placed: PlacedMemory[] = [];
  // A memory in two contradictions is on two bullets: placed once, on the first, with the tokens of both.
  const seen = new Map<string, PlacedMemory>();
  const place = (p: PlacedMemory) => {
    const earlier = seen.get(p.id);
    if (earlier) {
      earlier.tokens += p.tokens;
      return;
    }
    placed.push(p);
    seen.set(p.id, p);
  };
  const count: Record<Tier, number> = { critical: 0, relevant: 0, background: 0, index: state.index.length };
  for (const tier of ["critical", "relevant", "background"] as const) {
    for (const l of state[tier] as readonly Line[]) {
      const tokens = lineTokens(bulletLine(l));
      // The two sides of a contradiction share its bullet, so that usage counts it once
      // (docs/context.md#usage-feedback): the other side its own text, the first side the rest.
      const pairTokens = l.pairId !== undefined ? lineTokens(bulletText(l.pairText ?? "")) : 0;
      const before = placed.length;
      place({
        id: l.id,
        tier,
        level: l.level,
        tokens: tokens - pairTokens,
        ...(l.tag ? { tag: l.tag } : {}),
        ...(l.shortened ? { shortened: true as const } : {}),
      });
      if (l.pairId) place({ id: l.pairId, tier, level: l.level, tokens: pairTokens, tag: l.tag });
      count[tier] += placed.length - before;
    }
  }
  for (const p of state.index) {
    placed.push({
      id: p.id,
      tier: "index",
      level: "index",
      tokens: lineTokens(p.key),
      ...(p.stale ? { stale: p.stale } : {}),
    });
  }
  const tiers = Object.fromEntries(TIERS.map((t) => [t, {
    budget: given[t],
    token_count: counted.sections[t],
    memories: count[t],
  }])) as Record<Tier, TierReport>;
  return { text, tokenCount: counted.total, tiers, placed };
}
