// Where text may be cut for counting its tokens (tokens.ts) without changing the count: the
// library splits text into pieces and merges each piece alone, so text cut only where no piece
// spans the cut counts the same in parts as whole.
import { cutBetweenCharacters, isWhitespace } from "./text-scan.ts";

/** Longest text handed to the library's merge step at once. */
export const SEGMENT_CHARS = 256;
/** Text is first cut into windows of at most this many characters where a piece boundary is certain. */
const WINDOW_CHARS = 4096;

/**
 * Whether windowSegments would cut text only between its pieces, never slicing one, judged from
 * its characters alone (linear, no regex). It slices where the pieces since its last cut outgrow
 * SEGMENT_CHARS, and those are whitespace pieces then one more piece, which holds at most one
 * space, at its start (a word, a number, a run of symbols and the line breaks after it): so they
 * lie in a run of whitespace followed by characters without a space. Bounding that length bounds
 * them.
 */
export function piecesAreShort(text: string): boolean {
  for (let i = 0, blanks = 0, lead = 0, sinceSpace = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    blanks = isWhitespace(c) ? blanks + 1 : 0;
    if (c === 32) {
      lead = blanks; // the whitespace run up to this space
      sinceSpace = 0;
    } else sinceSpace++;
    if (lead + sinceSpace >= SEGMENT_CHARS - 1) return false;
  }
  return true;
}

/**
 * Where the windows of text from `start` (0 or the end of one of its windows) start and end:
 * windows of at most WINDOW_CHARS characters that the library's splitting regex runs on (on a
 * longer run of one kind of character it backtracks deep enough to overflow the stack). A window
 * ends where a piece boundary does not depend on what follows: after a line break followed by a
 * non-space other than '/' or by indentation and a non-space, or before a space followed by an
 * ASCII letter (" word" is always a piece of its own).
 * Without one in reach, it ends at WINDOW_CHARS.
 */
export function* windowBounds(text: string, start: number): Generator<[number, number]> {
  while (text.length - start > WINDOW_CHARS) {
    let cut = lastCertainBoundary(text, start, start + WINDOW_CHARS);
    if (cut < 0) cut = cutBetweenCharacters(text, start + WINDOW_CHARS);
    yield [start, cut];
    start = cut;
  }
  if (start < text.length) yield [start, text.length];
}

/** Whether no piece of text spans position i, whatever follows (windows end only there). */
export function isCertainBoundary(text: string, i: number): boolean {
  const before = text.charCodeAt(i - 1);
  const at = text.charCodeAt(i);
  // After a line break: a piece never joins what follows it, but a punctuation piece takes the
  // slashes right after it ("();\n// note" is ");\n//" then " note"), and more line breaks join it.
  if (before === 10) return at === 47 ? false : !isWhitespace(at) || indentThenText(text, i);
  if (at !== 32 || isWhitespace(before)) return false;
  const next = text.charCodeAt(i + 1);
  return (next >= 65 && next <= 90) || (next >= 97 && next <= 122);
}

/**
 * Whether text at i is indentation (spaces or tabs, a short run) and then a character that is not
 * whitespace: then a line break before i ends its piece at i (indented code and JSON have few
 * other certain boundaries).
 */
function indentThenText(text: string, i: number): boolean {
  for (let j = i; j < i + 64 && j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (c !== 32 && c !== 9) return !isWhitespace(c);
  }
  return false;
}

/** The last certain boundary (as windows end at) after `from` and at most at `to`; -1 without one. */
export function lastCertainBoundary(text: string, from: number, to: number): number {
  for (let i = to; i > from; i--) if (isCertainBoundary(text, i)) return i;
  return -1;
}

/**
 * A lower bound of the tokens of text from `start`, by a scan of its characters alone (no regex,
 * no merges), read until it passes `enough`: every piece is at least one token, and a space after
 * a printable ASCII character always starts a piece (no piece goes on with a space after anything
 * but whitespace), so the text has at least one more piece than it has such spaces. Cuts of
 * windows and segments only add pieces. Prose has about one such space per 1.3 tokens.
 */
export function leastTokens(text: string, start: number, enough: number): number {
  let pieces = 1;
  for (let i = start + 1; i < text.length && pieces <= enough; i++) {
    if (text.charCodeAt(i) !== 32) continue;
    const before = text.charCodeAt(i - 1);
    if (before >= 33 && before <= 126) pieces++;
  }
  return pieces;
}

/**
 * Whether countTokens counts text as the library counts it whole: every piece short (no segment
 * slices one) and every window cut where a piece boundary is certain (none between characters).
 * Then its count is the sum of the counts of any parts it is cut into at certain boundaries, and
 * so is a part's when its own windows are cut where a boundary is certain (its pieces are the
 * text's: short).
 */
export function countsWhole(text: string): boolean {
  return piecesAreShort(text) && windowsCutAtPieces(text);
}

/** Whether every window of text ends where a piece boundary is certain (or at its end). */
export function windowsCutAtPieces(text: string): boolean {
  for (const [, end] of windowBounds(text, 0)) if (end < text.length && !isCertainBoundary(text, end)) return false;
  return true;
}

/**
 * The text from the last space after a printable character of text (a piece starts there, whatever
 * precedes or follows it), when it is short enough to be counted whole with `joined` characters
 * appended; undefined without one. Text and text + what follows it differ only in the pieces from
 * there: the last piece may take a line break in (".\n" is one piece).
 */
export function lastPieces(text: string, joined: number): string | undefined {
  const from = Math.max(1, text.length - (SEGMENT_CHARS - joined));
  for (let i = text.length - 1; i >= from; i--) {
    const before = text.charCodeAt(i - 1);
    if (text.charCodeAt(i) === 32 && before >= 33 && before <= 126) return text.slice(i);
  }
  return undefined;
}
