// Context packing on a cold line cache (issue 19): a line that cannot fit the room left is counted
// only until that is known, the partial count is kept, and the packed context is the one whole
// counts give, byte for byte, at every budget; the context's text is counted once, its count and
// its sections' those of their text. Counts characters handed to the tokenizer, never time.
import assert from "node:assert/strict";
import { offlineForms } from "../supabase/functions/_shared/context/compress.ts";
import {
  type PackedContext,
  packTiers,
  type PackTiersInput,
  type TierCandidate,
} from "../supabase/functions/_shared/context/pack-tiers.ts";
import { CONTEXT_HEADING, TIER_TITLES } from "../supabase/functions/_shared/context/render.ts";
import { DEFAULT_SHARES, sharesFor, TIERS } from "../supabase/functions/_shared/context/tiers.ts";
import { countTokens, countTokensUpTo, tokenCounting, tokenizerWork } from "../supabase/functions/_shared/tokens.ts";

const WORDS =
  "checkout service validates cart line inventory reservation sweeper job confirmed released stock payment ledger"
    .split(" ");
/** Words that are one token each after a space. */
const ONE_TOKEN = WORDS.filter((w) => w !== "sweeper");

/** Deterministic pseudo-random numbers (Lehmer), so a failure names its seed. */
function random(seed: number) {
  let s = seed;
  return () => (s = (s * 48271) % 2147483647) / 2147483647;
}

/**
 * Texts of the kinds memories hold: prose, code, JSON, CJK and letter runs (long pieces), long identifiers,
 * and words of one token each (where the spaces tell the count exactly: the edge of a lower bound).
 */
function memoryText(rnd: () => number, words: number, salt: string): string {
  const pick = () => WORDS[Math.floor(rnd() * WORDS.length)]!;
  const kind = Math.floor(rnd() * 7);
  const parts: string[] = [salt];
  for (let i = 0; i < words; i++) {
    if (kind === 1 && i % 9 === 0) parts.push(`\n    if (${pick()}_${i}) {\n        return ${pick()}();\n    }`);
    else if (kind === 2 && i % 7 === 0) parts.push(`{"${pick()}": [${i}, "${pick()}"]},\n`);
    else if (kind === 3 && i % 40 === 0) parts.push("検証".repeat(100 + Math.floor(rnd() * 200)));
    else if (kind === 4 && i % 60 === 0) parts.push(`${pick()}_`.repeat(40));
    else if (kind === 6 && i % 50 === 0) parts.push(`${pick()}q`.repeat(30 + Math.floor(rnd() * 90)));
    else if (kind === 5) parts.push(ONE_TOKEN[Math.floor(rnd() * ONE_TOKEN.length)]!);
    else parts.push(pick() + (rnd() < 0.1 ? "." : rnd() < 0.05 ? ")…" : ""));
  }
  return parts.join(" ");
}

function candidates(rnd: () => number, n: number, salt: string, maxWords: number): TierCandidate[] {
  return Array.from({ length: n }, (_, i) => {
    const content = memoryText(rnd, 1 + Math.floor(rnd() * maxWords), `${salt}m${i}`);
    return { id: `m${i}`, content, forms: { ...offlineForms(content), by: "rules" as const } };
  });
}

function inputOf(rnd: () => number, budget: number, salt: string, maxWords: number): PackTiersInput {
  const c = candidates(rnd, 14, salt, maxWords);
  const [a, b] = [c[0]!, c[1]!];
  const pair = { id: b.id, content: b.content, forms: b.forms };
  return {
    budget,
    shares: rnd() < 0.5 ? DEFAULT_SHARES : sharesFor("debugging"),
    critical: [{ ...a, tag: "unresolved", pair }, { ...c[2]!, tag: "decision" }, { ...c[3]!, tag: "file" }],
    relevant: c.slice(4, 10),
    background: c.slice(10),
    stale: [],
  };
}

/** The same input packed with whole line counts (the cache may hold partial ones: they are counted on). */
function packedWhole(input: PackTiersInput) {
  tokenCounting.whole = true;
  try {
    return packTiers(input);
  } finally {
    tokenCounting.whole = false;
  }
}

/** The context's count and each tier's are those of their text. */
function assertCountedExactly(packed: PackedContext, label: string) {
  assert.equal(packed.tokenCount, countTokens(packed.text), label);
  const [heading, ...sections] = packed.text.split("\n\n");
  assert.ok(packed.text === "" || heading === CONTEXT_HEADING, label);
  for (const tier of TIERS) {
    const section = sections.find((s) => s.startsWith(`${TIER_TITLES[tier]}\n`)) ?? "";
    assert.equal(packed.tiers[tier].token_count, countTokens(section), `${label}, ${tier}`);
  }
}

Deno.test("tokens: a count stopped past its limit is a lower bound, and counted on it is the whole count", () => {
  const rnd = random(7);
  for (let i = 0; i < 60; i++) {
    const text = memoryText(rnd, 20 + Math.floor(rnd() * 2_500), "");
    const whole = countTokens(text);
    for (const limit of [0, 1, 9, 100, whole - 1, whole, whole + 1, Math.floor(whole * rnd())]) {
      const part = countTokensUpTo(text, limit);
      if (part.chars === text.length) {
        assert.equal(part.tokens, whole, `seed text ${i}, limit ${limit}`);
        continue;
      }
      assert.ok(part.atLeast > limit && part.atLeast <= whole, `text ${i}: ${part.atLeast} of ${whole} at ${limit}`);
      assert.equal(countTokensUpTo(text, Number.POSITIVE_INFINITY, part).tokens, whole, `text ${i} counted on`);
      const further = countTokensUpTo(text, Math.min(whole, limit * 2 + 1), part);
      assert.equal(countTokensUpTo(text, Number.POSITIVE_INFINITY, further).tokens, whole, `text ${i} twice`);
    }
  }
});

Deno.test("context packing: a cold cache packs the context whole counts pack, at every budget and its edges", () => {
  const budgets = [
    ...Array.from({ length: 400 }, (_, i) => 200 + i),
    ...Array.from({ length: 60 }, (_, i) => 600 + i * 97),
    16_000,
    32_000,
  ];
  for (const [k, budget] of budgets.entries()) {
    const rnd = random(1_000 + k);
    // Fresh texts for each budget: every line is counted for the first time.
    const input = inputOf(rnd, budget, `b${budget}k${k}`, k % 3 === 0 ? 1_500 : 120);
    const cold = packTiers(input);
    assertCountedExactly(cold, `budget ${budget}`);
    assert.deepEqual(cold, packedWhole(input), `budget ${budget}`);
    assert.deepEqual(packTiers(input), cold, `budget ${budget}, repeated`);
  }
});

Deno.test("context packing: 60 long memories cold count a fraction of their text, and a repeat counts the text once", () => {
  const rnd = random(42);
  const words = (n: number) =>
    Array.from({ length: n }, () => WORDS[Math.floor(rnd() * WORDS.length)]! + (rnd() < 0.1 ? "." : "")).join(" ");
  const memories = Array.from({ length: 60 }, (_, i) => {
    const content = `${words(1_100 + i)} cold${i}`; // about 8,800 characters
    return { id: `c${i}`, content, forms: { ...offlineForms(content), by: "rules" as const } };
  });
  const chars = memories.reduce((n, m) => n + m.content.length, 0);
  for (const budget of [200, 2_000, 8_000, 32_000]) {
    const fresh = (ms: typeof memories) => ms.map((m) => ({ ...m, content: `${m.content} b${budget}` }));
    const input = {
      budget,
      shares: DEFAULT_SHARES,
      critical: fresh(memories.slice(0, 5)),
      relevant: fresh(memories.slice(5, 45)),
      background: fresh(memories.slice(45)),
      stale: [],
    };
    const before = tokenizerWork.countedChars;
    const packed = packTiers(input);
    const cold = tokenizerWork.countedChars - before;
    assertCountedExactly(packed, `budget ${budget}`);
    // Before: about 80,000 / 330,000 / 480,000 characters (every line tried, counted to its end).
    if (budget <= 8_000) assert.ok(cold < chars / 4, `budget ${budget}: ${cold} of ${chars} characters counted cold`);
    const again = tokenizerWork.countedChars;
    assert.deepEqual(packTiers(input), packed);
    // A repeat counts no line, and the text once at most (before: the text, then its sections too
    // long to keep, 2 x 135,000 characters at 32,000), and the sections' last words.
    const warm = tokenizerWork.countedChars - again;
    assert.ok(warm <= packed.text.length + 2_000, `budget ${budget}: ${warm} characters counted again`);
  }
});
