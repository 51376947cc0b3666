// checkJsonText (json-text.ts): the depth of a body's arrays and objects, read without parsing it;
// brackets inside strings are text, whatever escapes stand around them.
import assert from "node:assert/strict";
import { checkJsonText } from "../supabase/functions/_shared/json-text.ts";

Deno.test("json text: brackets in strings do not nest, escaped quotes and backslashes included", () => {
  const deep = (n: number) => "[".repeat(n) + "]".repeat(n);
  const cases: [string, boolean][] = [
    [deep(3), false],
    [deep(4), true],
    [JSON.stringify({ a: "[[[[[[", b: ["{{{{"] }), false],
    [JSON.stringify(['say "[[[[[" to it', "\\", "[[[[[", 'a\\"[[[[["']), false],
    [`["\\\\", ${deep(3)}]`, true], // the string ends at its second quote: the arrays after it nest
    [`["\\"", ${deep(2)}]`, false],
    [`["unterminated [[[[[`, false],
  ];
  for (const [text, tooDeep] of cases) assert.equal(checkJsonText(text, 3).tooDeep, tooDeep, text);
});
