// No request can stall the service: every text path is linear in its input, up to the largest
// body each route accepts. Hostile texts ("ok\n" repeated, runs of commas, dots, spaces or one
// letter, a long CJK run; tests/support/linear_workloads.ts) go through memory-compact,
// memory-extract (and its worker) and the text helpers at sizes that grow 16-fold, and the work
// each does is counted, not timed (tests/support/work_meter.ts, in a child process): the regex
// engine's own backtracks, the characters our scanners read and the tokenizer library's merge
// steps. Linear work grows about 16x, quadratic 256x; and no regex call may re-read what it
// scanned (a window re-read at every start).
// A count is the same on a loaded machine as on an idle one, so these never flake and never
// assert a time. The routes also answer each hostile body at their body limit.
import assert from "node:assert/strict";
import {
  countTokens,
  countTokensYielding,
  SEGMENT_CHARS,
  tokenizerSegments,
  truncateToTokens,
} from "../supabase/functions/_shared/tokens.ts";
import { countTokens as libraryCount } from "gpt-tokenizer";
import { bulletText } from "../supabase/functions/_shared/retrieval/format.ts";
import { shortenToFit } from "../supabase/functions/_shared/fit-text.ts";
import { offlineCompressed } from "../supabase/functions/_shared/context/compress.ts";
import { extractEntityMentions } from "../supabase/functions/_shared/entity-rules.ts";
import { splitSentences } from "../supabase/functions/_shared/writing-constraints.ts";
import { findCorrection, findRememberStatement } from "../supabase/functions/_shared/rule-patterns.ts";
import { testConfig } from "./support/config.ts";
import { dbTest } from "./support/http.ts";
import { MESSAGE_SHAPES as HOSTILE, WORKLOADS } from "./support/linear_workloads.ts";
import { assertLinearWork } from "./support/work.ts";

/** Text sizes the routes are counted at (a count is exact: two sizes show its growth); their limit is run below. */
const ROUTE_SIZES = [1 << 12, 1 << 16];
/** The helpers read stored content (at most 4,000 characters) and candidates: 64 KiB is far beyond it. */
const HELPER_SIZES = [1 << 12, 1 << 16];

/** Body bytes of a JSON request. */
const bodyBytes = (body: unknown) => new TextEncoder().encode(JSON.stringify(body)).length;

/** The longest text of this pattern whose request body (built by `body`) fits in limitBytes. */
function fitted(pattern: (n: number) => string, limitBytes: number, body: (text: string) => unknown): string {
  let n = limitBytes;
  let text = pattern(n);
  while (bodyBytes(body(text)) > limitBytes && n > 16) {
    n = Math.floor(n * 0.9);
    text = pattern(n);
  }
  return text;
}

// Each route's own limit, as configured (docs: the README's error table).
const config = testConfig();

/**
 * Each hostile body, as long as the route's body limit allows, is answered as it should be (not
 * counted: a count there takes too long; a recursion or a regex overflowing its stack shows only
 * at such sizes, as the library's splitting regex once did on a 4 MB CJK run).
 */
async function answersAtLimit(name: string, limitBytes: number): Promise<void> {
  const route = WORKLOADS[name]!;
  const shared = await route.open!();
  try {
    for (const [call, pattern] of Object.values(route.shapes).entries()) {
      await route.run(fitted(pattern, limitBytes, (text) => route.body!(text, call)), shared, call);
    }
  } finally {
    await route.close!(shared);
  }
}

dbTest(
  "linear: memory-compact's work on hostile bodies grows linearly; each is answered at the body limit",
  async () => {
    await assertLinearWork(["memory-compact"], ROUTE_SIZES);
    await answersAtLimit("memory-compact", config.maxCompactBodyBytes);
  },
);

dbTest(
  "linear: memory-extract and its worker's work on hostile transcripts grows linearly; each is handled at the body limit",
  async () => {
    await assertLinearWork(["memory-extract + worker"], ROUTE_SIZES);
    await answersAtLimit("memory-extract + worker", config.maxExtractBodyBytes);
  },
);

Deno.test("linear: the retrieval block's bullet folding, the sentence splitter and the rules on hostile text", async () => {
  await assertLinearWork(["bulletText", "splitSentences", "extractByRules"], HELPER_SIZES);
});

Deno.test("linear: offline compression, shortening, the offline summary and entity mentions on runs inside the text", async () => {
  // Context assembly compresses every candidate offline; a run of trimmable characters followed by
  // another character is quadratic for a trailing-trim pattern tried from every start in the run.
  await assertLinearWork(
    ["offlineForms", "shortenToFit", "offlineSummary", "offlineCompressed", "extractEntityMentions"],
    HELPER_SIZES,
  );
  assert.equal(
    shortenToFit("one two, three", (s) => s.length <= 9),
    "one two…",
    "the trailing comma is trimmed before the mark",
  );
  assert.deepEqual(extractEntityMentions("see https://example.com/a.")[0]?.name, "example.com");
  assert.equal(offlineCompressed("Use pnpm-8 instead of npm for installs."), "pnpm-8: npm installs");
});

Deno.test("linear: the work counter sees the super-linear code these tests were written against", async () => {
  for (
    const [workload, failure] of [
      ["known bad: a trailing trim by regex", /backtracks a character/],
      ["known bad: a window re-read at every start", /backtracks a character/],
      ["known bad: a scan to the end from every position", /super-linear work/],
      ["known bad: one long piece to the tokenizer library", /super-linear work/],
    ] as const
  ) {
    await assert.rejects(assertLinearWork([workload], HELPER_SIZES), failure, workload);
  }
});

Deno.test("tokens: the library never merges more than SEGMENT_CHARS characters at once (work bounded per character)", () => {
  for (const text of Object.values(HOSTILE).map((p) => p(50_000))) {
    let total = 0;
    for (const segment of tokenizerSegments(text)) {
      assert.ok(segment.length <= SEGMENT_CHARS, `segment of ${segment.length} characters`);
      total += segment.length;
    }
    assert.equal(total, text.length, "segments cover the text exactly");
  }
});

Deno.test("tokens: counting 8 MiB gives the event loop back to other requests many times (memory-compact counts this way)", async () => {
  const text = "ok\n".repeat(Math.floor(config.maxCompactBodyBytes / 3));
  let turns = 0;
  let counting = true;
  const tick = () => {
    turns++;
    if (counting) setTimeout(tick);
  };
  setTimeout(tick);
  const n = await countTokensYielding(text);
  counting = false;
  assert.equal(n, 5_592_404, "the count is the segmented count: ok and a line break, 2 tokens a line");
  assert.ok(turns >= 5, `other work ran ${turns} times while 8 MiB were counted`);
});

Deno.test("tokens: counts equal the library's on prose, code, JSON, Markdown tables and mixed scripts", async () => {
  const texts = [
    await Deno.readTextFile(new URL("../README.md", import.meta.url)),
    await Deno.readTextFile(new URL("../supabase/functions/_shared/llm.ts", import.meta.url)),
    await Deno.readTextFile(new URL("../deno.lock", import.meta.url)),
    "漢字テスト 😀 naïve café — “quotes” \t\t\n\n   indented\r\n".repeat(300),
    `${"| col   | value    |\n|-------|----------|\n".repeat(200)}${"x  ".repeat(500)}`,
    // Windows cut after a line break: never before the slashes a punctuation piece takes, and in
    // deeply indented JSON (no space before a letter for 4,096 characters) after the indentation's line break.
    "foo();\n// a comment here\n".repeat(600),
    JSON.stringify(
      { a: Array.from({ length: 400 }, (_, i) => ({ k: `v${i}`, h: `sha512-${btoa(String(i)).repeat(8)}` })) },
      null,
      6,
    ),
  ];
  for (const text of texts) {
    assert.equal(countTokens(text), libraryCount(text, { disallowedSpecial: new Set() }));
    const cut = truncateToTokens(text, 700);
    assert.ok(text.startsWith(cut) && countTokens(cut) <= 700);
  }
  // Special-token text is plain text: the library would throw on it.
  assert.equal(
    countTokens("the <|endoftext|> marker"),
    libraryCount("the <|endoftext|> marker", { disallowedSpecial: new Set() }),
  );
});

// The scanners that replaced the backtracking patterns find what the patterns found.
const OLD_REMEMBER =
  /(?:^|[.!?\n]\s*)(?:(?:please|pls|also|and|oh|ok|okay)[,\s]+)*(?:remember|keep in mind|note for (?:the )?future|don't forget|do not forget)(?:\s+that)?\s*[:,-]?\s+([^\n]+)/i;
const OLD_CORRECTION = /^\s*(?:no|nope|wrong|incorrect|actually)\b[,.!:;]?\s+([^\n]*\bnot\b[^\n]*)/i;
const OLD_SENTENCE_END = /[.!?]+(?=\s+["'`(A-Z0-9])/g;

Deno.test("rules: the scanners agree with the patterns they replace on 20,000 random short messages", () => {
  const words = [
    "remember",
    "Remember",
    "REMEMBER that",
    "that",
    "thatcher",
    "keep in mind",
    "note for the future",
    "don't forget",
    "do not forget",
    "please",
    "pls",
    "also",
    "and",
    "oh",
    "ok",
    "okay",
    "book",
    "no",
    "nope",
    "No",
    "wrong",
    "actually",
    "not",
    "knot",
    "x",
    "the db",
    "?",
    ".",
    "!",
    ",",
    ":",
    "-",
    ";",
    " ",
    " ",
    "  ",
    "\n",
    "\t",
    "\r\n",
    "\u00a0",
    "A",
    "1",
    '"',
    "e.g.",
    "v1.2",
  ];
  let seed = 7;
  const next = (n: number) => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n;
  const norm = (s: string | undefined) => (s === undefined || s.trim() === "" ? undefined : s.trim());
  const oldSplit = (text: string) => {
    const out: string[] = [];
    let start = 0;
    for (const m of text.matchAll(OLD_SENTENCE_END)) {
      out.push(text.slice(start, m.index! + m[0].length).trim());
      start = m.index! + m[0].length;
    }
    return [...out, text.slice(start).trim()].filter((s) => s.length > 0);
  };
  for (let k = 0; k < 20_000; k++) {
    const text = Array.from({ length: 1 + next(12) }, () => words[next(words.length)]).join("");
    assert.equal(norm(findRememberStatement(text)), norm(OLD_REMEMBER.exec(text)?.[1]), JSON.stringify(text));
    assert.equal(norm(findCorrection(text)), norm(OLD_CORRECTION.exec(text)?.[1]), JSON.stringify(text));
    assert.deepEqual(splitSentences(text), oldSplit(text), JSON.stringify(text));
    assert.equal(bulletText(text), text.replace(/\s*\n\s*/g, " ").trim(), JSON.stringify(text));
  }
});
