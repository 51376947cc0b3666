// Incremental extraction, the pure part (memory-extract/transcript-prefix.ts): the prefix digests
// that name a session's transcript. No database (what earlier jobs cover: extract_coverage.test.ts).
import assert from "node:assert/strict";
import {
  canonicalJson,
  continueDigests,
  prefixDigests,
} from "../supabase/functions/memory-extract/transcript-prefix.ts";

const msg = (i: number, text = `message ${i}`) => ({ role: i % 2 ? "assistant" : "user", content: text });
const transcript = (n: number) => Array.from({ length: n }, (_, i) => msg(i));

Deno.test("prefixDigests: one digest per prefix; equal prefixes, equal digests; any change after it differs", () => {
  const a = prefixDigests(transcript(5));
  const b = prefixDigests([...transcript(3), msg(3, "edited"), msg(4)]);
  assert.equal(a.length, 6);
  assert.equal(new Set(a).size, 6);
  assert.deepEqual(a.slice(0, 4), b.slice(0, 4));
  assert.notEqual(a[4], b[4]);
  assert.notEqual(a[5], b[5], "a change stays in every later digest");
  assert.equal(prefixDigests([])[0], a[0]);
  assert.match(a[5]!, /^[0-9a-f]{64}$/);
});

Deno.test("prefixDigests: key order and jsonb round trips do not change a digest; values do", () => {
  const m = {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "c1", type: "function", function: { name: "bash", arguments: "{}" } }],
  };
  const roundTripped = JSON.parse(
    JSON.stringify({
      tool_calls: [{ function: { arguments: "{}", name: "bash" }, type: "function", id: "c1" }],
      content: null,
      role: "assistant",
    }),
  );
  assert.deepEqual(prefixDigests([m]), prefixDigests([roundTripped]));
  assert.equal(canonicalJson({ b: 1, a: [1, { d: undefined, c: "x" }] }), '{"a":[1,{"c":"x"}],"b":1}');
  assert.notDeepEqual(prefixDigests([m]), prefixDigests([{ ...m, content: "" }]));
  assert.notDeepEqual(
    prefixDigests([msg(0, "a"), msg(1, "b")]),
    prefixDigests([msg(0, "ab"), msg(1, "")]),
    "message boundaries count",
  );
});

Deno.test("continueDigests: a transcript's digests continue from any of its points; the digests are stable", () => {
  const all = prefixDigests(transcript(7));
  assert.deepEqual(continueDigests(all[3]!, transcript(7).slice(3)), all.slice(3));
  assert.deepEqual(continueDigests(all[7]!, []), [all[7]]);
  // Stored marks and job keys hold these digests: a change of the function (canonical JSON, the
  // hash, the chaining) would orphan every session's recorded parts, so the values are pinned.
  assert.deepEqual(continueDigests("8da9400e666b6eaba84fa080f33960eb869c2e7ae958f2f39bd902f92b82e953", [msg(1)]), [
    "8da9400e666b6eaba84fa080f33960eb869c2e7ae958f2f39bd902f92b82e953",
    "604fea7d0907d4116a9b4433b253d52f96198ca158d5699422d2489a6c6b6bf2",
  ]);
  assert.equal(prefixDigests([])[0], "2a17cd9f8c11076484cf12cfbc17262d660745b0df162159013250c218f9c403");
});
