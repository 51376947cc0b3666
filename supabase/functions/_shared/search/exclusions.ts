// How a query's `-exclusions` are read (docs/retrieval.md#exclusions). public.memory_keyword_terms
// (migration 20261128740000) reads them with the same two patterns, character for character, so
// the memories the search leaves out and the text embedded for it agree; tests/exclusions.test.ts
// runs one table of inputs through both readers.
//
// The rule: the text is read once, left to right. A `-` at the start of the text, after a blank
// or right after an exclusion's closing quote starts an exclusion: `-"a phrase"` (a quote left
// open runs to the end of the text) or `-word`, a word being a first character that is no blank
// and no ASCII other than a letter, then at least one more character up to the next blank or
// quote (so a CLI flag `--config`, `-n`, a number `-1` is no exclusion). Blanks are Unicode's
// White_Space characters, listed, not a locale's `\s`. `-"foo"-bar` leaves out both.

// The two patterns, as the SQL writes them: a run of exclusions, each right after the one before,
// after the start or a blank ($1, the run $2), and one exclusion of a run ($1 a phrase, $2 a word).
// Blanks: Unicode's White_Space. A word's first character: no blank, no quote, no ASCII digit or
// punctuation.
const BLANK = "\\u0009-\\u000d\\u0020\\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const WORD = `[^\\u0001-\\u0040\\u005b-\\u0060\\u007b-\\u007f${BLANK}][^${BLANK}"]`;
const PIECE_PATTERN = `-(?:"([^"]*)(?:"|$)|(${WORD}+))`;
const RUN = new RegExp(`(^|[${BLANK}])((?:-"[^"]*")*-(?:"[^"]*(?:"|$)|${WORD}+))`, "gu");
const PIECES = new RegExp(PIECE_PATTERN, "gu");
// A dash that may start an exclusion, whatever came of the dashes around it: after the start, a
// blank or a quote, before a quote or a word.
const STARTING_DASH = new RegExp(`(?<=^|[${BLANK}"])-(?="|${WORD})`, "gu");

/** The exclusions of a text, in order: each phrase's or word's text, as the search reads them. */
export function exclusionsOf(text: string): string[] {
  const out: string[] = [];
  for (const run of text.matchAll(RUN)) {
    for (const p of (run[2] ?? "").matchAll(PIECES)) out.push(p[1] ?? p[2] ?? "");
  }
  return out;
}

/** The text with its exclusions blanked out, same length: no time word or cue is read inside one. */
export function withoutExclusions(text: string): string {
  return text.replace(RUN, (m, blank: string) => blank + " ".repeat(m.length - blank.length));
}

/**
 * The text embedded for the vector signal: without the words the query excludes (`-proxy`,
 * `-"fly deploy"`), which would otherwise pull the memories they name closer. The search drops
 * every memory matching an exclusion, whichever signal found it.
 */
export function embeddingText(text: string): string {
  const kept = text.replace(RUN, "$1").replace(/\s+/g, " ").trim();
  return kept === "" ? text : kept;
}

/**
 * What a message searches with its context after it (a retrieval's project_context, living
 * context's file and branch names). Exclusions are the message's alone: a quote the message leaves
 * open (`-"widget`) is closed at the message's end instead of running through the context, and the
 * context is read literally (it says what the caller works on, not what it asks to leave out).
 */
export function retrievalText(message: string, projectContext: string | undefined, separator = "\n\n"): string {
  if (!projectContext) return message;
  const last = [...message.matchAll(RUN)].at(-1);
  const open = last !== undefined && last.index + last[0].length === message.length && /-"[^"]*$/.test(last[0]);
  return `${message}${open ? '"' : ""}${separator}${literalText(projectContext)}`;
}

/**
 * A text searched for what it says, with no exclusion in it: each `-` that would start one is read
 * as a blank (`java -jar` finds `jar`). For what no user typed as a query: a memory's content
 * searched for its neighbours (dedup, contradictions, consolidation), an error on screen, a
 * retrieval's project_context.
 */
export function literalText(text: string): string {
  // Every dash that may start one, in one pass: blanking a dash makes no new place one may start
  // (a dash before another dash never starts one), so none is left.
  return text.replace(STARTING_DASH, " ");
}
