// How a query's -exclusions are read (docs/retrieval.md#exclusions): one table of inputs and the
// exclusions they hold, run through both readers, _shared/search/exclusions.ts (what is embedded,
// where time words are read) and public.memory_keyword_terms (what the search leaves out), so the
// two cannot drift apart again; and retrievalText, which keeps project_context out of them.
import assert from "node:assert/strict";
import { exclusionsOf, literalText, retrievalText } from "../supabase/functions/_shared/search/exclusions.ts";
import { dbTest } from "./support/http.ts";
import { testSql } from "./support/seed.ts";

/** Input → the exclusions read from it, in order (each one with words to match). */
const TABLE: [string, string[]][] = [
  ["ERR_SOCKET_TIMEOUT -proxy", ["proxy"]],
  ["-proxy at the start", ["proxy"]],
  ['deploy -"fly deploy" staging', ["fly deploy"]],
  ['billing -"widget gizmo', ["widget gizmo"]],
  ['billing -"widget gizmo\nsecond line', ["widget gizmo\nsecond line"]],
  // A flag, a negative number, a hyphenated word, a lone dash: no exclusion.
  ["git log -n 5 --oneline; exit -1", []],
  ["docker-compose up - now", []],
  ["well-known -well-known", ["well-known"]],
  // An exclusion right after another's closing quote, quoted or not.
  ['-"foo"-bar', ["foo", "bar"]],
  ['-"foo"-"bar baz" qux', ["foo", "bar baz"]],
  ['-"foo"-"bar baz', ["foo", "bar baz"]],
  // Not after a positive phrase, a word or an opening quote.
  ['"foo"-bar', []],
  ['-foo"-bar"', ["foo"]],
  ['find "-verbose mode"', []],
  ['a "b -"c d', ["c d"]],
  // Blanks are Unicode White_Space, whatever the database's locale.
  ["a\u2003-bar", ["bar"]],
  ["a\u2028-bar", ["bar"]],
  ["a\u00a0-bar", ["bar"]],
  ["a\u202f-bar", ["bar"]],
  ["a\u3000-bar baz", ["bar"]],
  ["a\u2003-\u201cbar\u201d", ["\u201cbar\u201d"]],
  ["a\u200b-bar", []], // a zero-width space is no blank
  ["a\t-bar\r\n-baz", ["bar", "baz"]],
  // A word: a letter (any script) or other non-ASCII character first, then up to a blank or quote.
  ["kein -Übermut", ["Übermut"]],
  ["нет -прокси", ["прокси"]],
  ["x -bar\u2003baz", ["bar"]],
  ['x -bar"baz" y', ["bar"]],
];

Deno.test("exclusions: the TS reader reads the table", () => {
  for (const [input, expected] of TABLE) assert.deepEqual(exclusionsOf(input), expected, JSON.stringify(input));
});

const sql = testSql(1);

dbTest("exclusions: public.memory_keyword_terms reads the table alike", async () => {
  try {
    for (const [input, expected] of TABLE) {
      const rows = await sql<{ term: string }[]>`
        select term from public.memory_keyword_terms(${input}, 12) where kind = 'exclude'`;
      assert.deepEqual(rows.map((r) => r.term), expected, JSON.stringify(input));
    }
  } finally {
    await sql.end();
  }
});

Deno.test("exclusions: project_context adds none, and a quote the message leaves open stops at its end", () => {
  const text = retrievalText('deploy -"widget', 'Project: gizmo billing; java -jar app.jar; -"notes"-x');
  assert.deepEqual(exclusionsOf(text), ["widget"]);
  assert.ok(text.startsWith('deploy -"widget"\n\n'), JSON.stringify(text));
  assert.ok(text.includes("gizmo billing"), "the context's words are searched");
  // A context whose phrases, once no exclusion, would start one are read until none is left.
  assert.deepEqual(exclusionsOf(retrievalText("q", '-"a -bc" -"c"-de')), []);
  assert.equal(retrievalText("q -x", undefined), "q -x");
  assert.equal(retrievalText('q -"a"', "ctx"), 'q -"a"\n\nctx', "a closed quote gets no second one");
});

Deno.test("exclusions: a literal text holds none, and keeps its words", () => {
  for (const [input] of TABLE) assert.deepEqual(exclusionsOf(literalText(input)), [], JSON.stringify(input));
  assert.equal(literalText("java -jar app.jar"), "java  jar app.jar");
  // The phrase's -bc, once no longer inside an exclusion, would start one: read again.
  assert.equal(literalText('-"a -bc" -"c"-de'), ' "a  bc"  "c" de');
  assert.equal(literalText("git log -n 5"), "git log -n 5", "what is no exclusion stays as it is");
});
