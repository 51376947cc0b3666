// Token counts of the lines context packing tries (pack-tiers.ts), kept across requests: the same
// memories recur within a packing (levels tried, upgrades, the report) and from one request to the
// next. Bounded by entries and by characters (docs/operations.md#process-memory-bounds): a line is
// a memory's text, up to 8,000 characters, so 20,000 lines could hold 160 MB of text a tenant
// wrote, for the process's life. Past either bound the oldest lines are dropped first; a dropped
// line is only counted again.
import { countTokens } from "../tokens.ts";

/** Most lines whose counts are kept. */
export const LINE_TOKEN_CACHE_ENTRIES = 20_000;
/** Most characters of those lines together (at most 2 MB of strings). */
export const LINE_TOKEN_CACHE_CHARS = 1_000_000;
/**
 * Longer texts are counted but not kept: a whole tier's section, counted once per request, would
 * push out the lines that do recur. A memory's line (at most 8,000 characters) is kept.
 */
export const LINE_TOKEN_CACHE_MAX_LINE = 10_000;

const counted = new Map<string, number>();
let countedChars = 0;

/** The tokens of a line (counted once while it stays in the cache). */
export function lineTokens(text: string): number {
  const known = counted.get(text);
  if (known !== undefined) return known;
  const n = countTokens(text);
  if (text.length > LINE_TOKEN_CACHE_MAX_LINE) return n;
  counted.set(text, n);
  countedChars += text.length;
  // A Map iterates in insertion order: its first keys are the oldest.
  for (const oldest of counted.keys()) {
    if (counted.size <= LINE_TOKEN_CACHE_ENTRIES && countedChars <= LINE_TOKEN_CACHE_CHARS) break;
    counted.delete(oldest);
    countedChars -= oldest.length;
  }
  return n;
}

/** What the cache holds now (tests and diagnostics). */
export function lineTokenCache(): { entries: number; chars: number } {
  return { entries: counted.size, chars: countedChars };
}
