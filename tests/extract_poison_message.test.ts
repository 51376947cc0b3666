// A message that always kills its extract job (a provider that always refuses it) must not stop
// the session's extraction: a dead job's messages are queued again apart from the new ones, so
// the new ones are extracted; after the third job holding them dies they are given up, counted
// as covered, and never sent to the model again; a death that was transient is extracted on the
// next POST. docs/extraction.md#a-message-that-always-kills-its-job. Real Postgres, the fake
// model at the HTTP boundary, the queue drained by the worker's own code.
import assert from "node:assert/strict";
import { type ChatRequestBody, reply } from "./fake_openai.ts";
import { type ExtractAnswer, extractJobs, factAnswer, newPart, postExtract, serviceFact } from "./support/extract.ts";
import { userHeaders } from "./support/auth.ts";
import { newTenant } from "./support/seed.ts";
import { createHandler } from "../supabase/functions/memory-extract/handler.ts";
import { drainAll, memoriesOf, type WriteEnv, writeEnv } from "./write_helpers.ts";

const EXTRACT_MARK = "What from this conversation would help you do a better job next time?";
const POISON = "POISON: a message the model provider always refuses.";

/** Message i of the session: message 1 is the poison; even ones state a fact, odd ones acknowledge. */
const message = (i: number) =>
  i === 1
    ? { role: "user", content: POISON }
    : i % 2 === 0
    ? { role: "user", content: `Fact ${i}: service ${i} listens on port ${8000 + i}.` }
    : { role: "assistant", content: "Noted." };
const messages = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => message(from + k));
const fact = serviceFact;
/** Messages 0..n of a session with no poison (message 1 acknowledges, as the other odd ones). */
const clean = (n: number) => messages(0, n).map((m, i) => i === 1 ? { role: "assistant", content: "Noted." } : m);

const poisoned = (req: ChatRequestBody) => newPart(req).includes("POISON");

/**
 * The fake model: a memory for each fact in the new part; after `failures`, the poison too. It
 * fails a request with the poison in its new part or, `anywhere`, in its context too (as a
 * provider refusing the content does), with `failure`: a 500 by default, which the service cannot
 * tell from an outage's, or `refuse`, a 400.
 */
function scriptModel(env: WriteEnv, failures: number | "always", anywhere = false, failure = fail) {
  const refused = anywhere ? (req: ChatRequestBody) => JSON.stringify(req.messages).includes("POISON") : poisoned;
  env.fake.onChat(refused, failures === "always" ? failure : [...Array(failures).fill(failure), extract]);
  env.fake.onChat(EXTRACT_MARK, extract);
}

/** The model's answer: a memory for each fact in the new part. */
const extract = reply.dynamic((req) => reply.json(factAnswer(newPart(req))));
const fail = reply.error(500, { message: "the provider refuses this content" });
/** A provider's refusal of a request for what it holds (OpenAI's content policy is a 400). */
const refuse = reply.error(400, { message: "the request was rejected by the content policy" });

/** Whether an extraction request shows earlier messages as context (extraction-prompt.ts). */
const withContext = (req: ChatRequestBody) => JSON.stringify(req.messages).includes("EARLIER IN THIS CONVERSATION");

/** Model calls asked to extract from the poison. */
const poisonCalls = (env: WriteEnv) => env.fake.chatRequests().filter((r) => poisoned(r.body)).length;

async function accepted(env: WriteEnv, tenant: string, body: Record<string, unknown>): Promise<ExtractAnswer> {
  const res = await postExtract(env, tenant, { session_id: "s-poison", project: "shop", ...body });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  return res.body;
}

/** GET memory-extract?job_id=: the job's status with its part. */
async function status(env: WriteEnv, tenant: string, jobId: string) {
  const handler = createHandler({ ...env.deps, kickWorker: () => Promise.resolve() });
  const res = await handler(
    new Request(`http://localhost/functions/v1/memory-extract?job_id=${jobId}`, { headers: await userHeaders(tenant) }),
  );
  assert.equal(res.status, 200);
  return await res.json();
}

const factsOf = async (env: WriteEnv, tenant: string) =>
  (await memoriesOf(env.sql, tenant)).map((m) => m.content).sort();

/**
 * The session grows by two messages a POST after its first job died on the poison, sent as `send`
 * says (whole transcripts, or `after`): each POST's new messages are extracted, the poison's part
 * is tried by three jobs in all (five attempts each) and then given up.
 */
async function poisonedSession(send: "whole" | "after") {
  const env = await writeEnv({ llm: { retry: { maxRetries: 0 } } });
  try {
    const tenant = newTenant();
    scriptModel(env, "always");
    let answer = await accepted(env, tenant, { messages: messages(0, 3) });
    assert.equal((await drainAll(env.deps, tenant)).dead, 1, "the first job dies on the poison");
    const post = (to: number) =>
      accepted(
        env,
        tenant,
        send === "whole" ? { messages: messages(0, to) } : { after: answer.transcript, messages: messages(to - 2, to) },
      );

    const tries = [];
    for (const to of [5, 7, 9]) {
      answer = await post(to);
      await drainAll(env.deps, tenant);
      // The new messages are extracted, whatever became of the poison's part.
      assert.ok((await factsOf(env, tenant)).includes(fact(to - 1)), `fact ${to - 1} extracted`);
      tries.push(
        answer.retried && [answer.retried[0]!.tries, answer.retried[0]!.messages, answer.retried[0]!.max_tries],
      );
      assert.equal(answer.new_messages, 2, "the new messages have a job of their own");
      if (to === 7) {
        // The third job of the poison's part died: given up, as its status says.
        const last = await status(env, tenant, answer.retried![0]!.job_id);
        assert.equal(last.status, "dead");
        assert.deepEqual(last.part, { start: 0, end: 3, tries: 3, given_up: true });
      }
    }
    // Tried by the first job and two more, then given up: the third POST queues only its new messages.
    assert.deepEqual(tries, [[2, 3, 3], [3, 3, 3], undefined]);
    assert.equal(poisonCalls(env), 3 * 5, "three jobs of five attempts each asked the model about the poison");
    assert.deepEqual(await factsOf(env, tenant), [fact(4), fact(6), fact(8)]);

    // The session goes on normally: the given-up messages count as covered, and are not asked again.
    const calls = poisonCalls(env);
    const more = await accepted(
      env,
      tenant,
      send === "whole" ? { messages: messages(0, 11) } : { after: answer.transcript, messages: messages(9, 11) },
    );
    assert.deepEqual([more.new_messages, more.retried], [2, undefined]);
    const whole = await accepted(env, tenant, { messages: messages(0, 11) });
    assert.deepEqual([whole.job_id, whole.deduplicated, whole.retried], [more.job_id, true, undefined]);
    await drainAll(env.deps, tenant);
    assert.equal(poisonCalls(env), calls, "no more model calls on the poison");
    assert.deepEqual(await factsOf(env, tenant), [fact(10), fact(4), fact(6), fact(8)]);
  } finally {
    await env.close();
  }
}

Deno.test("extract, a poison message: whole transcripts after its job died get their new messages extracted; the poison is given up after 3 jobs", async () => {
  await poisonedSession("whole");
});

Deno.test("extract, a poison message: `after` POSTs after its job died get their new messages extracted; the poison is given up after 3 jobs", async () => {
  await poisonedSession("after");
});

Deno.test("extract, a transient death: the dead job's messages are queued again apart and extracted; nothing is lost", async () => {
  const env = await writeEnv({ llm: { retry: { maxRetries: 0 } } });
  try {
    const tenant = newTenant();
    scriptModel(env, 5); // the first job's five attempts fail, then the provider recovers
    const first = await accepted(env, tenant, { messages: messages(0, 3) });
    assert.equal((await drainAll(env.deps, tenant)).dead, 1);
    const next = await accepted(env, tenant, { after: first.transcript, messages: messages(3, 5) });
    const report = await drainAll(env.deps, tenant);
    assert.equal(report.dead, 0, JSON.stringify(report));
    assert.deepEqual(await factsOf(env, tenant), [fact(0), fact(2), fact(4)], "the dead job's facts too");
    // In a job of their own, its second try.
    assert.deepEqual([next.new_messages, next.retried?.[0]?.messages, next.retried?.[0]?.tries], [2, 3, 2]);
    const again = await status(env, tenant, next.retried![0]!.job_id);
    assert.deepEqual([again.status, again.part], ["done", { start: 0, end: 3, tries: 2, given_up: false }]);
  } finally {
    await env.close();
  }
});

Deno.test("extract, a poison message and an outage: new messages whose job died apart from the poison's are queued again apart from it, and extracted", async () => {
  const env = await writeEnv({ llm: { retry: { maxRetries: 0 } } });
  try {
    const tenant = newTenant();
    scriptModel(env, "always");
    await accepted(env, tenant, { messages: messages(0, 3) });
    assert.equal((await drainAll(env.deps, tenant)).dead, 1, "the first job dies on the poison");
    const five = await accepted(env, tenant, { messages: messages(0, 5) });
    // An outage kills the job of the new messages [3, 5) (its five attempts failed), and the
    // poison's second job dies as before.
    await env.sql`update public.memory_jobs set status = 'dead' where id = ${five.job_id}`;
    assert.equal((await drainAll(env.deps, tenant)).dead, 1);

    // Each dead job's messages in a job of their own: [3, 5) is not tied to the poison's fate.
    const seven = await accepted(env, tenant, { messages: messages(0, 7) });
    await drainAll(env.deps, tenant);
    assert.deepEqual(await factsOf(env, tenant), [fact(4), fact(6)], "fact 4, which only the outage's job held");
    assert.deepEqual(seven.retried?.map((r) => [r.messages, r.tries]), [[3, 3], [2, 2]]);
    const parts = await Promise.all(seven.retried!.map(async (r) => (await status(env, tenant, r.job_id)).part));
    assert.deepEqual(parts, [{ start: 0, end: 3, tries: 3, given_up: true }, {
      start: 3,
      end: 5,
      tries: 2,
      given_up: false,
    }]);
  } finally {
    await env.close();
  }
});

Deno.test("extract, dead parts separated by a live one: each is queued again apart, the live part's messages are not extracted again", async () => {
  const env = await writeEnv({ llm: { retry: { maxRetries: 0 } } });
  try {
    const tenant = newTenant();
    scriptModel(env, "always");
    // Three jobs queued before any ran: [0, 3) (the poison), [3, 5) and [5, 7).
    const jobs = [];
    for (const to of [3, 5, 7]) jobs.push(await accepted(env, tenant, { messages: messages(0, to) }));
    // The first dies on the poison, the second runs, an outage kills the third.
    await env.sql`update public.memory_jobs set status = 'dead' where id = ${jobs[2]!.job_id}`;
    await drainAll(env.deps, tenant);
    assert.deepEqual(await factsOf(env, tenant), [fact(4)]);

    const nine = await accepted(env, tenant, { messages: messages(0, 9) });
    const report = await drainAll(env.deps, tenant);
    // Fact 6, which the outage's job held, is extracted; fact 4 once, by its live job: [3, 5) is
    // not queued again.
    assert.deepEqual(await factsOf(env, tenant), [fact(4), fact(6), fact(8)]);
    const asked = env.fake.chatRequests().filter((r) => newPart(r.body).includes("Fact 4:")).length;
    assert.equal(asked, 1, "the model was asked about fact 4 once");
    assert.equal(report.dead, 1, "only the poison's job dies");
    assert.deepEqual(nine.retried?.map((r) => [r.messages, r.tries]), [[3, 2], [2, 2]]);
    assert.equal(nine.new_messages, 2);
  } finally {
    await env.close();
  }
});

/**
 * The session grows by two messages a POST to 17 (whole transcripts, or `after` the last answer),
 * each POST's jobs run before the next: the parts [0, 3) (the poison's), [3, 5), … [15, 17).
 */
async function growSession(env: WriteEnv, tenant: string, send: "whole" | "after") {
  let answer: ExtractAnswer | undefined;
  for (let to = 3; to <= 17; to += 2) {
    answer = await accepted(
      env,
      tenant,
      send === "whole" || !answer
        ? { messages: messages(0, to) }
        : { after: answer.transcript, messages: messages(answer.transcript.count, to) },
    );
    await drainAll(env.deps, tenant);
  }
}

/** The facts after the poison's part (4 to 16) not extracted. */
async function unextracted(env: WriteEnv, tenant: string) {
  const facts = await factsOf(env, tenant);
  return [4, 6, 8, 10, 12, 14, 16].filter((i) => !facts.includes(fact(i)));
}

// A provider that fails every request holding a message fails the parts whose context (the six
// messages before them) holds it too. Before such a failure kills their job (a refusal, 400, which
// is not retried; any failure at the last attempt, a 500 that may be an outage's), the job asks
// without the context, and a part that only failed for it is extracted by its first job; only the
// poison's own part dies. docs/extraction.md#a-failing-context.
const failures = [
  // The poison's part (no context: it starts the session) takes one request a job, as each of the
  // four parts after the six messages does; each part whose context holds the poison two: refused
  // with the context, answered without.
  { name: "refused (400)", reply: refuse, calls: 3 * 1 + 3 * 2 + 4 },
  // Five attempts a job; each neighbour's fifth asks without the context (answered), then with it
  // once more (failed again: not an outage that ended).
  { name: "failed (500)", reply: fail, calls: 3 * 5 + 3 * (4 + 2) + 4 },
];
for (const failure of failures) {
  for (const send of ["whole", "after"] as const) {
    Deno.test(`extract, a poison ${failure.name} in the context too (${send}): the parts just after it are extracted by their first job, without context; only the poison's part dies`, async () => {
      const env = await writeEnv({ llm: { retry: { maxRetries: 0 } } });
      try {
        const tenant = newTenant();
        scriptModel(env, "always", true, failure.reply);
        await growSession(env, tenant, send);
        assert.deepEqual(await unextracted(env, tenant), []);
        // Each part's jobs: the poison's [0, 3) three (given up), every other part one, done.
        const parts = await env.sql<{ start: number; tries: number; status: string; dropped: boolean | null }[]>`
          select p.start_position as start, p.tries, j.status, (j.result->'stats'->>'context_dropped')::boolean as dropped
            from public.memory_extract_parts p join public.memory_jobs j on j.id = p.job_id
           where p.owner_id = ${tenant} order by p.start_position, p.tries`;
        assert.deepEqual(parts.map((p) => [p.start, p.tries, p.status, p.dropped]), [
          [0, 1, "dead", null],
          [0, 2, "dead", null],
          [0, 3, "dead", null],
          // The three parts whose context holds the poison: without it, at their first try.
          [3, 1, "done", true],
          [5, 1, "done", true],
          [7, 1, "done", true],
          [9, 1, "done", false],
          [11, 1, "done", false],
          [13, 1, "done", false],
          [15, 1, "done", false],
        ]);
        const [givenUp] = await env.sql<{ n: number }[]>`
          select count(*)::int as n from public.memory_extract_parts where owner_id = ${tenant} and given_up`;
        assert.equal(givenUp!.n, 1, "only the poison's part is given up");
        const calls = env.fake.chatRequests().filter((r) => JSON.stringify(r.body).includes(EXTRACT_MARK));
        assert.equal(calls.length, failure.calls);
      } finally {
        await env.close();
      }
    });
  }

  Deno.test(`extract, a poison ${failure.name} just before a session's last parts: they are extracted at once; the transcript sent again queues nothing`, async () => {
    const env = await writeEnv({ llm: { retry: { maxRetries: 0 } } });
    try {
      const tenant = newTenant();
      scriptModel(env, "always", true, failure.reply);
      for (const to of [3, 5, 7]) {
        await accepted(env, tenant, { messages: messages(0, to) });
        await drainAll(env.deps, tenant);
      }
      // The session's last POST: its parts after the poison are extracted, without waiting for more.
      assert.deepEqual(await factsOf(env, tenant), [fact(4), fact(6)]);
      // The poison's part died a third time at that POST (given up): the transcript sent again, as a
      // hook does at the session's end, has nothing left to queue.
      const jobs = (await extractJobs(env, tenant)).length;
      const again = await accepted(env, tenant, { messages: messages(0, 7) });
      assert.deepEqual([again.deduplicated, again.retried], [true, undefined]);
      assert.equal((await extractJobs(env, tenant)).length, jobs);
    } finally {
      await env.close();
    }
  });
}

Deno.test("extract, an outage that ends at a job's last attempt: the request without the context is answered, the one with it too, and the context is kept", async () => {
  const env = await writeEnv({ llm: { retry: { maxRetries: 0 } } });
  try {
    const tenant = newTenant();
    const clean = messages(0, 5).map((m, i) => i === 1 ? { role: "assistant", content: "Noted." } : m);
    // Part [3, 5)'s requests: an outage's 503 for its first four attempts, then the provider is back.
    env.fake.onChat((req) => newPart(req).includes("Fact 4:"), [...Array(4).fill(reply.error(503)), extract]);
    env.fake.onChat(EXTRACT_MARK, extract);
    await accepted(env, tenant, { messages: clean.slice(0, 3) });
    await drainAll(env.deps, tenant);
    const next = await accepted(env, tenant, { messages: clean });
    assert.equal((await drainAll(env.deps, tenant)).dead, 0);
    assert.deepEqual(await factsOf(env, tenant), [fact(0), fact(2), fact(4)]);
    const sent = env.fake.chatRequests().filter((r) => newPart(r.body).includes("Fact 4:")).map((r) =>
      withContext(r.body)
    );
    assert.deepEqual(sent, [true, true, true, true, false, true]);
    const [job] = await env.sql<{ attempts: number; dropped: boolean }[]>`
      select attempts, (result->'stats'->>'context_dropped')::boolean as dropped from public.memory_jobs where id = ${next.job_id}`;
    assert.deepEqual([job!.attempts, job!.dropped], [5, false]);
  } finally {
    await env.close();
  }
});

Deno.test("extract, a poison in a part with context: its jobs fail without the context too, so its third job keeps the context; the parts after it are extracted", async () => {
  const env = await writeEnv({ llm: { retry: { maxRetries: 0 } } });
  try {
    const tenant = newTenant();
    // Message 5 fails every request holding it (a 500); message 1 is healthy here.
    const at5 = (n: number) =>
      clean(n).map((m, i) => i === 5 ? { role: "user", content: "POISON: the provider fails this one." } : m);
    env.fake.onChat((req) => JSON.stringify(req.messages).includes("POISON"), fail);
    env.fake.onChat(EXTRACT_MARK, extract);
    for (let to = 3; to <= 17; to += 2) {
      await accepted(env, tenant, { messages: at5(to) });
      await drainAll(env.deps, tenant);
    }
    const parts = await env.sql<{ start: number; tries: number; status: string; context: number; failed: boolean }[]>`
      select p.start_position as start, p.tries, j.status, jsonb_array_length(j.payload -> 'context') as context,
             coalesce((j.result -> 'model' ->> 'failed_without_context')::boolean, false) as failed
        from public.memory_extract_parts p join public.memory_jobs j on j.id = p.job_id
       where p.owner_id = ${tenant} and j.status <> 'done' order by p.start_position, p.tries`;
    // Each of the poison part's jobs: four attempts with the context, the last without it (failed
    // too, recorded): its third job is queued with the context, as a part that fails on its own.
    assert.deepEqual(parts.map((p) => [p.start, p.tries, p.status, p.context, p.failed]), [
      [5, 1, "dead", 5, true],
      [5, 2, "dead", 5, true],
      [5, 3, "dead", 5, true],
    ]);
    assert.equal(poisonCalls(env), 3 * 5);
    assert.deepEqual(await unextracted(env, tenant), [6]); // 6 is in the poison's part [5, 7)
  } finally {
    await env.close();
  }
});

Deno.test("extract, a refused context is dropped for the rest of the job; an outage's failures (5xx) keep it", async () => {
  const env = await writeEnv({ llm: { retry: { maxRetries: 0 } } });
  try {
    const tenant = newTenant();
    const clean = messages(0, 5).map((m, i) => i === 1 ? { role: "assistant", content: "Noted." } : m);
    // Part [3, 5)'s requests: a 503 (an outage), a refusal, a 503 again, then an answer.
    env.fake.onChat((req) => newPart(req).includes("Fact 4:"), [reply.error(503), refuse, reply.error(503), extract]);
    env.fake.onChat(EXTRACT_MARK, extract);
    await accepted(env, tenant, { messages: clean.slice(0, 3) });
    await drainAll(env.deps, tenant);
    const next = await accepted(env, tenant, { messages: clean });
    const report = await drainAll(env.deps, tenant);
    assert.equal(report.dead, 0, JSON.stringify(report));
    assert.deepEqual(await factsOf(env, tenant), [fact(0), fact(2), fact(4)]);
    // After the outage's 503 the next attempt sent the context again; after the refusal, the same
    // attempt and the next went without it.
    const sent = env.fake.chatRequests().filter((r) => newPart(r.body).includes("Fact 4:")).map((r) =>
      withContext(r.body)
    );
    assert.deepEqual(sent, [true, true, false, false]);
    const [job] = await env.sql<{ attempts: number; dropped: boolean }[]>`
      select attempts, (result->'stats'->>'context_dropped')::boolean as dropped from public.memory_jobs where id = ${next.job_id}`;
    assert.deepEqual([job!.attempts, job!.dropped], [3, true]);
  } finally {
    await env.close();
  }
});

// A transcript ending exactly where a dead job ends (a hook that sends the transcript once, at the
// session's end, and again): that job's messages, and those of the dead jobs before it, are queued
// again as retries (`:try<k>` keys), the one at the end answering; while it is live the same
// transcript is answered with it; a given-up end is answered as such, with nothing queued.
// docs/extraction.md#what-a-post-queues.

for (const send of ["whole", "after"] as const) {
  Deno.test(`extract, an outage kills a session's last jobs: the same transcript sent again (${send}) queues their messages again, and they are extracted`, async () => {
    const env = await writeEnv({ llm: { retry: { maxRetries: 0 } } });
    try {
      const tenant = newTenant();
      // The provider is down for eleven requests: the five attempts of each of the session's two
      // jobs, and the second's request without its context at its last attempt.
      env.fake.onChat(EXTRACT_MARK, [...Array(11).fill(fail), extract]);
      const three = await accepted(env, tenant, { messages: clean(3) });
      const five = await accepted(env, tenant, { messages: clean(5) });
      assert.equal((await drainAll(env.deps, tenant)).dead, 2, "the outage killed both jobs");

      // The provider is back; the session's transcript is sent again, unchanged.
      const again = () =>
        accepted(
          env,
          tenant,
          send === "whole" ? { messages: clean(5) } : {
            after: three.transcript,
            messages: clean(5).slice(3),
          },
        );
      const retry = await again();
      assert.deepEqual(retry.transcript, five.transcript);
      assert.deepEqual(
        [retry.deduplicated, retry.new_messages, retry.retried?.map((r) => [r.messages, r.tries, r.status])],
        [false, 0, [[3, 2, "queued"], [2, 2, "queued"]]],
        JSON.stringify(retry),
      );
      assert.equal(retry.job_id, retry.retried![1]!.job_id, "the answer is the retry holding the transcript's end");
      // Sent again while the retries are queued: answered with the one covering the end, nothing queued.
      const jobs = (await extractJobs(env, tenant)).length;
      const same = await again();
      assert.deepEqual([same.job_id, same.status, same.deduplicated, same.retried], [
        retry.job_id,
        "queued",
        true,
        undefined,
      ]);
      assert.equal((await extractJobs(env, tenant)).length, jobs, "no duplicate jobs");

      assert.equal((await drainAll(env.deps, tenant)).dead, 0);
      assert.deepEqual(await factsOf(env, tenant), [fact(0), fact(2), fact(4)], "the dead jobs' facts");
      const done = await again();
      assert.deepEqual([done.job_id, done.status, done.deduplicated], [retry.job_id, "done", true]);
      assert.deepEqual((await status(env, tenant, retry.job_id)).part, { start: 3, end: 5, tries: 2, given_up: false });
    } finally {
      await env.close();
    }
  });
}

Deno.test("extract, a poison message at the transcript's end: the same transcript sent again retries it until it is given up, then queues nothing", async () => {
  const env = await writeEnv({ llm: { retry: { maxRetries: 0 } } });
  try {
    const tenant = newTenant();
    scriptModel(env, "always");
    const first = await accepted(env, tenant, { messages: messages(0, 3) });
    assert.equal((await drainAll(env.deps, tenant)).dead, 1, "the job dies on the poison");
    const tries = [];
    for (const n of [2, 3]) {
      const answer = await accepted(env, tenant, { messages: messages(0, 3) });
      assert.deepEqual(answer.transcript, first.transcript);
      assert.deepEqual([answer.deduplicated, answer.new_messages, answer.retried?.length], [false, 0, 1]);
      assert.equal(answer.job_id, answer.retried![0]!.job_id);
      tries.push(answer.retried![0]!.tries);
      // While it is queued, the same transcript is answered with it.
      const same = await accepted(env, tenant, { messages: messages(0, 3) });
      assert.deepEqual([same.job_id, same.deduplicated, same.retried], [answer.job_id, true, undefined]);
      assert.equal((await drainAll(env.deps, tenant)).dead, 1, `try ${n} dies on the poison`);
    }
    assert.deepEqual(tries, [2, 3]);
    assert.equal(poisonCalls(env), 3 * 5, "three jobs of five attempts each");

    // Given up: the answer is the given-up job and says so; nothing is queued, the model not asked.
    const jobs = (await extractJobs(env, tenant)).length;
    const gaveUp = await accepted(env, tenant, { messages: messages(0, 3) });
    assert.deepEqual(
      [gaveUp.status, gaveUp.deduplicated, gaveUp.new_messages, gaveUp.given_up, gaveUp.retried],
      ["dead", true, 0, true, undefined],
    );
    assert.deepEqual((await status(env, tenant, gaveUp.job_id)).part, { start: 0, end: 3, tries: 3, given_up: true });
    assert.equal((await extractJobs(env, tenant)).length, jobs);
    await drainAll(env.deps, tenant);
    assert.equal(poisonCalls(env), 3 * 5);
  } finally {
    await env.close();
  }
});
