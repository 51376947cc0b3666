// countTokens hands a window of text to the tokenizer library whole when none of its pieces can
// be sliced (tokens.ts piecesAreShort), rather than in segments cut by a pass of the splitting
// regex of our own: the same count (checked here against the segments' sum over the docs, code,
// hostile shapes and the edge of the slicing rule), with that pass left out, which was two thirds
// of the time of counting a 4 KB retrieval block. Counted, not timed: tokenizerWork.segmentedChars.
import assert from "node:assert/strict";
import { countTokens as libraryCount } from "gpt-tokenizer";
import { countTokens, SEGMENT_CHARS, tokenizerSegments, tokenizerWork } from "../supabase/functions/_shared/tokens.ts";
import { MESSAGE_SHAPES } from "./support/linear_workloads.ts";

const AS_TEXT = { disallowedSpecial: new Set<string>() };

/** The count as segments give it (countTokens before whole windows). */
function segmentedCount(text: string): number {
  if (text.length <= SEGMENT_CHARS) return libraryCount(text, AS_TEXT);
  let total = 0;
  for (const segment of tokenizerSegments(text)) total += libraryCount(segment, AS_TEXT);
  return total;
}

function texts(): string[] {
  const out: string[] = [];
  for (const dir of ["docs/", "supabase/functions/_shared/"]) {
    const url = new URL(`../${dir}`, import.meta.url);
    for (const f of Deno.readDirSync(url)) {
      if (f.isFile) out.push(Deno.readTextFileSync(new URL(f.name, url)));
    }
  }
  for (const shape of Object.values(MESSAGE_SHAPES)) out.push(shape(3_000), shape(20_000));
  // Around the slicing rule: whitespace then one long piece, each alone short, together over it.
  for (const [blank, n] of [[" ", 200], ["\t", 200], ["\n", 200], [" ", 254], ["\u3000", 120]] as const) {
    for (const piece of ["x".repeat(100), "7".repeat(90), ".".repeat(100) + "\n\n", "ünïcödé".repeat(20)]) {
      out.push(`head ${blank.repeat(n)}${piece} tail `.repeat(3), `${"word ".repeat(60)}${blank.repeat(n)}${piece}`);
    }
  }
  for (const n of [250, 253, 254, 255, 256, 257, 300]) {
    out.push(`a ${"b".repeat(n)} c`, `a ${" ".repeat(n)}b`, `a\n${"-".repeat(n)}\n/x`, "漢字".repeat(n));
  }
  // A retrieval block (format.ts): heading, section titles, bullets.
  out.push(retrievalBlock());
  return out;
}

function retrievalBlock(): string {
  const bullets = Array.from(
    { length: 15 },
    (_, i) =>
      `- Sessions for project ${i} live server-side in Redis with a ${
        30 + i
      }-minute sliding expiry; deploy with \`pnpm test\`, then \`fly deploy\` (see src/auth/session-${i}.ts).`,
  );
  return [
    "## Relevant Memories",
    "",
    "### Decisions",
    ...bullets.slice(0, 8),
    "",
    "### Procedures",
    ...bullets.slice(8),
  ]
    .join("\n");
}

Deno.test("tokens: whole windows count what the segments counted, over docs, code, hostile shapes and the slicing edge", () => {
  let n = 0;
  for (const text of texts()) {
    assert.equal(countTokens(text), segmentedCount(text), `count of ${JSON.stringify(text.slice(0, 80))}…`);
    n++;
  }
  assert.ok(n > 100, `${n} texts`);
});

Deno.test("tokens: a retrieval block is counted without a regex pass of our own; a long piece still is", () => {
  const block = retrievalBlock();
  assert.ok(block.length > SEGMENT_CHARS);
  const before = tokenizerWork.segmentedChars;
  assert.equal(countTokens(block), segmentedCount(block));
  // segmentedCount itself segments the block once; countTokens added nothing.
  assert.equal(tokenizerWork.segmentedChars - before, block.length);
  const long = `see ${"z".repeat(SEGMENT_CHARS + 40)} here ${"ok ".repeat(200)}`;
  const at = tokenizerWork.segmentedChars;
  countTokens(long);
  assert.ok(tokenizerWork.segmentedChars - at >= SEGMENT_CHARS, "a window with a piece too long is cut in segments");
});
