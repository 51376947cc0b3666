// Incremental extraction, the pure part (memory-extract/transcript-prefix.ts): prefix digests and
// how much of a transcript earlier extract jobs of the session cover. No database.
import assert from "node:assert/strict";
import {
  canonicalJson,
  coveredPrefix,
  type EarlierExtractJob,
  extractIdempotencyKey,
  prefixDigests,
} from "../supabase/functions/memory-extract/transcript-prefix.ts";

const msg = (i: number, text = `message ${i}`) => ({ role: i % 2 ? "assistant" : "user", content: text });
const transcript = (n: number) => Array.from({ length: n }, (_, i) => msg(i));

/** What memory-extract does for one POST: queue the uncovered part as a job (or nothing). */
function post(jobs: EarlierExtractJob[], sessionId: string, messages: unknown[]): { covered: number; queued: boolean } {
  const digests = prefixDigests(messages);
  const n = messages.length;
  const { covered } = coveredPrefix(sessionId, digests, jobs);
  if (covered === n) return { covered, queued: false };
  jobs.push({
    idempotencyKey: extractIdempotencyKey(sessionId, n, digests[n]!),
    offset: covered,
    messages: messages.slice(covered),
  });
  return { covered, queued: true };
}

/** A message as it comes back from jsonb: same values, keys in another order. */
function reordered<T extends object>(m: T): T {
  return Object.fromEntries(Object.entries(m).reverse()) as T;
}

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

Deno.test("coveredPrefix: a growing transcript is covered up to the end of the jobs before it", () => {
  const jobs: EarlierExtractJob[] = [];
  assert.deepEqual(post(jobs, "s", transcript(4)), { covered: 0, queued: true });
  assert.deepEqual(post(jobs, "s", transcript(7)), { covered: 4, queued: true });
  assert.deepEqual(post(jobs, "s", transcript(9)), { covered: 7, queued: true });
  assert.deepEqual(jobs.map((j) => [j.offset, j.messages.length]), [[0, 4], [4, 3], [7, 2]]);
  // The same transcript again, or a shorter one, is covered: nothing to queue.
  assert.deepEqual(coveredPrefix("s", prefixDigests(transcript(9)), jobs), { covered: 9, lastJob: 2 });
  assert.deepEqual(coveredPrefix("s", prefixDigests(transcript(5)), jobs), { covered: 5, lastJob: 1 });
  assert.deepEqual(coveredPrefix("s", prefixDigests(transcript(4)), jobs), { covered: 4, lastJob: 0 });
  assert.deepEqual(coveredPrefix("s", prefixDigests(transcript(12)), jobs), { covered: 9, lastJob: 2 });
  assert.deepEqual(coveredPrefix("s", prefixDigests(transcript(4)), []), { covered: 0, lastJob: undefined });
});

Deno.test("coveredPrefix: a shorter transcript arriving after a longer one is covered (out-of-order POSTs)", () => {
  const jobs: EarlierExtractJob[] = [];
  post(jobs, "s", transcript(3));
  assert.deepEqual(post(jobs, "s", transcript(8)), { covered: 3, queued: true });
  assert.deepEqual(post(jobs, "s", transcript(6)), { covered: 6, queued: false });
  assert.deepEqual(post(jobs, "s", transcript(9)), { covered: 8, queued: true });
  assert.equal(jobs.length, 3);
});

Deno.test("coveredPrefix: jobs stored through jsonb (keys reordered) still cover", () => {
  const jobs: EarlierExtractJob[] = [];
  post(jobs, "s", transcript(4));
  const stored = jobs.map((j) => ({ ...j, messages: j.messages.map((m) => reordered(m as object)) }));
  assert.equal(coveredPrefix("s", prefixDigests(transcript(6)), stored).covered, 4);
});

Deno.test("coveredPrefix: another session's jobs never cover, even with the same messages", () => {
  const jobs: EarlierExtractJob[] = [];
  post(jobs, "session-a", transcript(5));
  assert.equal(coveredPrefix("session-b", prefixDigests(transcript(5)), jobs).covered, 0);
  assert.equal(coveredPrefix("session-b", prefixDigests(transcript(8)), jobs).covered, 0);
  assert.equal(coveredPrefix("session-a", prefixDigests(transcript(8)), jobs).covered, 5);
});

Deno.test("coveredPrefix: session ids with ':' ('a' and 'a:4', 'a:4:1') stay apart", () => {
  // 'session:a:4:1:<digest>' starts with the prefix of 'a' and of 'a:4' and 'a:4:1' alike.
  for (
    const [owner, other] of [["a", "a:4"], ["a:4", "a"], ["a:4", "a:4:1"], ["a:4:1", "a:4"], ["a", "a:4:1"]] as const
  ) {
    const jobs: EarlierExtractJob[] = [];
    post(jobs, owner, transcript(4));
    post(jobs, owner, transcript(6));
    for (const n of [1, 4, 6, 8]) {
      assert.equal(
        coveredPrefix(other, prefixDigests(transcript(n)), jobs).covered,
        0,
        `${owner}'s jobs covering ${other}'s ${n} messages`,
      );
    }
    assert.equal(coveredPrefix(owner, prefixDigests(transcript(8)), jobs).covered, 6, `${owner} covers its own`);
  }
  // A key whose session part is 'a:4' parsed as session 'a' + count 4 is refused too.
  const digests = prefixDigests(transcript(6));
  const spoof: EarlierExtractJob = { idempotencyKey: `session:a:4:${digests[4]}`, offset: 0, messages: transcript(4) };
  assert.equal(coveredPrefix("a", digests, [spoof]).covered, 4, "the well-formed key of session 'a' itself");
  assert.equal(coveredPrefix("a", digests, [{ ...spoof, idempotencyKey: `session:a:4:4:${digests[4]}` }]).covered, 0);
});

Deno.test("coveredPrefix: an edited history is covered up to the first changed message only", () => {
  const jobs: EarlierExtractJob[] = [];
  post(jobs, "s", transcript(4));
  post(jobs, "s", transcript(7));
  const edited = (at: number, n = 8) => transcript(n).map((m, i) => (i === at ? msg(i, "changed") : m));
  // Inside the second job's part: the first job and the unchanged start of the second cover.
  assert.equal(coveredPrefix("s", prefixDigests(edited(5)), jobs).covered, 5);
  // Inside the first job's part: the second job's history differs, so only up to the change.
  assert.equal(coveredPrefix("s", prefixDigests(edited(1)), jobs).covered, 1);
  // The very first message changed: nothing is covered, the whole transcript is new.
  assert.equal(coveredPrefix("s", prefixDigests(edited(0)), jobs).covered, 0);
  // A different message inserted before the end of the first job shifts everything after it.
  const inserted = [...transcript(2), msg(99, "inserted"), ...transcript(7).slice(2)];
  assert.equal(coveredPrefix("s", prefixDigests(inserted), jobs).covered, 2);
});

Deno.test("coveredPrefix: coverage must be contiguous from message 0 (a missing earlier job leaves a gap)", () => {
  const jobs: EarlierExtractJob[] = [];
  post(jobs, "s", transcript(4));
  post(jobs, "s", transcript(7));
  const [, second] = jobs;
  // The first job died: the second's part alone does not make a covered prefix.
  assert.deepEqual(coveredPrefix("s", prefixDigests(transcript(9)), [second!]), { covered: 0, lastJob: undefined });
});

Deno.test("coveredPrefix: malformed or inconsistent keys cover nothing", () => {
  const messages = transcript(4);
  const digests = prefixDigests(messages);
  const good: EarlierExtractJob = { idempotencyKey: extractIdempotencyKey("s", 4, digests[4]!), offset: 0, messages };
  assert.equal(coveredPrefix("s", digests, [good]).covered, 4);
  const bad: EarlierExtractJob[] = [
    { ...good, idempotencyKey: `session:s:${"0".repeat(64)}` }, // the key shape before incremental extraction
    { ...good, idempotencyKey: extractIdempotencyKey("s", 5, digests[4]!) }, // count ≠ offset + messages
    { ...good, idempotencyKey: extractIdempotencyKey("s", 4, digests[3]!) }, // digest of another prefix
    { ...good, messages: [...messages.slice(0, 3), msg(3, "not what the key says")] },
    { ...good, idempotencyKey: extractIdempotencyKey("s", 4, digests[4]!.toUpperCase()) },
    { ...good, offset: 4, idempotencyKey: extractIdempotencyKey("s", 8, digests[4]!) }, // starts at the end
  ];
  for (const job of bad) assert.equal(coveredPrefix("s", digests, [job]).covered, 0, JSON.stringify(job).slice(0, 120));
});
