// Content words of a text, the way Postgres's `english` text search configuration sees them: its
// stop-word list and the Snowball English stemmer (the algorithm behind the `fts` column). The
// dataset test uses them to prove that a paraphrase question shares no content word with the
// memories that answer it, so keyword search cannot find those answers by matching words.
import snowball from "snowball-stemmers";

const stemmer = snowball.newStemmer("english");

/** Postgres 17's tsearch_data/english.stop, verbatim. */
export const ENGLISH_STOP_WORDS = new Set(
  ("i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers herself it " +
    "its itself they them their theirs themselves what which who whom this that these those am is are was were be been " +
    "being have has had having do does did doing a an the and but if or because as until while of at by for with about " +
    "against between into through during before after above below to from up down in out on off over under again " +
    "further then once here there when where why how all any both each few more most other some such no nor not only " +
    "own same so than too very s t can will just don should now").split(" "),
);

/**
 * Lower-cased word stems, stop words removed. Words are split at anything that is not a letter or
 * digit, so `pnpm-lock.yaml` gives pnpm, lock and yaml: stricter than the Postgres parser, which
 * keeps some compounds whole as well as their parts.
 */
export function contentStems(text: string): Set<string> {
  const out = new Set<string>();
  for (const word of text.toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
    if (!word || ENGLISH_STOP_WORDS.has(word)) continue;
    out.add(stemmer.stem(word));
  }
  return out;
}

/** The stems two texts have in common (empty: no content word in common). */
export function sharedStems(a: string, b: string): string[] {
  const right = contentStems(b);
  return [...contentStems(a)].filter((s) => right.has(s)).sort();
}
