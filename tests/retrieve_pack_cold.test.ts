// Retrieval's block and memory.query's texts count a memory only until it is known not to fit
// (issue 19: 20 memories of 8,000 characters were each counted whole on every request), and pack
// what whole counts pack, byte for byte, at every budget. Counts characters, never time.
import assert from "node:assert/strict";
import { type FormatMemory, renderBlock } from "../supabase/functions/_shared/retrieval/format.ts";
import { type PackInput, packIntoBudget, packTexts } from "../supabase/functions/_shared/retrieval/pack.ts";
import { countTokens, tokenCounting, tokenizerWork } from "../supabase/functions/_shared/tokens.ts";
import { joinedLineTokens } from "../supabase/functions/_shared/context/line-tokens.ts";

const ctx = { root: "devai", project: "taskforge" };
const WORDS = "checkout service validates cart line inventory reservation job confirmed released stock payment ledger"
  .split(" ");
const NAMESPACES = ["devai/project/taskforge/arch", "devai/user/style", "devai/global/patterns", "devai/global/fixes"];

function random(seed: number) {
  let s = seed;
  return () => (s = (s * 48271) % 2147483647) / 2147483647;
}

/** Prose, code lines, CJK runs and one-token words (where a lower bound from spaces is exact). */
function text(rnd: () => number, words: number): string {
  const kind = Math.floor(rnd() * 4);
  return Array.from({ length: words }, (_, i) => {
    const w = WORDS[Math.floor(rnd() * WORDS.length)]!;
    if (kind === 1 && i % 9 === 0) return `\n  if (${w}_${i}) return;`;
    if (kind === 2 && i % 40 === 0) return "検証".repeat(50 + Math.floor(rnd() * 300));
    return kind === 3 ? w : w + (rnd() < 0.1 ? "." : "");
  }).join(" ");
}

function memories(rnd: () => number, n: number, maxWords: number): FormatMemory[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `m${i}`,
    content: text(rnd, 1 + Math.floor(rnd() * maxWords)),
    memory_type: "semantic",
    namespace: NAMESPACES[Math.floor(rnd() * NAMESPACES.length)]!,
    source: null,
  }));
}

/** The same call with every text counted whole (the packing before counts stopped at the room). */
function whole<T>(pack: () => T): T {
  tokenCounting.whole = true;
  try {
    return pack();
  } finally {
    tokenCounting.whole = false;
  }
}

Deno.test("retrieval packing: the block and memory.query's texts are whole counts' at every budget and its edges", () => {
  const budgets = [...Array.from({ length: 300 }, (_, i) => 20 + i * 3), 2_000, 4_000, 8_000];
  for (const [k, budget] of budgets.entries()) {
    const rnd = random(500 + k);
    const ranked = memories(rnd, 12, k % 3 === 0 ? 1_200 : 80);
    const input: PackInput<FormatMemory> = {
      ranked,
      budgetTokens: budget,
      deltaHeader: "Memory updates since rev 3:",
      deltaBullets: ["- [UPDATE] cart line totals"],
      related: [{ id: "r1", anchor_id: ranked[1]!.id, content: text(rnd, 1 + Math.floor(rnd() * 400)) }],
    };
    const packed = packIntoBudget(input, ctx);
    assert.deepEqual(packed, whole(() => packIntoBudget(input, ctx)), `block at ${budget}`);
    assert.equal(packed.tokenCount, countTokens(packed.block), `block count at ${budget}`);
    for (const shortenFirst of [false, true]) {
      const texts = packTexts(ranked, (m) => m.content, budget, { shortenFirst });
      assert.deepEqual(
        texts,
        whole(() => packTexts(ranked, (m) => m.content, budget, { shortenFirst })),
        `texts at ${budget}`,
      );
    }
  }
});

Deno.test("retrieval packing: 20 memories of 8,000 characters count a fraction of their text", () => {
  const rnd = random(9);
  const ranked = Array.from({ length: 20 }, (_, i) => ({
    id: `l${i}`,
    content: Array.from({ length: 1_000 + i }, () => WORDS[Math.floor(rnd() * WORDS.length)]!).join(" "),
    memory_type: "semantic",
    namespace: NAMESPACES[0]!,
    source: null,
  }));
  const chars = ranked.reduce((n, m) => n + m.content.length, 0);
  for (const budget of [500, 2_000]) {
    const before = tokenizerWork.countedChars;
    const packed = packIntoBudget({ ranked, budgetTokens: budget }, ctx);
    const counted = tokenizerWork.countedChars - before;
    // Before: every memory's line whole, then the block (at 500, the best one shortened: its block
    // counted whole at every step of the search): 205,000 characters at 500.
    assert.ok(counted < chars / 3, `budget ${budget}: ${counted} of ${chars} characters counted`);
    assert.equal(packed.tokenCount, countTokens(packed.block));
  }
});

Deno.test("retrieval packing: lines counted for one retrieval are not counted again for the next, nor its blocks", () => {
  const rnd = random(31);
  const ranked = memories(rnd, 30, 12).map((m, i) => ({ ...m, content: `${m.content.replace(/検証/g, "")} ${i}.` }));
  const pack = () => {
    const before = tokenizerWork.countedChars;
    const packed = packIntoBudget({ ranked, budgetTokens: 8_000 }, ctx);
    return { packed, counted: tokenizerWork.countedChars - before };
  };
  const first = pack();
  assert.equal(first.packed.injected.length, ranked.length, "every memory fits");
  assert.equal(first.packed.tokenCount, countTokens(first.packed.block));
  const again = pack();
  assert.deepEqual(again.packed, first.packed);
  // The next turn's retrieval of the same memories counts nothing: the blocks (the best memory's
  // alone: is it whole?, and the final one) are counted from their lines' counts and their last
  // pieces' (" 12." and " 12.\n"), kept from the first time. They were counted whole every time.
  assert.equal(again.counted, 0);
});

Deno.test("retrieval packing: a block's count from its lines is the whole count, or none is given", () => {
  const rnd = random(77);
  const endings = [".", ". ", "  ", ")", "…", "?!", "", " 42", "\r", " /", ":", "]"];
  const starts = ["- ", "### ", "  - related: ", "/", " ", "\t", "[truncated - 3 more memories available]", "", "//"];
  let given = 0;
  for (let k = 0; k < 3_000; k++) {
    const lines = Array.from({ length: 1 + Math.floor(rnd() * 8) }, () => {
      const start = starts[Math.floor(rnd() * starts.length)]!;
      const body = rnd() < 0.05 ? "x".repeat(300) : rnd() < 0.03 ? text(rnd, 900) : text(rnd, Math.floor(rnd() * 20));
      return start + body + endings[Math.floor(rnd() * endings.length)]!;
    });
    const block = lines.map((l, i) => (i === 0 ? l : (rnd() < 0.3 ? "\n\n" : "\n") + l)).join("");
    const joined = joinedLineTokens(block);
    if (joined === undefined) continue;
    given++;
    assert.equal(joined, countTokens(block), JSON.stringify(block.slice(0, 300)));
  }
  assert.ok(given > 400, `${given} of 3,000 blocks counted from their lines`);
  // Rendered blocks are: heading, titles, bullets, related bullets and the truncation line.
  const shown = memories(rnd, 12, 40).map((m) => ({ ...m, content: m.content.replace(/検証/g, "") }));
  const block = renderBlock({ memories: shown, truncated: 4 }, ctx);
  assert.equal(joinedLineTokens(block), countTokens(block));
});
