// Token counts of the lines context packing (pack-tiers.ts) and retrieval's packing
// (retrieval/pack.ts) try, kept across requests: the same memories recur within a packing (levels
// tried, upgrades, the report) and from one request to the next. Bounded by entries and by characters (docs/operations.md#process-memory-bounds): a line is
// a memory's text, up to 8,000 characters, so 20,000 lines could hold 160 MB of text a tenant
// wrote, for the process's life. Past either bound the oldest lines are dropped first; a dropped
// line is only counted again.
//
// Packing only needs to know whether a line fits the room left: a line is counted only until it is
// known not to fit (tokens.ts countTokensUpTo), and that partial count is kept, so the same
// question is answered from the cache next time and a later one that needs more counts on from
// where it stopped (a cold context of 60 memories of 8,800 characters counted all of their text,
// issue 19).
import { countTokensUpTo, type PartialCount, tokenCounting } from "../tokens.ts";
import { countsWhole, isCertainBoundary, lastPieces, windowsCutAtPieces } from "../token-windows.ts";

/** Most lines whose counts are kept. */
export const LINE_TOKEN_CACHE_ENTRIES = 20_000;
/** Most characters of those lines together (at most 2 MB of strings). */
export const LINE_TOKEN_CACHE_CHARS = 1_000_000;
/**
 * Longer texts are counted but not kept: a whole tier's section, counted once per request, would
 * push out the lines that do recur. A memory's line (at most 8,000 characters) is kept.
 */
export const LINE_TOKEN_CACHE_MAX_LINE = 10_000;

const counted = new Map<string, PartialCount>();
let countedChars = 0;

/** The tokens of a line (counted once while it stays in the cache). */
export function lineTokens(text: string): number {
  return lineTokensWithin(text, Number.POSITIVE_INFINITY);
}

/**
 * The tokens of a line when they are at most `limit`; otherwise a number above limit (what was
 * counted before the line was known to be longer).
 */
export function lineTokensWithin(text: string, limit: number): number {
  if (tokenCounting.whole) limit = Number.POSITIVE_INFINITY; // tests: whole counts, no partial one reused
  const known = counted.get(text);
  if (known !== undefined && (known.chars === text.length || known.atLeast > limit)) return known.atLeast;
  const count = countTokensUpTo(text, limit, known);
  if (text.length > LINE_TOKEN_CACHE_MAX_LINE) return count.atLeast;
  counted.set(text, count);
  if (known !== undefined) return count.atLeast; // its characters are held already
  countedChars += text.length;
  // A Map iterates in insertion order: its first keys are the oldest.
  for (const oldest of counted.keys()) {
    if (counted.size <= LINE_TOKEN_CACHE_ENTRIES && countedChars <= LINE_TOKEN_CACHE_CHARS) break;
    counted.delete(oldest);
    countedChars -= oldest.length;
  }
  return count.atLeast;
}

/**
 * The exact tokens of lines joined by line breaks (retrieval's block, retrieval/pack.ts) from the
 * lines' counts in the cache; undefined when they cannot give it (then count the text whole).
 * When the text counts as the library counts it whole and every run of line breaks ends where a
 * piece boundary is certain (token-windows.ts: before "- ", "### ", "  - related"), its count is
 * the sum of each line's with the line breaks after it. A line's count with them differs from its
 * own only in its last piece (".\n" is one piece): only the text from its last space after a
 * printable character is counted again, with and without them. The block was counted whole on
 * every retrieval, though its lines had just been counted to pack it (docs/operations.md#cpu-per-retrieval).
 */
export function joinedLineTokens(text: string): number | undefined {
  if (tokenCounting.whole || !countsWhole(text)) return undefined;
  let total = 0;
  for (let start = 0;;) {
    const lineEnd = text.indexOf("\n", start);
    if (lineEnd < 0) {
      const line = text.slice(start);
      return windowsCutAtPieces(line) ? total + lineTokens(line) : undefined;
    }
    let end = lineEnd + 1;
    while (text.charCodeAt(end) === 10) end++;
    if (end < text.length && !isCertainBoundary(text, end)) return undefined;
    const line = text.slice(start, lineEnd);
    const breaks = text.slice(lineEnd, end);
    const tail = lastPieces(line, breaks.length);
    if (tail === undefined) {
      if (!windowsCutAtPieces(line + breaks)) return undefined;
      total += lineTokens(line + breaks);
    } else {
      if (!windowsCutAtPieces(line)) return undefined;
      total += lineTokens(line) - lineTokens(tail) + lineTokens(tail + breaks);
    }
    if (end === text.length) return total;
    start = end;
  }
}

/** What the cache holds now (tests and diagnostics). */
export function lineTokenCache(): { entries: number; chars: number } {
  return { entries: counted.size, chars: countedChars };
}
