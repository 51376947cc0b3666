// Fitting text into a token budget: one line per item, shortened at a word boundary when it must
// be. Shared by retrieval's block (memory-retrieve/pack.ts) and context assembly
// (_shared/context/pack-tiers.ts), so both shorten the same way.
import { foldLineBreaks, trimEndOf } from "./text-scan.ts";

/** One line per item: newlines inside a memory would break a bullet list, so they are folded (in linear time). */
export function bulletText(content: string): string {
  return foldLineBreaks(content).trim();
}

const ELLIPSIS = "…";

/**
 * The longest start of `text` that ends at a word boundary, marked with `…`, for which
 * `fits(shortened)` holds; undefined when not even the first word fits. A text without spaces is
 * cut between characters instead. Binary search: one exact count per step.
 */
export function shortenToFit(text: string, fits: (shortened: string) => boolean): string | undefined {
  const one = bulletText(text);
  const words = one.split(" ");
  const cut = words.length > 1
    ? (k: number) => trimEndOf(words.slice(0, k).join(" "), ",;:.-–—") + ELLIPSIS
    : (k: number) => [...one].slice(0, k).join("") + ELLIPSIS;
  let lo = 1;
  let hi = (words.length > 1 ? words.length : [...one].length) - 1;
  if (hi < lo || !fits(cut(lo))) return undefined;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (fits(cut(mid))) lo = mid;
    else hi = mid - 1;
  }
  return cut(lo);
}
