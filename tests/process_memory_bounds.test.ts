// What a process keeps across requests, keyed by text a client chose, stays within its documented
// bound however many distinct texts arrive (docs/operations.md#process-memory-bounds). Counts
// entries and characters, never time or RSS.
import assert from "node:assert/strict";
import tokenizer from "gpt-tokenizer";
import { countTokens, TOKENIZER_MERGE_CACHE_ENTRIES } from "../supabase/functions/_shared/tokens.ts";
import {
  LINE_TOKEN_CACHE_CHARS,
  LINE_TOKEN_CACHE_ENTRIES,
  lineTokenCache,
  lineTokens,
} from "../supabase/functions/_shared/context/line-tokens.ts";

/** Distinct lowercase words: the i-th spelled in base 26, padded to `length` letters. */
const word = (i: number, length: number) =>
  i.toString(26).split("").map((d) => String.fromCharCode(97 + parseInt(d, 26))).join("").padStart(length, "q");

Deno.test("tokenizer: 50,000 distinct words leave at most TOKENIZER_MERGE_CACHE_ENTRIES merge results cached", () => {
  for (let from = 0; from < 50_000; from += 1_000) {
    countTokens(Array.from({ length: 1_000 }, (_, k) => word(from + k, 9)).join(" "));
  }
  // The library keeps its merge cache on the encoding's processor, not in its typed API.
  const cache = (tokenizer as unknown as { bytePairEncodingCoreProcessor: { mergeCache?: Map<string, unknown> } })
    .bytePairEncodingCoreProcessor.mergeCache;
  assert.ok(cache, "the merge cache is on (a cache of 0 would count every word from scratch)");
  assert.ok(cache.size <= TOKENIZER_MERGE_CACHE_ENTRIES, `${cache.size} merge results cached`);
  assert.ok(cache.size >= TOKENIZER_MERGE_CACHE_ENTRIES / 2, `${cache.size}: the cache still serves`);
});

Deno.test("context packing: distinct long lines keep at most LINE_TOKEN_CACHE_CHARS characters cached", () => {
  // 1,000 memories' lines of 4,000 characters (the API's longest content): 4,000,000 characters.
  const body = " release".repeat(499);
  for (let i = 0; i < 1_000; i++) {
    const line = `- ${word(i, 6)}${body}`;
    assert.equal(lineTokens(line), countTokens(line));
  }
  const held = lineTokenCache();
  assert.ok(held.chars <= LINE_TOKEN_CACHE_CHARS, `${held.chars} characters cached`);
  assert.ok(held.chars >= LINE_TOKEN_CACHE_CHARS - 4_000, `${held.chars}: the newest lines stay cached`);

  // Many short distinct lines: the entry bound holds too.
  for (let i = 0; i < 50_000; i++) lineTokens(`- ${word(i, 7)}`);
  assert.ok(lineTokenCache().entries <= LINE_TOKEN_CACHE_ENTRIES, `${lineTokenCache().entries} lines cached`);
  // A line counted again after it was dropped has the same count.
  assert.equal(lineTokens(`- ${word(0, 6)}${body}`), countTokens(`- ${word(0, 6)}${body}`));
});
