// What a memory-extract POST does grows with the POST, not with what the session stored
// (docs/extraction.md#what-a-post-reads). Shown by counting the work, not timing it: the messages
// digested (digestWork) and the stored state asked for (storedReads: index lookups, stored
// messages read), for sessions that differ only in how much they stored before.
import assert from "node:assert/strict";
import {
  coveredFrom,
  messagesBefore,
  partThrough,
  storedReads,
} from "../supabase/functions/memory-extract/session-parts.ts";
import { digestWork, prefixDigests } from "../supabase/functions/memory-extract/transcript-prefix.ts";
import { MAX_PATH_PARTS } from "../supabase/functions/memory-extract/next-part.ts";
import { MAX_MESSAGES_PER_REQUEST } from "../supabase/functions/_shared/llm.ts";
import { realServerOnly } from "./support/backend.ts";
import { newTenant } from "./support/seed.ts";
import {
  chatMessage as msg,
  chatTranscript as transcript,
  type ExtractAnswer,
  extractJobs,
  postExtract,
} from "./support/extract.ts";
import { type WriteEnv, writeEnv } from "./write_helpers.ts";

/** The work one call does: messages digested, lookups and stored messages read. */
async function workOf<T>(fn: () => Promise<T>): Promise<{ result: T; digests: number; lookups: number; read: number }> {
  const before = { digests: digestWork.messages, lookups: storedReads.lookups, read: storedReads.messages };
  const result = await fn();
  return {
    result,
    digests: digestWork.messages - before.digests,
    lookups: storedReads.lookups - before.lookups,
    read: storedReads.messages - before.read,
  };
}

/** A POST as service_role for the tenant (no rate limit: these sessions are many POSTs long), answered 202. */
async function accepted(env: WriteEnv, tenant: string, body: Record<string, unknown>, config = {}) {
  const res = await postExtract(env, tenant, body, config, "service");
  assert.equal(res.status, 202, JSON.stringify(res.body).slice(0, 300));
  return res.body;
}

Deno.test("extract after: naming a point many jobs share costs the POST's own messages, not K² × L (attack 32 A)", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const L = 30;
    const work = [];
    for (const K of [2, 12]) {
      // K one-message jobs that differ at message 1 (all at offset 1), each continued by L messages.
      const tenant = newTenant();
      const s = "s-shared-offset";
      const p = { role: "user", content: "p" };
      const e = (i: number) => ({ role: "assistant", content: `e${i}` });
      const points: ExtractAnswer["transcript"][] = [];
      for (let i = 0; i < K; i++) {
        points.push((await accepted(env, tenant, { session_id: s, messages: [p, e(i)] })).transcript);
      }
      for (let i = 0; i < K; i++) {
        await accepted(env, tenant, { session_id: s, messages: [p, e(i), ...transcript(L, 100 * i)] });
      }
      const tiny = await workOf(() =>
        accepted(env, tenant, { session_id: s, after: points[K - 1], messages: [msg(0, "tiny")] })
      );
      assert.equal(tiny.result.new_messages, 1);
      const job = (await extractJobs(env, tenant)).at(-1)!.payload;
      assert.deepEqual([job.offset, job.context], [2, [p, e(K - 1)]], "the context is what `after` names");
      work.push({ K, digests: tiny.digests, lookups: tiny.lookups, read: tiny.read });
    }
    // The old rebuild chained each continuation from every start at its offset: K × K × L digests.
    assert.deepEqual(work.map((w) => w.digests), [1, 1], JSON.stringify(work));
    assert.equal(work[0]!.lookups, work[1]!.lookups, JSON.stringify(work));
    assert.equal(work[0]!.read, work[1]!.read, JSON.stringify(work));
    // The part `after` lies in, with the tail before it, and the one new message's mark.
    assert.ok(work[1]!.lookups <= 2 && work[1]!.read <= 2, JSON.stringify(work));
  } finally {
    await env.close();
  }
});

Deno.test("extract: a small POST to a session that stored a lot reads and digests its own message only (attack 32 B)", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const N = 300;
    const work = [];
    const big = [];
    for (const K of [1, 6]) {
      const tenant = newTenant();
      // K whole transcripts of N messages, each different from message 0 on: K × N messages stored.
      for (let k = 0; k < K; k++) {
        const post = await workOf(() =>
          accepted(env, tenant, { session_id: "s-amp", messages: [msg(0, `variant ${k}`), ...transcript(N - 1, 1)] })
        );
        assert.equal(post.result.new_messages, N);
        big.push(post);
      }
      const tiny = await workOf(() => accepted(env, tenant, { session_id: "s-amp", messages: [msg(0, "tiny")] }));
      assert.equal(tiny.result.new_messages, 1);
      work.push({ K, digests: tiny.digests, lookups: tiny.lookups, read: tiny.read });
      // The same transcript again: nothing new, answered with the job covering its end, which the
      // last message's lookup found (the end is not looked up again).
      const again = await workOf(() =>
        accepted(env, tenant, { session_id: "s-amp", messages: [msg(0, `variant ${K - 1}`), ...transcript(N - 1, 1)] })
      );
      assert.deepEqual([again.result.deduplicated, again.result.new_messages], [true, 0]);
      assert.deepEqual([again.lookups, again.read], [N, 0]);
    }
    // The old POST loaded every job of the session and digested its messages again: 1 + K × N.
    assert.deepEqual(work.map((w) => w.digests), [1, 1], JSON.stringify(work));
    assert.deepEqual(work.map((w) => [w.lookups, w.read]), [[1, 0], [1, 0]], JSON.stringify(work));
    // A whole transcript's work is its own size, however many came before: one digest and one lookup a message.
    assert.deepEqual(big.map((b) => b.digests), Array(7).fill(N));
    assert.deepEqual(big.map((b) => [b.lookups, b.read]), Array(7).fill([N, 0]));
  } finally {
    await env.close();
  }
});

/** A POST as service_role for the tenant, whatever its status. */
async function posted(env: WriteEnv, tenant: string, body: Record<string, unknown>, config = {}) {
  return await postExtract(env, tenant, body, config, "service");
}

Deno.test("extract after: behind a dead job, the walk back stops after MAX_PATH_PARTS parts; past it the POST says so (409) and queues nothing", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    for (const parts of [5, MAX_PATH_PARTS + 8]) {
      const tenant = newTenant();
      let answer = await accepted(env, tenant, { session_id: "s-walk", messages: transcript(2) });
      for (let i = 0; i < parts; i++) {
        answer = await accepted(env, tenant, {
          session_id: "s-walk",
          after: answer.transcript,
          messages: transcript(1, 2 + i),
        });
      }
      const [first] = await extractJobs(env, tenant);
      await env.sql`update public.memory_jobs set status = 'dead' where id = ${first!.id}`;
      const body = { session_id: "s-walk", after: answer.transcript, messages: transcript(1, 2 + parts) };
      const next = await workOf(() => posted(env, tenant, body));
      if (parts < MAX_PATH_PARTS) {
        // Walked back to the dead job: its messages queued again (apart from the new one).
        assert.deepEqual([next.result.body.new_messages, next.result.body.retried?.[0]?.messages], [1, 2]);
        const again = (await extractJobs(env, tenant)).find((j) => j.id === next.result.body.retried?.[0]?.job_id);
        assert.deepEqual(again!.payload.messages, transcript(2));
      } else {
        // The walk gave up: the dead job's messages are not skipped, the client is told to resend
        // the whole transcript; the work stays bounded and nothing is queued.
        assert.deepEqual([next.result.status, next.result.body.error?.code], [409, "transcript_mismatch"]);
        assert.match(next.result.body.error!.message, /died.*resend the whole transcript/);
        assert.ok(next.lookups <= MAX_PATH_PARTS + 2, `${next.lookups} lookups`);
        assert.deepEqual([next.digests, next.read], [0, 0]);
        assert.equal((await extractJobs(env, tenant)).length, parts + 1);
        // The whole transcript queues the dead job's messages again; `after` works again from there.
        const whole = await accepted(env, tenant, { session_id: "s-walk", messages: transcript(parts + 3) });
        assert.deepEqual([whole.new_messages, whole.retried?.[0]?.messages], [1, 2]);
        const more = await workOf(() =>
          accepted(env, tenant, { session_id: "s-walk", after: whole.transcript, messages: transcript(1, parts + 3) })
        );
        assert.deepEqual([more.result.new_messages, more.lookups], [1, 2], "one part walked back, one mark");
      }
    }
  } finally {
    await env.close();
  }
});

Deno.test("extract after: a death re-queued does not count any more; 40 parts later a new death is queued again (attack 32 re-run, 1)", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const tenant = newTenant();
    const kill = async (id: string) => await env.sql`update public.memory_jobs set status = 'dead' where id = ${id}`;
    let answer = await accepted(env, tenant, { session_id: "s-poison", messages: transcript(2) });
    await kill(answer.job_id); // an early death, queued again by the next POST
    answer = await accepted(env, tenant, { session_id: "s-poison", after: answer.transcript, messages: [msg(2)] });
    assert.deepEqual([answer.new_messages, answer.retried?.[0]?.messages], [1, 2]);
    let n = 3;
    for (let k = 0; k < MAX_PATH_PARTS + 8; k++) {
      answer = await accepted(env, tenant, { session_id: "s-poison", after: answer.transcript, messages: [msg(n++)] });
    }
    await kill(answer.job_id); // the last part [n - 1, n) dies
    const next = await workOf(() =>
      accepted(env, tenant, { session_id: "s-poison", after: answer.transcript, messages: [msg(n)] })
    );
    // Its message is queued again, apart from the new one; the walk stopped at the part before it.
    assert.deepEqual([next.result.new_messages, next.result.retried?.[0]?.messages], [1, 1]);
    const jobs = await extractJobs(env, tenant);
    assert.deepEqual(jobs.find((j) => j.id === next.result.retried?.[0]?.job_id)!.payload.messages, [msg(n - 1)]);
    assert.deepEqual(jobs.find((j) => j.id === next.result.job_id)!.payload.messages, [msg(n)]);
    assert.ok(next.lookups <= 8, `${next.lookups} lookups`);
  } finally {
    await env.close();
  }
});

Deno.test("extract after: a dead part is read back only within MAX_EXTRACT_BODY_BYTES of payloads (else 409); keys jsonb reorders still verify", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    // A tool message whose keys jsonb stores in another order (by length): the rebuilt part must
    // digest as it was sent.
    const tool = { tool_call_id: "call_1", role: "tool", content: `${"a tool's output ".repeat(100)}` };
    const start = [msg(0), {
      role: "assistant",
      content: null,
      tool_calls: [{ id: "call_1", type: "function", function: { name: "bash", arguments: "{}" } }],
    }, tool];
    for (const maxExtractBodyBytes of [1_000_000, 1_500]) {
      const tenant = newTenant();
      const first = await accepted(env, tenant, { session_id: "s-bytes", messages: start });
      const second = await accepted(env, tenant, {
        session_id: "s-bytes",
        after: first.transcript,
        messages: transcript(2, 3),
      });
      const [dead] = await extractJobs(env, tenant);
      await env.sql`update public.memory_jobs set status = 'dead' where id = ${dead!.id}`;
      const next = await workOf(() =>
        posted(env, tenant, { session_id: "s-bytes", after: second.transcript, messages: transcript(1, 5) }, {
          maxExtractBodyBytes,
        })
      );
      if (maxExtractBodyBytes > 1_500) {
        const again = (await extractJobs(env, tenant)).find((j) =>
          j.id === next.result.body.retried?.[0]?.job_id
        )!.payload;
        assert.deepEqual([next.result.body.new_messages, again.offset, again.messages], [1, 0, start]);
        assert.equal(next.digests, 6, "the rebuilt part is digested again, to check it leads to `after`");
      } else {
        assert.deepEqual([next.result.status, next.result.body.error?.code, next.digests], [
          409,
          "transcript_mismatch",
          1,
        ]);
        assert.equal((await extractJobs(env, tenant)).length, 2, "nothing queued");
      }
    }
  } finally {
    await env.close();
  }
});

Deno.test("extract after: a dead part is read back only within MAX_MESSAGES_PER_REQUEST messages up to `after` (else 409, nothing queued)", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    // Bodies of 20,000 messages, and payloads far within the byte bound: only the message count binds.
    const roomy = { maxExtractBodyBytes: 50_000_000 };
    for (const then of [MAX_MESSAGES_PER_REQUEST - 2, MAX_MESSAGES_PER_REQUEST - 1]) {
      const tenant = newTenant();
      const first = await accepted(env, tenant, { session_id: "s-many", messages: transcript(2) }, roomy);
      const second = await accepted(env, tenant, {
        session_id: "s-many",
        after: first.transcript,
        messages: transcript(then, 2),
      }, roomy);
      await env.sql`update public.memory_jobs set status = 'dead' where id = ${first.job_id}`;
      // The dead part starts at 0: 2 + then messages lie between it and `after`.
      const body = { session_id: "s-many", after: second.transcript, messages: transcript(1, 2 + then) };
      const next = await posted(env, tenant, body, roomy);
      if (2 + then <= MAX_MESSAGES_PER_REQUEST) {
        assert.deepEqual(
          [next.status, next.body.new_messages, next.body.retried?.[0]?.messages],
          [202, 1, 2],
          "read back",
        );
      } else {
        assert.deepEqual([next.status, next.body.error?.code], [409, "transcript_mismatch"]);
        assert.match(next.body.error!.message, /died.*resend the whole transcript/);
        assert.equal((await extractJobs(env, tenant)).length, 2, "nothing queued");
      }
    }
  } finally {
    await env.close();
  }
});

Deno.test({
  ...realServerOnly(
    "extract: the database reads a bounded number of rows per digest looked up, however many marks the session holds",
    "PGlite's planner reads whole small tables in a fresh database's first run, whatever the settings",
  ),
}, async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const N = 300;
    const rows = [];
    for (const K of [1, 6]) {
      const tenant = newTenant();
      const variant = (k: number) => [msg(0, `variant ${k}`), ...transcript(N - 1, 1)];
      for (let k = 0; k < K; k++) await accepted(env, tenant, { session_id: "s-rows", messages: variant(k) });
      const last = await prefixDigests(variant(K - 1));
      // What the lookups read, counted by Postgres itself: the rows and index entries of the extract
      // tables and the jobs this transaction's statements fetched (pg_stat_get_xact_*, local to it).
      // Statistics as autovacuum would have them: a table never analyzed is planned blind.
      await env.sql`analyze public.memory_extract_marks, public.memory_extract_parts, public.memory_jobs`;
      rows.push(
        await env.sql.begin(async (tx) => {
          await tx`select set_config('request.jwt.claims', ${
            JSON.stringify({ sub: tenant, role: "authenticated" })
          }, true)`;
          // The plan a big table gets: index lookups joined by nested loops. On small tables the
          // planner may read a whole table instead (in each mark's row level security check, all
          // the parts), and then this count measures the table, not the lookups: depending on
          // what autovacuum had analyzed, 52, 606 or 826 rows, one fresh-clone CI run in a few.
          await tx`select set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true),
                          set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true)`;
          await tx`set local role authenticated`;
          const read = async () =>
            Number(
              (await tx<{ n: string }[]>`
                select sum(pg_stat_get_xact_tuples_returned(c.oid) + pg_stat_get_xact_tuples_fetched(c.oid))::text as n
                  from pg_class c where c.relname like 'memory_extract_%' or c.relname like 'memory_jobs%'`)[0]!.n,
            );
          const before = await read();
          const t = tx as unknown as Parameters<typeof coveredFrom>[0];
          const tiny = (await prefixDigests([msg(0, "tiny")])).slice(1);
          assert.equal((await coveredFrom(t, tenant, "s-rows", 0, tiny)).through, 0);
          const ten = await coveredFrom(t, tenant, "s-rows", 0, last.slice(1, 11));
          assert.deepEqual([ten.through, ten.job?.status], [10, "queued"]);
          const end = { count: N, digest: last[N]! };
          const part = await partThrough(t, tenant, "s-rows", end, true);
          assert.equal(part?.end, N);
          assert.deepEqual(await messagesBefore(t, part!, end, 6), variant(K - 1).slice(-6));
          return { K, rows: (await read()) - before };
        }),
      );
    }
    // Each lookup: an index entry and its row, for the mark and for its part (and job): 12 lookups,
    // at most 7 rows each, whether the session holds 300 marks or 1,800 (a read of the marks or the
    // parts would be hundreds). Not equal to the row: index entries of rows other runs left count.
    for (const r of rows) assert.ok(r.rows <= 7 * 12, JSON.stringify(rows));
  } finally {
    await env.close();
  }
});
