// The model-free checks of a pair of memories, before any LLM sees it (docs/consolidation.md#nightly-consolidation):
//
//   lexical overlap  the share of content words they have in common (Jaccard, numbers aside)
//   numeric step     the same words around different numbers ("Node 18" → "Node 20", port 3000 → 8080):
//                    a likely update or contradiction even when few words differ
//   near-verbatim    the same statement: one's content words are the other's with at most two
//                    added, in the same order, and the same numbers and negations. Similar vectors
//                    alone are not enough ("tabs over spaces" and "spaces over tabs" are 0.92 apart
//                    with the offline embedder), so only a pair that also passes this merges
//                    without a model.
// Pure: unit-tested in tests/consolidation_units.test.ts.

const STOP = new Set(
  ("a an and are as at be been by can could do does did for from has have had in into is it its of on or our " +
    "should so than that the their them then there these this those to was were will with would which who when where " +
    "what how also just only very user users team project").split(" "),
);
const NEGATIONS = new Set([
  "not",
  "no",
  "never",
  "none",
  "nothing",
  "without",
  "instead",
  "dont",
  "doesnt",
  "isnt",
  "cannot",
  "cant",
  "wont",
  "shouldnt",
  "avoid",
  "stop",
  "stopped",
]);

const NUMBER = /^\d+(?:[.,]\d+)*$/;

/** Words as compared here: lower-case, apostrophes dropped, a plural -s dropped. */
export function wordsOf(text: string): string[] {
  const raw = text.toLowerCase().normalize("NFKC").replace(/['’]/g, "").match(/[\p{L}\p{N}]+(?:[.,]\d+)*/gu) ?? [];
  return raw.map((w) => (w.length > 3 && w.endsWith("s") && !w.endsWith("ss") && !NUMBER.test(w) ? w.slice(0, -1) : w));
}

/** The words that carry content: no stop words, no numbers. */
export function contentWords(text: string): string[] {
  return wordsOf(text).filter((w) => !STOP.has(w) && !NEGATIONS.has(w) && !NUMBER.test(w));
}

const numbersOf = (text: string) => wordsOf(text).filter((w) => NUMBER.test(w)).sort();
const negationsOf = (text: string) => wordsOf(text).filter((w) => NEGATIONS.has(w)).sort();

function jaccard(a: readonly string[], b: readonly string[]): number {
  const sa = new Set(a), sb = new Set(b);
  if (sa.size === 0 && sb.size === 0) return 0;
  let common = 0;
  for (const w of sa) if (sb.has(w)) common++;
  return common / (sa.size + sb.size - common);
}

export function lexicalOverlap(a: string, b: string): number {
  return jaccard(contentWords(a), contentWords(b));
}

/** Mostly the same words around numbers that differ. */
export function numericStep(a: string, b: string): boolean {
  const na = numbersOf(a), nb = numbersOf(b);
  if (na.length === 0 || nb.length === 0 || sameList(na, nb)) return false;
  return lexicalOverlap(a, b) >= 0.5;
}

const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/** `small` in order inside `large`. */
function isSubsequence(small: readonly string[], large: readonly string[]): boolean {
  let i = 0;
  for (const w of large) if (i < small.length && w === small[i]) i++;
  return i === small.length;
}

export const MAX_VERBATIM_EXTRA_WORDS = 2;

/** The same statement, give or take two words (see the module comment). */
export function nearVerbatim(a: string, b: string): boolean {
  if (!sameList(numbersOf(a), numbersOf(b)) || !sameList(negationsOf(a), negationsOf(b))) return false;
  const wa = contentWords(a), wb = contentWords(b);
  if (wa.length === 0 || wb.length === 0) return false;
  const [small, large] = wa.length <= wb.length ? [wa, wb] : [wb, wa];
  return large.length - small.length <= MAX_VERBATIM_EXTRA_WORDS && isSubsequence(small, large);
}

/** Minimum lexical overlap for a pair without a numeric step to be worth a model's look. */
export const MIN_LEXICAL_OVERLAP = 0.25;

/** Lexical overlap or a numeric step: worth asking the model about. */
export function worthJudging(a: string, b: string): boolean {
  return lexicalOverlap(a, b) >= MIN_LEXICAL_OVERLAP || numericStep(a, b);
}
