// Incremental extraction, how much of a POSTed transcript the session's earlier jobs cover
// (memory-extract/next-part.ts, by the digests each job recorded: docs/extraction.md), through the
// handler on the real database without a model. Each case says where the POST's new part starts
// (`covered`) or which earlier job covers the transcript to its end.
import assert from "node:assert/strict";
import { newTenant } from "./support/seed.ts";
import { chatMessage as msg, chatTranscript as transcript, extractJobs, postExtract } from "./support/extract.ts";
import { type WriteEnv, writeEnv } from "./write_helpers.ts";

/**
 * One POST of the whole transcript: where its new part starts, or the index of the job that covers
 * it all; and the messages [from, to) dead parts held that it queued again apart, with their tries.
 */
async function post(env: WriteEnv, tenant: string, sessionId: string, messages: unknown[]) {
  const res = await postExtract(env, tenant, { session_id: sessionId, messages });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  const jobs = await extractJobs(env, tenant);
  const index = jobs.findIndex((j) => j.id === res.body.job_id);
  const retried = jobs.find((j) => j.id === res.body.retried?.[0]?.job_id)?.payload;
  const again = retried
    ? { again: [retried.offset, retried.offset + retried.messages.length, res.body.retried![0]!.tries] }
    : {};
  if (res.body.deduplicated) return { coveredBy: index, ...again };
  return { covered: jobs[index]!.payload.offset, ...again };
}

Deno.test("coverage: a growing transcript is covered up to the end of the jobs before it; a shorter one by the job that has its end", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const t = newTenant();
    assert.deepEqual(await post(env, t, "s", transcript(4)), { covered: 0 });
    assert.deepEqual(await post(env, t, "s", transcript(7)), { covered: 4 });
    assert.deepEqual(await post(env, t, "s", transcript(9)), { covered: 7 });
    assert.deepEqual(await post(env, t, "s", transcript(9)), { coveredBy: 2 });
    assert.deepEqual(await post(env, t, "s", transcript(5)), { coveredBy: 1 });
    assert.deepEqual(await post(env, t, "s", transcript(4)), { coveredBy: 0 });
    assert.deepEqual(await post(env, t, "s", transcript(12)), { covered: 9 });
  } finally {
    await env.close();
  }
});

Deno.test("coverage: a shorter transcript arriving after a longer one is covered (out-of-order POSTs)", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const t = newTenant();
    await post(env, t, "s", transcript(3));
    assert.deepEqual(await post(env, t, "s", transcript(8)), { covered: 3 });
    assert.deepEqual(await post(env, t, "s", transcript(6)), { coveredBy: 1 });
    assert.deepEqual(await post(env, t, "s", transcript(9)), { covered: 8 });
    assert.equal((await extractJobs(env, t)).length, 3);
  } finally {
    await env.close();
  }
});

Deno.test("coverage: another session's jobs never cover, even with the same messages; ':' in ids included", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const t = newTenant();
    await post(env, t, "session-a", transcript(5));
    assert.deepEqual(await post(env, t, "session-b", transcript(8)), { covered: 0 });
    assert.deepEqual(await post(env, t, "session-a", transcript(8)), { covered: 5 });
    // 'session:a:4:1:<digest>' starts with the key prefix of 'a', of 'a:4' and of 'a:4:1' alike.
    for (const [owner, other] of [["a", "a:4"], ["a:4", "a"], ["a:4", "a:4:1"], ["a:4:1", "a"]] as const) {
      const tenant = newTenant();
      await post(env, tenant, owner, transcript(4));
      await post(env, tenant, owner, transcript(6));
      assert.deepEqual(await post(env, tenant, other, transcript(8)), { covered: 0 }, `${owner} covering ${other}`);
      assert.deepEqual(await post(env, tenant, owner, transcript(8)), { covered: 6 }, `${owner} covers its own`);
    }
  } finally {
    await env.close();
  }
});

Deno.test("coverage: an edited history is covered up to the first changed message only", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const t = newTenant();
    await post(env, t, "s", transcript(4));
    await post(env, t, "s", transcript(7));
    const edited = (at: number, n = 8) => transcript(n).map((m, i) => (i === at ? msg(i, "changed") : m));
    // Inside the second job's part: the first job and the unchanged start of the second cover.
    assert.deepEqual(await post(env, t, "s", edited(5)), { covered: 5 });
    // Inside the first job's part: only up to the change.
    assert.deepEqual(await post(env, t, "s", edited(1)), { covered: 1 });
    // The very first message changed: nothing is covered, the whole transcript is new.
    assert.deepEqual(await post(env, t, "s", edited(0)), { covered: 0 });
    // A message inserted before the end of the first job shifts everything after it.
    const inserted = [...transcript(2), msg(99, "inserted"), ...transcript(7).slice(2)];
    assert.deepEqual(await post(env, t, "s", inserted), { covered: 2 });
  } finally {
    await env.close();
  }
});

Deno.test("coverage: it must be contiguous from message 0 (a dead earlier job leaves a gap, queued again apart)", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const t = newTenant();
    await post(env, t, "s", transcript(4));
    await post(env, t, "s", transcript(7));
    const [first] = await extractJobs(env, t);
    await env.sql`update public.memory_jobs set status = 'dead' where id = ${first!.id}`;
    // The dead part's messages [0, 4) again, in a job of their own; the live part [4, 7) still
    // covers its messages; the new ones [7, 9) in another job.
    assert.deepEqual(await post(env, t, "s", transcript(9)), { covered: 7, again: [0, 4, 2] });
    // The same transcript again: covered (the job of [7, 9) answers), nothing queued.
    const { coveredBy } = await post(env, t, "s", transcript(9)) as { coveredBy: number };
    assert.equal((await extractJobs(env, t))[coveredBy]!.payload.offset, 7);
  } finally {
    await env.close();
  }
});

Deno.test("coverage: with `after`, a dead part is queued again from its first message nothing live covers, apart from the new ones", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const t = newTenant();
    await post(env, t, "s", transcript(4)); // [0, 4)
    const eight = await postExtract(env, t, { session_id: "s", messages: transcript(8) }); // [4, 8)
    const [, second] = await extractJobs(env, t);
    await env.sql`update public.memory_jobs set status = 'dead' where id = ${second!.id}`;
    // A whole transcript of 6 queues [4, 6) again, a second try (the job it answers with): messages 4
    // and 5 are covered, 6 and 7 are not.
    assert.deepEqual(await post(env, t, "s", transcript(6)), { covered: 4, again: [4, 6, 2] });
    const res = await postExtract(env, t, {
      session_id: "s",
      after: eight.body.transcript,
      messages: transcript(1, 8),
    });
    // Messages 6 and 7, which only the dead part held, in a job of their own; message 8 in another.
    assert.deepEqual(
      [res.status, res.body.new_messages, res.body.retried?.[0]?.messages, res.body.retried?.[0]?.tries],
      [
        202,
        1,
        2,
        2,
      ],
    );
    const jobs = await extractJobs(env, t);
    const job = jobs.find((j) => j.id === res.body.job_id)!.payload;
    assert.deepEqual([job.offset, job.messages, job.context], [8, [msg(8)], transcript(6, 2)]);
    const again = jobs.find((j) => j.id === res.body.retried?.[0]?.job_id)!.payload;
    assert.deepEqual([again.offset, again.messages, again.context], [6, transcript(2, 6), transcript(6)]);
  } finally {
    await env.close();
  }
});
