// The writing constraints every stored memory meets (seed 001 §9): semantic memories are complete,
// self-contained, third person, no first/second person pronouns, 1-2 sentences, ≤ 280 chars;
// episodic and procedural ones 1-2 sentences, ≤ 280 chars. Violations are trimmed when a valid
// prefix survives (extra sentences dropped), else rejected; both are counted so extraction quality
// (seed: ≥ 95% pass on first try) can be measured from job results. Used for extracted candidates
// and for the merged text of a dedup UPDATE.
import { isWhitespace } from "./text-scan.ts";
import { stripUnsafeCharacters } from "./unsafe-characters.ts";

export type MemoryType = "semantic" | "episodic" | "procedural";

export const MAX_CONTENT_CHARS = 280;

export interface ValidationStats {
  accepted: number;
  trimmed: number;
  rejected: number;
  reasons: Record<string, number>;
}

export const emptyStats = (): ValidationStats => ({ accepted: 0, trimmed: 0, rejected: 0, reasons: {} });

export type ValidationOutcome =
  | { ok: true; content: string; trimmed: boolean }
  | { ok: false; reason: "empty" | "too_long" | "pronoun" };

// First/second person only: third-person pronouns are fine in "The user prefers…" style facts,
// while "I", "we", "you" make a memory meaningless out of its conversation.
const FIRST_SECOND_PERSON =
  /\b(i|me|my|mine|myself|we|us|our|ours|ourselves|you|your|yours|yourself|yourselves)\b|\b(i'm|i've|i'd|i'll|we're|we've|you're|you've|you'll)\b/i;

/**
 * Sentence split on ., ! or ? followed by whitespace and a capital/digit/quote, so "e.g. the",
 * "v1.2" and file names like "index.ts" do not end a sentence. A scan, not a lookahead pattern:
 * the pattern backtracked quadratically on a long run of dots.
 */
export function splitSentences(text: string): string[] {
  const out: string[] = [];
  let start = 0;
  let i = 0;
  while (i < text.length) {
    if (!isSentenceEnd(text.charCodeAt(i))) {
      i++;
      continue;
    }
    let end = i;
    while (end < text.length && isSentenceEnd(text.charCodeAt(end))) end++;
    let next = end;
    while (next < text.length && isWhitespace(text.charCodeAt(next))) next++;
    if (next > end && next < text.length && OPENS_SENTENCE.test(text[next]!)) {
      out.push(text.slice(start, end).trim());
      start = end;
    }
    i = next > end ? next : end;
  }
  const rest = text.slice(start).trim();
  if (rest) out.push(rest);
  return out.filter((s) => s.length > 0);
}

const OPENS_SENTENCE = /^["'`(A-Z0-9]$/;

function isSentenceEnd(code: number): boolean {
  return code === 46 || code === 33 || code === 63;
}

export function normaliseContent(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

export function validateContent(type: MemoryType, raw: string): ValidationOutcome {
  // Every memory text a writer derives (a model's merge, a rule's sentence) passes here: the
  // characters a caller may not send (docs/redaction.md) are removed from it the same way.
  let content = normaliseContent(stripUnsafeCharacters(raw));
  if (!content) return { ok: false, reason: "empty" };
  let trimmed = false;
  const sentences = splitSentences(content);
  if (sentences.length > 2) {
    content = sentences.slice(0, 2).join(" ");
    trimmed = true;
  }
  if (content.length > MAX_CONTENT_CHARS) {
    const first = sentences[0] ?? "";
    if (first.length > 0 && first.length <= MAX_CONTENT_CHARS) {
      content = first;
      trimmed = true;
    } else {
      return { ok: false, reason: "too_long" };
    }
  }
  if (type === "semantic" && FIRST_SECOND_PERSON.test(content)) return { ok: false, reason: "pronoun" };
  return { ok: true, content, trimmed };
}
