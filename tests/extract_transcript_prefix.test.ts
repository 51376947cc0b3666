// Incremental extraction, the pure part (memory-extract/transcript-prefix.ts): the prefix digests
// that name a session's transcript. No database (what earlier jobs cover: extract_coverage.test.ts).
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { CountingSlice, whoEndsFirst } from "./support/event-loop.ts";
import {
  canonicalJson,
  continueDigests,
  prefixDigests,
} from "../supabase/functions/memory-extract/transcript-prefix.ts";

const msg = (i: number, text = `message ${i}`) => ({ role: i % 2 ? "assistant" : "user", content: text });
const transcript = (n: number) => Array.from({ length: n }, (_, i) => msg(i));

Deno.test("prefixDigests: one digest per prefix; equal prefixes, equal digests; any change after it differs", async () => {
  const a = await prefixDigests(transcript(5));
  const b = await prefixDigests([...transcript(3), msg(3, "edited"), msg(4)]);
  assert.equal(a.length, 6);
  assert.equal(new Set(a).size, 6);
  assert.deepEqual(a.slice(0, 4), b.slice(0, 4));
  assert.notEqual(a[4], b[4]);
  assert.notEqual(a[5], b[5], "a change stays in every later digest");
  assert.equal((await prefixDigests([]))[0], a[0]);
  assert.match(a[5]!, /^[0-9a-f]{64}$/);
});

Deno.test("prefixDigests: key order and jsonb round trips do not change a digest; values do", async () => {
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
  assert.deepEqual(await prefixDigests([m]), await prefixDigests([roundTripped]));
  assert.equal(canonicalJson({ b: 1, a: [1, { d: undefined, c: "x" }] }), '{"a":[1,{"c":"x"}],"b":1}');
  assert.notDeepEqual(await prefixDigests([m]), await prefixDigests([{ ...m, content: "" }]));
  assert.notDeepEqual(
    await prefixDigests([msg(0, "a"), msg(1, "b")]),
    await prefixDigests([msg(0, "ab"), msg(1, "")]),
    "message boundaries count",
  );
});

Deno.test("continueDigests: a transcript's digests continue from any of its points; the digests are stable", async () => {
  const all = await prefixDigests(transcript(7));
  assert.deepEqual(await continueDigests(all[3]!, transcript(7).slice(3)), all.slice(3));
  assert.deepEqual(await continueDigests(all[7]!, []), [all[7]]);
  // Stored marks and job keys hold these digests: a change of the function (canonical JSON, the
  // hash, the chaining) would orphan every session's recorded parts, so the values are pinned.
  assert.deepEqual(
    await continueDigests("8da9400e666b6eaba84fa080f33960eb869c2e7ae958f2f39bd902f92b82e953", [msg(1)]),
    [
      "8da9400e666b6eaba84fa080f33960eb869c2e7ae958f2f39bd902f92b82e953",
      "604fea7d0907d4116a9b4433b253d52f96198ca158d5699422d2489a6c6b6bf2",
    ],
  );
  assert.equal((await prefixDigests([]))[0], "2a17cd9f8c11076484cf12cfbc17262d660745b0df162159013250c218f9c403");
});

/** The digests as they were computed in one stretch (canonical text built whole, then hashed): the sliced ones must not differ. */
function canonicalInOneStretch(value: unknown): string {
  const canonical = (value: unknown): string => {
    if (Array.isArray(value)) return `[${value.map((v) => canonical(v ?? null)).join(",")}]`;
    if (value !== null && typeof value === "object") {
      const entries = Object.entries(value as Record<string, unknown>)
        .filter(([, v]) => v !== undefined)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
    }
    return JSON.stringify(value) ?? "null";
  };
  return canonical(value);
}

function digestsInOneStretch(start: string, messages: readonly unknown[]): string[] {
  const out = [start];
  for (const m of messages) {
    out.push(createHash("sha256").update(out.at(-1)!).update(canonicalInOneStretch(m)).digest("hex"));
  }
  return out;
}

Deno.test("continueDigests: hashed a slice at a time, the digests are those of the whole text, on varied messages", async () => {
  const wide = Object.fromEntries(
    Array.from({ length: 5_000 }, (_, i) => [`k${(i * 7919) % 5_000}`, i % 3 ? `v${i}` : i]),
  );
  const messages: unknown[] = [
    msg(0),
    { role: "user", content: 'é😀\u{1D400} \u2028 "quoted" \\ back', name: undefined, z: [1, undefined, null] },
    { role: "tool", content: "x".repeat(70_000), tool_call_id: "c1" }, // past one hash update's buffer
    { b: { d: [true, false, 1.5, -0, 1e21], c: {} }, a: [], "": "", "\u00e9": 1, e: 2, "10": 3, "9": 4 },
    { role: "assistant", content: "ok", extra: wide }, // many pieces: hashed in several updates
    { role: "assistant", content: [{ type: "text", text: "😀".repeat(40_000) }] }, // a pair never cut
    "a bare string",
    null,
  ];
  const start = (await prefixDigests([]))[0]!;
  assert.deepEqual(await prefixDigests(messages), digestsInOneStretch(start, messages));
  assert.deepEqual(await prefixDigests(messages, new CountingSlice()), digestsInOneStretch(start, messages));
  for (const m of messages) assert.equal(canonicalJson(m), canonicalInOneStretch(m));
});

Deno.test("continueDigests: one large message is digested in slices, another request answered between two", async () => {
  const large = {
    role: "user",
    content: "hi",
    x: Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`k${i}`, i])),
  };
  const slice = new CountingSlice();
  let digests: string[] = [];
  const order = await whoEndsFirst(async () => digests = await prefixDigests([large], slice), "digests");
  assert.deepEqual(order, ["other request", "digests"]);
  assert.equal(digests.length, 2);
  // 20,000 keys, each a key piece and a value piece: a look at the clock every 256 pieces.
  assert.ok(slice.yields >= 100, `${slice.yields} yields`);
});
