// A finished extract job's transcript is cleared job_keep_days after it finished (devai-job-prune,
// migration 20261128730000), its part and marks kept: a whole transcript the session already sent
// still queues nothing, and an `after` POST that needs a cleared job's messages (a point inside its
// part, or a dead job's messages to queue again) is a 409 telling the client to resend the whole
// transcript, which then queues what it must: a dead job's messages are never skipped.
// docs/extraction.md#where-coverage-is-kept.
import assert from "node:assert/strict";
import { prefixDigests } from "../supabase/functions/memory-extract/transcript-prefix.ts";
import {
  chatMessage as msg,
  chatTranscript as transcript,
  extractJobs,
  postExtract as post,
} from "./support/extract.ts";
import { newTenant } from "./support/seed.ts";
import { realServerOnly } from "./support/backend.ts";
import { waitUntil } from "./support/wait.ts";
import { type WriteEnv, writeEnv } from "./write_helpers.ts";

const point = async (messages: unknown[], n: number) => ({ count: n, digest: (await prefixDigests(messages))[n]! });

/**
 * The tenant's extract jobs finished 31 days ago (the dead ones as the worker kills them, the others
 * done with a result), then one run of the prune, as pg_cron calls it.
 */
async function finishLongAgoAndPrune(env: WriteEnv, tenant: string, dead: number[] = []) {
  await env.sql`
    update public.memory_jobs
       set status = case when (payload ->> 'offset')::int = any (${dead}::int[]) then 'dead' else 'done' end,
           result = '{"mode": "rules", "candidates": 0}', finished_at = now() - interval '31 days'
     where owner_id = ${tenant} and kind = 'extract' and status = 'queued'`;
  await env.sql`select memory_private.prune_finished_jobs()`;
}

/** The 409 that says the messages `after` needs are no longer stored: resend the whole transcript. */
function assertResendWhole(res: Awaited<ReturnType<typeof post>>) {
  assert.equal(res.status, 409, JSON.stringify(res.body));
  assert.equal(res.body.error?.code, "transcript_mismatch");
  assert.match(res.body.error!.message, /no longer stored.*resend the whole transcript/);
}

/** What the prune left of the tenant's extract jobs and their coverage. */
async function stored(env: WriteEnv, tenant: string) {
  return [
    ...await env.sql<
      { offset: number; keys: string[]; cleared: boolean; result: unknown; marks: number; end: number }[]
    >`
    select (j.payload ->> 'offset')::int as offset, array(select jsonb_object_keys(j.payload) order by 1) as keys,
           j.payload_cleared_at is not null as cleared, j.result, p.end_position as end,
           (select count(*)::int from public.memory_extract_marks m where m.job_id = j.id) as marks
      from public.memory_jobs j join public.memory_extract_parts p on p.job_id = j.id
     where j.owner_id = ${tenant} and j.kind = 'extract' order by j.created_at, j.id`,
  ];
}

Deno.test("extract, cleared payloads: a whole transcript the session sent queues nothing; its growth queues the new messages", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const tenant = newTenant();
    const s = "s-cleared-whole";
    const first = await post(env, tenant, { session_id: s, messages: transcript(4) });
    const second = await post(env, tenant, { session_id: s, messages: transcript(7) });
    await finishLongAgoAndPrune(env, tenant);
    const result = { mode: "rules", candidates: 0 };
    assert.deepEqual(await stored(env, tenant), [
      { offset: 0, keys: ["offset", "session_id"], cleared: true, result, marks: 4, end: 4 },
      { offset: 4, keys: ["offset", "session_id"], cleared: true, result, marks: 3, end: 7 },
    ], "the transcripts are cleared; the jobs, their results, parts and marks stay");

    for (const [n, job] of [[7, second], [4, first]] as const) {
      const again = await post(env, tenant, { session_id: s, messages: transcript(n) });
      assert.deepEqual(
        [again.status, again.body.deduplicated, again.body.new_messages, again.body.job_id],
        [202, true, 0, job.body.job_id],
        `the ${n} messages sent before are covered still`,
      );
    }
    // The end of a cleared part: its tail (kept with the part) is the context.
    const after = await post(env, tenant, {
      session_id: s,
      after: await point(transcript(7), 7),
      messages: transcript(2, 7),
    });
    assert.deepEqual([after.status, after.body.new_messages], [202, 2], JSON.stringify(after.body));
    const whole = await post(env, tenant, { session_id: s, messages: transcript(10) });
    assert.deepEqual([whole.status, whole.body.new_messages], [202, 1]);
    const queued = await extractJobs(env, tenant);
    assert.deepEqual(queued.slice(2).map((j) => [j.payload.offset, j.payload.messages, j.payload.context]), [
      [7, transcript(2, 7), transcript(6, 1)],
      [9, [msg(9)], transcript(6, 3)],
    ]);
  } finally {
    await env.close();
  }
});

Deno.test("extract, cleared payloads: `after` inside a cleared part is a 409 saying to resend the whole transcript", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const tenant = newTenant();
    const s = "s-cleared-inside";
    await post(env, tenant, { session_id: s, messages: transcript(6) });
    // A shorter transcript's answer: a point inside the part [0, 6).
    const shorter = await post(env, tenant, { session_id: s, messages: transcript(3) });
    assert.deepEqual([shorter.body.deduplicated, shorter.body.transcript], [true, await point(transcript(3), 3)]);
    await finishLongAgoAndPrune(env, tenant);

    const branch = [...transcript(3), msg(3, "a branch")];
    const res = await post(env, tenant, { session_id: s, after: shorter.body.transcript, messages: branch.slice(3) });
    assertResendWhole(res);
    assert.equal((await extractJobs(env, tenant)).length, 1, "nothing is queued");

    const whole = await post(env, tenant, { session_id: s, messages: branch });
    assert.deepEqual([whole.status, whole.body.new_messages], [202, 1], "the whole transcript queues the new message");
    assert.deepEqual((await extractJobs(env, tenant)).at(-1)!.payload.context, transcript(3));
  } finally {
    await env.close();
  }
});

Deno.test("extract, cleared payloads: a dead job's cleared messages are a 409 from `after`, never skipped; the whole transcript queues them", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const tenant = newTenant();
    const s = "s-cleared-dead";
    const first = await post(env, tenant, { session_id: s, messages: transcript(4) });
    const second = await post(env, tenant, { session_id: s, after: first.body.transcript, messages: transcript(3, 4) });
    assert.equal(second.body.new_messages, 3);
    // The first job dies after the second was queued: the second's history is no longer covered.
    await finishLongAgoAndPrune(env, tenant, [0]);
    assert.deepEqual((await stored(env, tenant)).map((j) => [j.offset, j.cleared]), [[0, true], [4, true]]);

    const res = await post(env, tenant, { session_id: s, after: second.body.transcript, messages: transcript(2, 7) });
    assertResendWhole(res);
    assert.equal((await extractJobs(env, tenant)).length, 2, "nothing is queued");

    const whole = await post(env, tenant, { session_id: s, messages: transcript(9) });
    assert.deepEqual([whole.status, whole.body.new_messages, whole.body.retried?.[0]?.messages], [202, 2, 4]);
    // The dead job's messages from its first one, in a job of their own; the new ones in another.
    const jobs = await extractJobs(env, tenant);
    const requeued = jobs.find((j) => j.id === whole.body.retried?.[0]?.job_id)!.payload;
    assert.deepEqual([requeued.offset, requeued.messages], [0, transcript(4)]);
    const added = jobs.find((j) => j.id === whole.body.job_id)!.payload;
    assert.deepEqual([added.offset, added.messages], [7, transcript(2, 7)]);
    // And `after` continues from there: the new part's history is covered.
    const next = await post(env, tenant, { session_id: s, after: whole.body.transcript, messages: [msg(9)] });
    assert.deepEqual([next.status, next.body.new_messages], [202, 1]);
  } finally {
    await env.close();
  }
});

Deno.test(
  realServerOnly(
    "extract, deleted job: `after` inside its part, deleted while the POST reads it, is the same 409 (it was a 500)",
    "two transactions open at once (PGlite's one backend queues the deleting one behind the POST's)",
  ),
  async () => {
    const env = await writeEnv({ withLlm: false });
    const holder = await env.sql.reserve();
    try {
      const tenant = newTenant();
      const sent = transcript(10);
      const first = await post(env, tenant, { session_id: "s-deleted", messages: sent });
      // The POST finds the part (marks and parts) and waits to read its job's payload; meanwhile an
      // operator deletes the job, which takes the part with it.
      await holder`begin`;
      await holder`lock table public.memory_jobs in access exclusive mode`;
      const posting = post(env, tenant, {
        session_id: "s-deleted",
        after: await point(sent, 5),
        messages: [msg(5, "other")],
      });
      await waitUntil(
        async () =>
          (await env.sql`
            select 1 from pg_locks l join pg_class c on c.oid = l.relation
             where c.relname = 'memory_jobs' and not l.granted`).length > 0,
        "the POST to wait for the job's payload",
        { pollMs: 20 },
      );
      await holder`delete from public.memory_jobs where id = ${first.body.job_id}`;
      await holder`commit`;
      assertResendWhole(await posting);
      assert.equal((await extractJobs(env, tenant)).length, 0, "nothing queued");
    } finally {
      holder.release();
      await env.close();
    }
  },
);
