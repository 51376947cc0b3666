// What memory-extract's marks cost to store (docs/extraction.md#where-coverage-is-kept): one row a
// message, so its size is bounded per message and does not grow with the session id (marks once
// held the session id, in the row and in its index: 750 bytes a message for a 200-character id,
// 20 times the body of a POST of tiny messages). Measured by copying one POST's marks into a table
// defined like memory_extract_marks, indexes included, so other tests' rows do not count.
import assert from "node:assert/strict";
import { newTenant } from "./support/seed.ts";
import { postExtract } from "./support/extract.ts";
import { writeEnv } from "./write_helpers.ts";

/** The bytes a mark takes, table and indexes, for a POST of n tiny messages in a session named sessionId. */
async function bytesPerMark(env: Awaited<ReturnType<typeof writeEnv>>, sessionId: string, n: number) {
  const tenant = newTenant();
  const messages = Array.from({ length: n }, (_, i) => ({ role: "user", content: `${i}` }));
  const res = await postExtract(env, tenant, { session_id: sessionId, messages }, {}, "service");
  assert.deepEqual([res.status, res.body.new_messages], [202, n], JSON.stringify(res.body).slice(0, 300));
  return await env.sql.begin(async (tx) => {
    await tx`create temporary table marks_of_one_post (like public.memory_extract_marks including all) on commit drop`;
    await tx`insert into marks_of_one_post select * from public.memory_extract_marks where job_id = ${res.body.job_id}`;
    const [row] = await tx<{ marks: number; bytes: number }[]>`
      select count(*)::int as marks, pg_total_relation_size('marks_of_one_post')::int as bytes from marks_of_one_post`;
    assert.equal(row!.marks, n, "one mark a message");
    return row!.bytes / n;
  });
}

Deno.test("extract marks: at most 200 bytes a message, table and indexes, whatever the session id's length", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const n = 20_000; // the POST a review measured: 749 KB of tiny messages
    const short = await bytesPerMark(env, "s", n);
    const long = await bytesPerMark(env, `s${"x".repeat(199)}`, n);
    // A stored 200-character id would add about 200 bytes a mark; the hash index's buckets fill a
    // little differently with other keys (138.0 against 138.4 bytes seen), so not to the byte.
    assert.ok(
      Math.abs(long - short) < 4,
      `the session id is not stored in the marks: ${short} and ${long} bytes a mark`,
    );
    assert.ok(long <= 200, `${long} bytes a mark`);
  } finally {
    await env.close();
  }
});
