// No request can stall the service: every text path is linear in its input, up to the largest
// body each route accepts. Hostile bodies ("ok\n" repeated, runs of commas, dots, spaces or one
// letter, a long CJK run) go through memory-compact and memory-extract (and its worker) at sizes
// that grow fourfold up to the route's limit; each step may take at most GROWTH times the step
// before. Linear work grows about 4x, quadratic 16x, so a super-linear path fails at the first
// steps (seconds), long before the limit where it would take hours. Times are each size's
// fastest of a few runs, compared with each other, never with a wall-clock limit.
import assert from "node:assert/strict";
import { createHandler as createCompact } from "../supabase/functions/memory-compact/handler.ts";
import { createHandler as createExtract } from "../supabase/functions/memory-extract/handler.ts";
import { localEmbedder } from "../supabase/functions/_shared/embeddings.ts";
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
import { offlineCompressed, offlineForms, offlineSummary } from "../supabase/functions/_shared/context/compress.ts";
import { extractEntityMentions } from "../supabase/functions/_shared/entity-rules.ts";
import { splitSentences } from "../supabase/functions/_shared/writing-constraints.ts";
import { extractByRules } from "../supabase/functions/_shared/rule-extractor.ts";
import { findCorrection, findRememberStatement } from "../supabase/functions/_shared/rule-patterns.ts";
import { drainQueue } from "../supabase/functions/_shared/drain-queue.ts";
import { userHeaders } from "./support/auth.ts";
import { testConfig } from "./support/config.ts";
import { newTenant, testSql } from "./support/seed.ts";
import { dbTest } from "./support/http.ts";

/** A fourfold step may take at most this many times the step before (linear ≈ 4, quadratic ≈ 16). */
const GROWTH = 10;
/** Timer noise allowed on top, for the smallest sizes that take a millisecond or less. */
const NOISE_MS = 5;

/** Message texts of about n characters that made the old patterns (or the tokenizer) backtrack. */
const HOSTILE: Record<string, (n: number) => string> = {
  "ok\\n repeated": (n) => "ok\n".repeat(Math.ceil(n / 3)),
  "a comma run after 'remember'": (n) => `remember that the port is 5432${",".repeat(n)}x`,
  "a dot run": (n) => `Remember: the build is green${".".repeat(n)}a`,
  "a space run after 'no'": (n) => `no${" ".repeat(n)}x`,
  "one long word": (n) => "a".repeat(n),
  "a CJK run": (n) => "漢".repeat(n),
};

/** Body bytes of a JSON request whose single message is `text`. */
const bodyBytes = (body: unknown) => new TextEncoder().encode(JSON.stringify(body)).length;

/**
 * Whether one of up to three runs of fn stays within `bound` ms (a loaded machine may slow one run
 * down). Each run gets its own run number, to vary its text: the tokenizer caches what it merged.
 */
async function withinOnce(bound: number, fn: (run: number) => Promise<unknown>): Promise<{ ok: boolean; ms: number }> {
  let best = Number.POSITIVE_INFINITY;
  for (let run = 0; run < 3 && (run === 0 || best > bound); run++) {
    const t0 = performance.now();
    await fn(run);
    best = Math.min(best, performance.now() - t0);
  }
  return { ok: best <= bound, ms: best };
}

/**
 * Runs `work` at limit/1024, /256, /64, /16, /4 and (almost) the limit, and fails at the first step
 * that grows more than GROWTH times in each of three tries. `work(chars)` builds its own body from a text length and may
 * shrink it to stay under the limit.
 */
async function assertLinear(
  label: string,
  limitBytes: number,
  work: (chars: number) => Promise<unknown>,
): Promise<string> {
  const steps: string[] = [];
  let previous = Number.POSITIVE_INFINITY;
  for (let div = 1024; div >= 1; div /= 4) {
    const chars = Math.floor(limitBytes / div);
    const { ok, ms } = await withinOnce(GROWTH * previous + NOISE_MS, (run) => work(chars - run));
    steps.push(`${chars}: ${ms.toFixed(1)} ms`);
    assert.ok(ok, `${label}: super-linear (${steps.join(", ")})`);
    previous = ms;
  }
  return steps.join(", ");
}

/** The longest text of this pattern whose request body (built by `body`) fits in limitBytes. */
function fitted(
  pattern: (n: number) => string,
  chars: number,
  limitBytes: number,
  body: (text: string) => unknown,
): string {
  let n = chars;
  let text = pattern(n);
  while (bodyBytes(body(text)) > limitBytes && n > 16) {
    n = Math.floor(n * 0.9);
    text = pattern(n);
  }
  return text;
}

// Each route's own limit, as configured (docs: the README's error table).
const config = testConfig();
const ROUTE_LIMITS = { "memory-compact": config.maxCompactBodyBytes, "memory-extract": config.maxExtractBodyBytes };

dbTest("linear: memory-compact answers hostile bodies up to its body limit in linear time", async () => {
  const sql = testSql(2);
  try {
    const handler = createCompact({ sql, config, embedder: localEmbedder(), kickWorker: () => Promise.resolve() });
    const limit = ROUTE_LIMITS["memory-compact"];
    const lead = "The deploy pipeline runs the integration suite before every release of the API. ".repeat(100);
    for (const [name, pattern] of Object.entries(HOSTILE)) {
      let call = 0;
      const body = (text: string) => ({
        session_id: `linear-${call}`,
        messages: [{ role: "user", content: lead }, { role: "user", content: text }, {
          role: "user",
          content: "What next?",
        }],
        trigger_tokens: 1000,
      });
      await assertLinear(`memory-compact, ${name}`, limit, async (chars) => {
        call++;
        const text = fitted(pattern, chars, limit, body);
        // A tenant per call: one tenant's heavy requests are rate-limited (20 at once).
        const res = await handler(
          new Request("http://localhost/functions/v1/memory-compact", {
            method: "POST",
            headers: await userHeaders(newTenant()),
            body: JSON.stringify(body(text)),
          }),
        );
        const answer = await res.json();
        assert.equal(res.status, 200, JSON.stringify(answer).slice(0, 300));
        assert.equal(answer.compacted, true);
      });
    }
  } finally {
    await sql.end();
  }
});

dbTest(
  "linear: memory-extract and its worker handle hostile transcripts up to the body limit in linear time",
  async () => {
    const sql = testSql(2);
    try {
      const deps = { sql, config, embedder: localEmbedder() };
      const handler = createExtract({ ...deps, kickWorker: () => Promise.resolve() });
      const limit = ROUTE_LIMITS["memory-extract"];
      for (const [name, pattern] of Object.entries(HOSTILE)) {
        let call = 0;
        const body = (text: string) => ({
          session_id: `linear-${name.length}-${call}`,
          messages: [{ role: "user", content: text }],
        });
        await assertLinear(`memory-extract + worker, ${name}`, limit, async (chars) => {
          call++;
          const tenant = newTenant(); // one tenant's heavy requests are rate-limited (20 at once)
          const text = fitted(pattern, chars, limit, body);
          const res = await handler(
            new Request("http://localhost/functions/v1/memory-extract", {
              method: "POST",
              headers: await userHeaders(tenant),
              body: JSON.stringify(body(text)),
            }),
          );
          assert.equal(res.status, 202, await res.text());
          const report = await drainQueue(deps, { ownerId: tenant, workerId: "linear-test", maxJobs: 5 });
          assert.equal(report.dead + report.retried, 0, JSON.stringify(report));
          assert.ok(report.done >= 1, JSON.stringify(report));
        });
      }
    } finally {
      await sql.end();
    }
  },
);

Deno.test("linear: the retrieval block's bullet folding and the sentence splitter on hostile text", async () => {
  // Stored content is at most 4,000 characters; these run far beyond it to show the shape.
  const limit = 1 << 20;
  await assertLinear("bulletText, a space run", limit, (n) => Promise.resolve(bulletText(`a${" ".repeat(n)}b`)));
  await assertLinear("splitSentences, a dot run", limit, (n) => Promise.resolve(splitSentences(`${".".repeat(n)}a`)));
  await assertLinear(
    "rules, 'ok' fillers",
    limit,
    (n) =>
      Promise.resolve(extractByRules([{ role: "user", content: "ok\n".repeat(n / 3) }], { namespace: "devai/user" })),
  );
  // Context assembly compresses every candidate offline: one long word, and a comma run inside a token.
  // Stored content is at most 4,000 characters: 256 KiB shows the shape (the quadratic pattern took
  // 400 ms at 16 KiB), without the 1 MiB step whose single huge string times with GC noise.
  const stored = 1 << 18;
  await assertLinear(
    "offline compression, one long dotted word",
    stored,
    (n) => Promise.resolve(offlineForms(`use ${"a.".repeat(n / 2)} now`)),
  );
  await assertLinear(
    "offline compression, a comma run in a token",
    stored,
    (n) => Promise.resolve(offlineForms(`pin ${",".repeat(n)}a`)),
  );
});

Deno.test("linear: shortening, the offline summary and entity mentions on a comma run inside the text", async () => {
  // A run of trimmable characters followed by another character: a trailing-trim pattern tried
  // from every start in the run (what these used) is quadratic in it.
  const limit = 1 << 20;
  await assertLinear(
    "shortenToFit",
    limit,
    (n) => Promise.resolve(shortenToFit(`a ${",".repeat(n)}x b c`, () => true)),
  );
  await assertLinear(
    "offlineSummary",
    limit,
    (n) => Promise.resolve(offlineSummary(`${"w ".repeat(10)}${",".repeat(n)}x ${"w ".repeat(30)}`)),
  );
  await assertLinear(
    "offlineCompressed",
    limit,
    (n) => Promise.resolve(offlineCompressed(`deploy ${",".repeat(n)}x now`)),
  );
  await assertLinear(
    "extractEntityMentions",
    limit,
    (n) => Promise.resolve(extractEntityMentions(`see https://a.io/${",".repeat(n)}x today`)),
  );
  // An install command's word is trimmed of its closing punctuation (install-packages.ts).
  await assertLinear(
    "extractEntityMentions, an install command's word",
    limit,
    (n) => Promise.resolve(extractEntityMentions(`npm install ${".".repeat(n)}a`)),
  );
  // Many install commands on one line: each reads its words up to the next, not to the line's end.
  await assertLinear(
    "extractEntityMentions, install commands on one line",
    limit,
    (n) => Promise.resolve(extractEntityMentions("中npm i ".repeat(n / 7))),
  );
  assert.equal(
    shortenToFit("one two, three", (s) => s.length <= 9),
    "one two…",
    "the trailing comma is trimmed before the mark",
  );
  assert.deepEqual(extractEntityMentions("see https://example.com/a.")[0]?.name, "example.com");
  assert.equal(offlineCompressed("Use pnpm-8 instead of npm for installs."), "pnpm-8: npm installs");
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
