// The two statements the rule-based extractor looks for, found by scanning instead of by regular
// expression, so the work is linear in the message: the expressions they replace backtracked
// quadratically ("ok\n" repeated 31,000 times took 7.8 s) and stalled every other request.
//
// - A "remember" statement: remember / keep in mind / note for (the) future / don't forget / do not
//   forget, at the start of the message or of a sentence (after . ! ? or a line break and spaces),
//   optionally after fillers (please, pls, also, and, oh, ok, okay, each followed by commas or
//   spaces), then an optional "that", an optional ":" "," or "-", whitespace, and the statement:
//   the rest of that line. The first such statement in the message counts.
// - A correction: the message starts with no / nope / wrong / incorrect / actually (then at most
//   one of , . ! : ; and whitespace), and the line after it contains the word "not".
// Keywords and fillers match in any case.
import { isWhitespace } from "./text-scan.ts";

const FILLERS = ["please", "pls", "also", "and", "oh", "ok", "okay"];
const CORRECTION_OPENERS = ["no", "nope", "wrong", "incorrect", "actually"];
// Finds keyword candidates: literal alternatives only, so one pass over the text.
const KEYWORD_SCAN = /remember|keep in mind|note for (?:the )?future|don't forget|do not forget/gi;

/** A word character of \b: ASCII letters, digits and _. */
function isWordChar(code: number): boolean {
  return (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 95;
}

function startsWithAt(text: string, at: number, word: string): boolean {
  return text.length - at >= word.length && text.slice(at, at + word.length).toLowerCase() === word;
}

function skipWhitespace(text: string, i: number): number {
  while (i < text.length && isWhitespace(text.charCodeAt(i))) i++;
  return i;
}

/** The statement of the first "remember" sentence in text (see the module comment), or undefined. */
export function findRememberStatement(text: string): string | undefined {
  for (const m of text.matchAll(KEYWORD_SCAN)) {
    if (!startsSentence(text, m.index!)) continue;
    const statement = statementAfter(text, m.index! + m[0].length);
    if (statement !== undefined) return statement;
  }
  return undefined;
}

/**
 * Whether what precedes `at` is a sentence start followed only by fillers and separators. Walks
 * back over fillers; it stops at the first word that is not one, so a keyword's walk never passes
 * an earlier keyword and all walks together read the text once.
 */
function startsSentence(text: string, at: number): boolean {
  let i = at;
  for (;;) {
    if (i === 0) return true;
    // Separators before position i: whitespace and commas.
    let j = i;
    let spacesOnly = true;
    while (j > 0) {
      const c = text.charCodeAt(j - 1);
      if (c === 44) spacesOnly = false;
      else if (!isWhitespace(c)) break;
      else if (c === 10 && spacesOnly) return true; // a line break, then spaces: a sentence start
      j--;
    }
    const before = j > 0 ? text.charCodeAt(j - 1) : -1;
    // ". ", "!", "?" directly, or followed by spaces only.
    if ((j === i || spacesOnly) && (before === 46 || before === 33 || before === 63)) return true;
    if (j === i) return false; // a filler needs a comma or space after it
    const filler = FILLERS.find((f) => j >= f.length && text.slice(j - f.length, j).toLowerCase() === f);
    if (!filler) return false;
    i = j - filler.length;
  }
}

/** After a keyword: an optional "that", an optional separator, whitespace, then the rest of the line. */
function statementAfter(text: string, end: number): string | undefined {
  const afterThat = skipWhitespace(text, end);
  if (afterThat > end && startsWithAt(text, afterThat, "that")) {
    const statement = restOfLine(text, afterThat + 4);
    if (statement !== undefined) return statement;
  }
  return restOfLine(text, end);
}

function restOfLine(text: string, at: number): string | undefined {
  const spaced = skipWhitespace(text, at);
  let start = -1;
  const sep = text.charCodeAt(spaced);
  if (sep === 58 || sep === 44 || sep === 45) {
    const afterSep = skipWhitespace(text, spaced + 1);
    if (afterSep > spaced + 1) start = afterSep;
  }
  if (start < 0 && spaced > at) start = spaced;
  if (start < 0 || start >= text.length) return undefined;
  const newline = text.indexOf("\n", start);
  return text.slice(start, newline < 0 ? text.length : newline);
}

/** The corrected statement when the message is a correction (see the module comment), or undefined. */
export function findCorrection(text: string): string | undefined {
  const i = skipWhitespace(text, 0);
  const opener = CORRECTION_OPENERS.find((w) => startsWithAt(text, i, w) && !isWordChar(text.charCodeAt(i + w.length)));
  if (!opener) return undefined;
  let j = i + opener.length;
  const punct = text.charCodeAt(j);
  if (punct === 44 || punct === 46 || punct === 33 || punct === 58 || punct === 59) j++;
  const start = skipWhitespace(text, j);
  if (start === j || start >= text.length) return undefined;
  const newline = text.indexOf("\n", start);
  const line = text.slice(start, newline < 0 ? text.length : newline);
  return containsWord(line, "not") ? line : undefined;
}

function containsWord(line: string, word: string): boolean {
  const lower = line.toLowerCase();
  for (let at = lower.indexOf(word); at >= 0; at = lower.indexOf(word, at + 1)) {
    if ((at === 0 || !isWordChar(lower.charCodeAt(at - 1))) && !isWordChar(lower.charCodeAt(at + word.length))) {
      return true;
    }
  }
  return false;
}
