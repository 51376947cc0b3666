// Counts the work a piece of code does on a text, instead of timing it: a count does not change
// with the machine's load, so a test can compare the work at two sizes (linear: 16x for 16 times
// the text; quadratic: 256x) or with the text's length, and never flakes.
//
// Only for a child process started by tests/support/work.ts: `deno run` with
// --v8-flags=--allow-natives-syntax,--no-regexp-optimization. Importing it patches, for that
// process only (production code is untouched):
// - RegExp.prototype.exec, which every regex method of the language calls once it is replaced
//   (replace, match, matchAll, split, test, search). Each call is also run on a twin of the same
//   regex made by V8 itself with a backtrack limit (%NewRegExpWithBacktrackLimit), the limit
//   doubled from 16 until the twin completes: the production engine (irregexp) counts its own
//   backtracks, and the count, within a factor of 2, is added. --no-regexp-optimization stops
//   irregexp from stepping back through a greedy run of single characters without counting
//   (the old `[\s,;:.]+$` trims were quadratic that way and counted linear with it on); the
//   engine and the match it finds are the same.
// - the string scans our own code calls by hand: charCodeAt, codePointAt, charAt (one per call),
//   indexOf, lastIndexOf, includes (the characters passed over), and split, replace, replaceAll
//   with a string pattern (the whole string);
// - Array.prototype.splice, the elements it moves: the tokenizer library's byte-pair merge splices
//   once per merge.
// What it does not see: loops that index characters with s[i] and work inside libraries that do
// none of these.

import { BACKTRACKS_PER_CHAR } from "./work_limits.ts";

/** Work counted since the last reset. */
export const work = { backtracks: 0, execs: 0, scanned: 0, densest: { perChar: 0, regex: "" } };
export const total = () => work.backtracks + work.execs + work.scanned;
export function resetWork(): void {
  work.backtracks = 0;
  work.execs = 0;
  work.scanned = 0;
  work.densest = { perChar: 0, regex: "" };
}

// Parsed only here, in the child started with --allow-natives-syntax.
const limitedRegExp = new Function("p", "f", "n", "return %NewRegExpWithBacktrackLimit(p, f, n)") as (
  source: string,
  flags: string,
  limit: number,
) => RegExp;

const exec = RegExp.prototype.exec;
const twins = new Map<string, RegExp>();

/**
 * The regex with a backtrack limit, and an empty alternative (a capture group that only it sets)
 * that matches where the regex fails (for a sticky one, at its position; else at the text's end):
 * the twin returns null only when the limit stopped it.
 */
function twin(re: RegExp, limit: number): RegExp {
  const key = `${limit}/${re.flags}/${re.source}`;
  let t = twins.get(key);
  if (!t) {
    t = limitedRegExp(`(?:${re.source})|()${re.sticky ? "" : "(?![\\s\\S])"}`, re.flags, limit);
    twins.set(key, t);
  }
  return t;
}

RegExp.prototype.exec = function (this: RegExp, input: string) {
  const text = String(input);
  const from = this.global || this.sticky ? this.lastIndex : 0;
  work.execs++;
  if (from <= text.length) {
    let limit = 16;
    for (;;) {
      const t = twin(this, limit);
      t.lastIndex = from;
      // Past four times the bound the test holds it to, the count is only "at least": the test
      // fails on it, and a quadratic call is not counted to its end (minutes at 64 KiB).
      if (exec.call(t, text) !== null || limit > 4 * BACKTRACKS_PER_CHAR * (text.length - from + 16)) break;
      limit *= 2;
    }
    work.backtracks += limit;
    // Backtracks per character the exec could read: what a window re-read at every start drives up.
    const perChar = limit / (text.length - from + 16);
    if (perChar > work.densest.perChar) work.densest = { perChar, regex: String(this) };
  }
  return exec.call(this, text);
};

type Method = (this: string, ...args: unknown[]) => unknown;
const proto = String.prototype as unknown as Record<string, Method>;

/** Replaces a String.prototype method by one that adds `cost` (of its string and result) first. */
function meter(name: string, cost: (s: string, args: unknown[], result: unknown) => number): void {
  const original = proto[name]!;
  proto[name] = function (this: string, ...args: unknown[]) {
    const result = original.apply(this, args);
    work.scanned += cost(String(this), args, result);
    return result;
  };
}

const start = (args: unknown[], length: number) => Math.min(Math.max(0, Math.trunc(Number(args[1] ?? 0)) || 0), length);
for (const name of ["charCodeAt", "codePointAt", "charAt"]) meter(name, () => 1);
meter(
  "indexOf",
  (s, args, at) => ((at as number) < 0 ? s.length : (at as number) + String(args[0]).length) - start(args, s.length),
);
const indexOf = String.prototype.indexOf;
meter("includes", (s, args) => {
  const from = start(args, s.length);
  const at = indexOf.call(s, String(args[0]), from);
  return (at < 0 ? s.length : at + String(args[0]).length) - from;
});
meter("lastIndexOf", (s, args, at) => {
  const from = args[1] === undefined ? s.length : start(args, s.length);
  return from - Math.max(0, at as number);
});
// The tokenizer library (gpt-tokenizer) merges a piece's bytes pair by pair, each merge splicing
// its arrays of the piece's parts: its merge work, quadratic in a piece's length (tokens.ts hands
// it pieces of at most SEGMENT_CHARS characters). A splice moves the elements after its start.
const splice = Array.prototype.splice;
Array.prototype.splice = function (this: unknown[], ...args: unknown[]) {
  work.scanned += Math.max(0, this.length - (Number(args[0]) || 0));
  return splice.apply(this, args as Parameters<typeof splice>);
} as typeof splice;
for (const name of ["split", "replace", "replaceAll"]) {
  meter(name, (s, args) => (typeof args[0] === "string" ? s.length : 0));
}
