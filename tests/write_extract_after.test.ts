// A long session can be extracted: memory-extract takes a multi-MiB transcript, and a client can
// send only what follows what the session already sent (`after`: the `transcript` {count, digest}
// of an earlier answer), so a growing session never resends everything. A digest the session does
// not know is a 409 telling the client to resend; every 413 says what to do.
import assert from "node:assert/strict";
import { digestWork, prefixDigests } from "../supabase/functions/memory-extract/transcript-prefix.ts";
import { tenantItem } from "../supabase/functions/_shared/db.ts";
import { memoryApi } from "./support/memory-api.ts";
import {
  chatMessage as msg,
  chatTranscript as transcript,
  type ExtractAnswer as Answer,
  extractJobs,
  postExtract as post,
} from "./support/extract.ts";
import { newTenant } from "./support/seed.ts";
import { writeEnv } from "./write_helpers.ts";

Deno.test("extract after: only the new messages are sent; the jobs are those a whole-transcript post makes", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const tenant = newTenant();
    const first = await post(env, tenant, { session_id: "s-after", messages: transcript(4) });
    assert.equal(first.status, 202);
    const a = first.body as Answer;
    assert.deepEqual(a.transcript, { count: 4, digest: (await prefixDigests(transcript(4)))[4] });

    const second = await post(env, tenant, { session_id: "s-after", after: a.transcript, messages: transcript(3, 4) });
    assert.equal(second.status, 202, JSON.stringify(second.body));
    const b = second.body as Answer;
    assert.deepEqual([b.deduplicated, b.new_messages], [false, 3]);
    assert.deepEqual(b.transcript, { count: 7, digest: (await prefixDigests(transcript(7)))[7] });
    const third = await post(env, tenant, { session_id: "s-after", after: b.transcript, messages: transcript(2, 7) });
    assert.deepEqual([(third.body as Answer).new_messages, (third.body as Answer).transcript.count], [2, 9]);

    const queued = await extractJobs(env, tenant);
    assert.deepEqual(queued.map((j) => [j.payload.offset, j.payload.messages.length]), [[0, 4], [4, 3], [7, 2]]);
    assert.deepEqual(
      queued[2]!.payload.context,
      transcript(7).slice(1),
      "the context comes from what the session sent before",
    );
    // The whole transcript posted now is what the jobs already cover: the same job, nothing new.
    const whole = await post(env, tenant, { session_id: "s-after", messages: transcript(9) });
    assert.deepEqual([(whole.body as Answer).deduplicated, (whole.body as Answer).job_id], [
      true,
      (third.body as Answer).job_id,
    ]);
    // And a re-sent increment is the same job too.
    const again = await post(env, tenant, { session_id: "s-after", after: a.transcript, messages: transcript(3, 4) });
    assert.deepEqual([(again.body as Answer).deduplicated, (again.body as Answer).new_messages], [true, 0]);
    assert.equal((await extractJobs(env, tenant)).length, 3);
  } finally {
    await env.close();
  }
});

Deno.test("extract after: a POST that continues the session digests only its own messages, however long the session", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const tenant = newTenant();
    const chunk = 20;
    let answer = (await post(env, tenant, { session_id: "s-long", messages: transcript(chunk) })).body as Answer;
    const work: number[] = [];
    for (let k = 1; k <= 8; k++) {
      const before = digestWork.messages;
      const res = await post(env, tenant, {
        session_id: "s-long",
        after: answer.transcript,
        messages: transcript(chunk, k * chunk),
      });
      work.push(digestWork.messages - before);
      answer = res.body as Answer;
      assert.deepEqual([res.status, answer.new_messages], [202, chunk], JSON.stringify(res.body));
    }
    assert.deepEqual(work, Array(8).fill(chunk), "each POST digests its 20 messages, not the session's");
    assert.deepEqual(answer.transcript, {
      count: 9 * chunk,
      digest: (await prefixDigests(transcript(9 * chunk)))[9 * chunk],
    });
    const queued = await extractJobs(env, tenant);
    assert.deepEqual(
      queued.at(-1)!.payload.context,
      transcript(6, 8 * chunk - 6),
      "the context is what came just before",
    );

    // A dead job's part is extracted again: its messages and those after it are read back from the
    // parts on the way to `after`, and its messages queued again apart from the new ones (the live
    // parts after it still cover theirs).
    await env.sql`update public.memory_jobs set status = 'dead' where id = ${
      (await env
        .sql`select id from public.memory_jobs where owner_id = ${tenant} and (payload ->> 'offset')::int = ${chunk}`)[
          0
        ]!.id
    }`;
    const next = (await post(env, tenant, {
      session_id: "s-long",
      after: answer.transcript,
      messages: transcript(chunk, 9 * chunk),
    })).body as Answer;
    assert.deepEqual([next.new_messages, next.retried?.[0]?.messages, next.retried?.[0]?.tries], [chunk, chunk, 2]);
    const again = (await extractJobs(env, tenant)).find((j) => j.id === next.retried?.[0]?.job_id)!.payload;
    assert.deepEqual([again.offset, again.messages], [chunk, transcript(chunk, chunk)], "the dead job's messages");
  } finally {
    await env.close();
  }
});

Deno.test("extract after: a digest the session never sent is a 409 that says to resend; nothing is queued", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const tenant = newTenant();
    const first = (await post(env, tenant, { session_id: "s-409", messages: transcript(4) })).body as Answer;
    const cases = [
      {
        session_id: "s-409",
        after: { count: 4, digest: (await prefixDigests([...transcript(3), msg(3, "edited")]))[4] },
      },
      { session_id: "s-409", after: { count: 5, digest: first.transcript.digest } },
      { session_id: "another-session", after: first.transcript },
      // Past the largest position a part records: no session sent it (it was a 400 naming Postgres' integer).
      { session_id: "s-409", after: { count: 2 ** 31, digest: first.transcript.digest } },
      { session_id: "s-409", after: { count: Number.MAX_SAFE_INTEGER, digest: first.transcript.digest } },
    ];
    for (const c of cases) {
      const res = await post(env, tenant, { ...c, messages: transcript(2, 4) });
      assert.equal(res.status, 409, JSON.stringify(c));
      assert.equal(res.body.error?.code, "transcript_mismatch");
      assert.match(
        res.body.error?.message ?? "",
        /resend the whole transcript, from the first message, without `after`/,
      );
    }
    assert.equal(
      (await post(env, newTenant(), { session_id: "s-409", after: first.transcript, messages: transcript(1) })).status,
      409,
      "another tenant's digest",
    );
    assert.equal((await extractJobs(env, tenant)).length, 1);
    const bad = await post(env, tenant, {
      session_id: "s-409",
      after: { count: 4, digest: "xyz" },
      messages: transcript(1),
    });
    assert.equal(bad.status, 400);
  } finally {
    await env.close();
  }
});

Deno.test("extract: a 5 MiB session is accepted; over the limit, the 413 says to send only what follows", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const tenant = newTenant();
    const big = Array.from({ length: 1_300 }, (_, i) => msg(i, `${"tool output line ".repeat(240)}#${i}`));
    const bytes = JSON.stringify({ session_id: "s-big", messages: big }).length;
    assert.ok(bytes > 5 * 1024 * 1024, `${bytes} bytes`);
    const res = await post(env, tenant, { session_id: "s-big", messages: big });
    assert.equal(res.status, 202, JSON.stringify(res.body).slice(0, 300));
    assert.equal((res.body as Answer).new_messages, 1_300);

    const small = await post(env, tenant, { session_id: "s-big-2", messages: big.slice(0, 40) }, {
      maxExtractBodyBytes: 64 * 1024,
    });
    assert.equal(small.status, 413);
    assert.equal(small.body.error?.code, "payload_too_large");
    assert.match(
      small.body.error?.message ?? "",
      /at most 65536 bytes \(MAX_EXTRACT_BODY_BYTES\): send only the messages after .*`after` .*`transcript` \{count, digest\}/,
    );
    // Every other route's 413 says what to do too.
    const remember = await memoryApi(env.sql, { config: { maxBodyBytes: 1024 } })("POST", "/memory/remember", {
      as: tenant,
      body: { content: "x".repeat(2000) },
    });
    assert.equal(remember.status, 413);
    assert.match(remember.body.error.message, /1024 bytes \(MAX_BODY_BYTES\): send a smaller body/);
  } finally {
    await env.close();
  }
});

Deno.test("extract after: every point the session sent is known, through edits and dead jobs; the context is what preceded it", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const tenant = newTenant();
    const s = "s-points";
    const full = transcript(6);
    const edited = [...transcript(3), msg(3, "edited"), msg(4), msg(5)];
    const point = async (messages: unknown[], n: number) => ({ count: n, digest: (await prefixDigests(messages))[n]! });
    await post(env, tenant, { session_id: s, messages: full.slice(0, 4) }); // part [0, 4)
    await post(env, tenant, { session_id: s, messages: full }); // part [4, 6)
    const edit = (await post(env, tenant, { session_id: s, messages: edited })).body as Answer; // part [3, 6)
    assert.equal(edit.new_messages, 3);
    const lastJob = async () => (await extractJobs(env, tenant)).at(-1)!.payload;

    // The end of a part, on either branch: its tail is the context.
    let res = await post(env, tenant, { session_id: s, after: await point(full, 6), messages: [msg(6, "next")] });
    assert.deepEqual([res.status, (res.body as Answer).new_messages], [202, 1]);
    assert.deepEqual((await lastJob()).context, full);
    res = await post(env, tenant, { session_id: s, after: await point(edited, 6), messages: [msg(6, "on the edit")] });
    assert.deepEqual([res.status, (res.body as Answer).new_messages], [202, 1]);
    assert.deepEqual((await lastJob()).context, edited);
    // Inside a part (a shorter transcript's answer): the context comes from that part's messages.
    res = await post(env, tenant, { session_id: s, after: await point(full, 2), messages: [msg(2, "a branch")] });
    assert.deepEqual([res.status, (res.body as Answer).new_messages], [202, 1]);
    assert.deepEqual([(await lastJob()).offset, (await lastJob()).context], [2, full.slice(0, 2)]);

    // A dead part's points stay known (its messages were sent all the same), and what it held is
    // queued again from its first message, apart from the new messages.
    await env.sql`update public.memory_jobs set status = 'dead'
                   where owner_id = ${tenant} and (payload ->> 'offset')::int = 0`;
    res = await post(env, tenant, { session_id: s, after: await point(full, 6), messages: transcript(2, 6) });
    assert.deepEqual([res.status, (res.body as Answer).new_messages, (res.body as Answer).retried?.[0]?.messages], [
      202,
      2,
      4,
    ]);
    const jobs = await extractJobs(env, tenant);
    const again = jobs.find((j) => j.id === (res.body as Answer).retried?.[0]?.job_id)!.payload;
    assert.deepEqual([again.offset, again.messages], [0, transcript(4)]);
    const added = jobs.find((j) => j.id === (res.body as Answer).job_id)!.payload;
    assert.deepEqual([added.offset, added.messages], [6, transcript(2, 6)]);

    for (const after of [{ count: 7, digest: (await point(full, 6)).digest }, await point(transcript(6, 1), 6)]) {
      assert.equal((await post(env, tenant, { session_id: s, after, messages: [msg(9)] })).status, 409);
    }
  } finally {
    await env.close();
  }
});

Deno.test("extract after: a tenant cannot insert a job itself (REST); a job queued without memory-extract names no point and covers nothing; only memory-extract records parts", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const tenant = newTenant();
    const messages = transcript(3);
    const digests = await prefixDigests(messages);
    const payload = { session_id: "s-rest", messages, context: [], offset: 0 };
    // The service's tenant transaction (db.ts tenantItem), in another transaction than the one
    // that queued the job.
    const asTenant = async <T>(fn: (tx: typeof env.sql) => Promise<T>) =>
      await env.sql.begin(async (tx) => {
        await tx`select 1 from ${tenantItem(tx as never, tenant)}`;
        return await fn(tx as unknown as typeof env.sql);
      });
    const key = `session:s-rest:3:${digests[3]}`;
    await assert.rejects(
      asTenant((tx) =>
        tx`insert into public.memory_jobs (owner_id, kind, payload, idempotency_key)
             values (${tenant}, 'extract', ${tx.json(payload)}, ${key})`
      ),
      /permission denied for table memory_jobs/,
    );
    // The same job queued by some other path than memory-extract (here: the table owner).
    const [job] = await env.sql<
      { id: string }[]
    >`insert into public.memory_jobs (owner_id, kind, payload, idempotency_key)
      values (${tenant}, 'extract', ${env.sql.json(payload)}, ${key}) returning id`;
    // Its part cannot be recorded from another transaction, nor planted in the tables.
    await assert.rejects(
      asTenant((tx) =>
        tx`select public.record_extract_part(${job!.id}, 0, decode(${digests[0]!}, 'hex'),
             array[decode(${digests[1]!}, 'hex'), decode(${digests[2]!}, 'hex'), decode(${digests[3]!}, 'hex')], 6,
             pg_current_snapshot())`
      ),
      /not an extract job this transaction queued/,
    );
    await assert.rejects(
      asTenant((tx) =>
        tx`insert into public.memory_extract_marks (job_id, position, key)
             values (${job!.id}, 3, decode(${digests[3]!.slice(0, 32)}, 'hex'))`
      ),
      /permission denied/,
    );
    const after = await post(env, tenant, {
      session_id: "s-rest",
      after: { count: 3, digest: digests[3] },
      messages: [msg(3)],
    });
    assert.equal(after.status, 409);
    const whole = await post(env, tenant, { session_id: "s-rest", messages: transcript(4) });
    assert.deepEqual([whole.status, (whole.body as Answer).new_messages], [202, 4]);
  } finally {
    await env.close();
  }
});
