// An outage of the model provider, or a key it refuses, never loses a session's messages: the jobs
// it fails are postponed (queued again with their attempt given back, after a capped backoff), not
// killed, so no extract part dies or is given up; once the provider answers again, every message
// is extracted. A message the provider refuses for what it holds is still given up after three jobs.
// docs/operations.md#job-queue, docs/extraction.md#an-outage-of-the-model-provider. Real Postgres,
// the fake model at the HTTP boundary, the queue drained by the worker's own code.
import assert from "node:assert/strict";
import { reply } from "./fake_openai.ts";
import { type ExtractAnswer, factAnswer, newPart, postExtract, serviceFact } from "./support/extract.ts";
import { newTenant } from "./support/seed.ts";
import { createLlm } from "../supabase/functions/_shared/llm.ts";
import { drainAll, jobsOf, memoriesOf, type WriteEnv, writeEnv } from "./write_helpers.ts";

/** Message i of the session: even ones state a fact, odd ones acknowledge. */
const message = (i: number) =>
  i % 2 === 0
    ? { role: "user", content: `Fact ${i}: service ${i} listens on port ${8000 + i}.` }
    : { role: "assistant", content: "Noted." };
const messages = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => message(from + k));

const extract = reply.dynamic((req) => reply.json(factAnswer(newPart(req))));

async function accepted(env: WriteEnv, tenant: string, to: number): Promise<ExtractAnswer> {
  const res = await postExtract(env, tenant, { session_id: "s-outage", project: "shop", messages: messages(0, to) });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  return res.body;
}

const factsOf = async (env: WriteEnv, tenant: string) =>
  (await memoriesOf(env.sql, tenant)).map((m) => m.content).sort();

/** The session's parts: how many jobs held each, and whether any died or was given up. */
const partsOf = (env: WriteEnv, tenant: string) =>
  env.sql<{ start: number; end: number; tries: number; dead: boolean; given_up: boolean }[]>`
    select start_position as start, end_position as "end", tries, dead, given_up
      from public.memory_extract_parts where owner_id = ${tenant} order by start_position, tries`;

/** The postponed jobs' wait is over (postpone_job set run_after ahead): what time passing does. */
const waitIsOver = (env: WriteEnv, tenant: string) =>
  env.sql`update public.memory_jobs set run_after = now() where owner_id = ${tenant} and status = 'queued'`;

/**
 * The provider fails every chat request with `failure` over four POSTs (each drained), then answers
 * again: no job dies, nothing is given up, every fact is extracted once the postponed jobs' wait is over.
 */
async function outageOverFourPosts(failure: ReturnType<typeof reply.error>, asksADrain: number | null = 2) {
  const env = await writeEnv({ llm: { retry: { maxRetries: 0 } } });
  try {
    const tenant = newTenant();
    env.fake.onChat(() => true, extract);
    env.fake.chatOutage = failure;
    for (const to of [3, 5, 7, 9]) {
      const answer = await accepted(env, tenant, to);
      assert.equal(answer.retried, undefined, "no part died: none is queued again");
      const asked = () => env.fake.chatRequests().length + env.fake.probeRequests().length;
      const before = asked();
      const report = await drainAll(env.deps, tenant);
      assert.deepEqual([report.dead, report.postponed], [0, 1], JSON.stringify(report));
      assert.match(report.provider_unavailable ?? "", /^model fake-llm \(127\.0\.0\.1:\d+\): LLM request failed/);
      // The new job's one request and one probe: the job postponed before is not due yet.
      if (asksADrain !== null) assert.equal(asked() - before, asksADrain, "a down provider is asked twice a run");
    }
    const jobs = await jobsOf(env.sql, tenant, ["extract"]);
    assert.deepEqual(jobs.map((j) => [j.status, j.attempts]), Array(4).fill(["queued", 0]));
    // Which provider: the model, its name and host (docs/operations.md#an-outage-of-the-model-provider).
    const model = String.raw`model fake-llm \(127\.0\.0\.1:\d+\)`;
    assert.match(
      jobs[0]!.last_error ?? "",
      new RegExp(`^provider unavailable: ${model}: ModelPartError: .*LLM request failed`),
    );
    const seen = (jobs[0]!.result as { provider_unavailable: { times: number; next_try_at: string } })
      .provider_unavailable;
    assert.equal(seen.times, 1);
    assert.ok(new Date(seen.next_try_at) > new Date(), "postponed, with a wait ahead");
    assert.ok((await partsOf(env, tenant)).every((p) => !p.dead && !p.given_up && p.tries === 1));

    // The provider answers again, and the postponed jobs' wait is over.
    env.fake.chatOutage = undefined;
    await waitIsOver(env, tenant);
    const report = await drainAll(env.deps, tenant);
    assert.deepEqual([report.dead, report.postponed], [0, 0], JSON.stringify(report));
    assert.deepEqual(await factsOf(env, tenant), [0, 2, 4, 6, 8].map(serviceFact).sort());
    const done = await jobsOf(env.sql, tenant, ["extract"]);
    assert.ok(done.every((j) => j.status === "done" && !("provider_unavailable" in (j.result as object))));
    // A later POST has nothing of it to queue again.
    assert.equal((await accepted(env, tenant, 11)).retried, undefined);
  } finally {
    await env.close();
  }
}

Deno.test("extract, a provider outage (503) over four POSTs: every job is postponed, none dies, and every message is extracted once it answers", async () => {
  await outageOverFourPosts(reply.error(503));
});

Deno.test("extract, a key the provider refuses (401) then fixed: the jobs are postponed, not killed, and extracted with the fixed key", async () => {
  await outageOverFourPosts(reply.error(401, { message: "Incorrect API key provided" }));
});

/**
 * One job's first drain meets the provider `down` makes unreachable (its report saying `says`):
 * postponed, not dead; the next, once the provider answers and the wait is over, extracts it.
 */
async function oneJobThroughAnOutage(says: RegExp, down: (env: WriteEnv) => WriteEnv["deps"]) {
  const env = await writeEnv({ llm: { retry: { maxRetries: 0 } } });
  try {
    const tenant = newTenant();
    env.fake.onChat(() => true, extract);
    await accepted(env, tenant, 3);
    const report = await drainAll(down(env), tenant);
    assert.deepEqual([report.dead, report.postponed], [0, 1], JSON.stringify(report));
    assert.match(report.provider_unavailable ?? "", says);
    env.fake.chatOutage = undefined;
    await waitIsOver(env, tenant);
    assert.equal((await drainAll(env.deps, tenant)).done >= 1, true);
    assert.deepEqual(await factsOf(env, tenant), [serviceFact(0), serviceFact(2)]);
  } finally {
    await env.close();
  }
}

Deno.test("extract, a provider unreachable (connection refused): the job is postponed, then extracted", async () => {
  await oneJobThroughAnOutage(/connection error/, (env) => {
    // A port nothing listens on: every request is refused.
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const closed = `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}/v1`;
    listener.close();
    return {
      ...env.deps,
      llm: createLlm({ llm: { ...env.config.llm, baseUrl: closed } }, { retry: { maxRetries: 0 } })!,
    };
  });
});

Deno.test("extract, a provider that hangs (every request times out): the job is postponed, then extracted", async () => {
  await oneJobThroughAnOutage(/timeout/, (env) => {
    env.fake.chatOutage = reply.hang();
    return env.deps;
  });
});

Deno.test("extract, a rate limit (429) on the job's request while the provider answers a probe: postponed without a probe, then extracted", async () => {
  const env = await writeEnv({ llm: { retry: { maxRetries: 0 } } });
  try {
    const tenant = newTenant();
    let limited = true;
    env.fake.onChat(
      () => limited,
      reply.error(429, { retryAfter: 0, message: "Rate limit reached for tokens per min" }),
    );
    env.fake.onChat(() => true, extract);
    await accepted(env, tenant, 3);
    const report = await drainAll(env.deps, tenant);
    assert.deepEqual([report.dead, report.postponed, report.retried], [0, 1, 0], JSON.stringify(report));
    assert.equal(env.fake.probeRequests().length, 0, "a 429 is not probed");
    limited = false;
    await waitIsOver(env, tenant);
    assert.equal((await drainAll(env.deps, tenant)).done >= 1, true);
    assert.deepEqual(await factsOf(env, tenant), [serviceFact(0), serviceFact(2)]);
  } finally {
    await env.close();
  }
});

Deno.test("extract, a message the provider refuses (422) while it answers everything else: still given up after three jobs", async () => {
  const env = await writeEnv({ llm: { retry: { maxRetries: 0 } } });
  try {
    const tenant = newTenant();
    env.fake.onChat((req) => newPart(req).includes("Fact 0:"), reply.error(422, { message: "unprocessable" }));
    env.fake.onChat(() => true, extract);
    for (const to of [3, 5, 7, 9]) {
      await accepted(env, tenant, to);
      const report = await drainAll(env.deps, tenant);
      assert.equal(report.postponed, 0, JSON.stringify(report));
    }
    const parts = await partsOf(env, tenant);
    assert.deepEqual(parts.filter((p) => p.start === 0).map((p) => [p.tries, p.dead, p.given_up]), [
      [1, true, false],
      [2, true, false],
      [3, true, true],
    ]);
    assert.deepEqual(await factsOf(env, tenant), [4, 6, 8].map(serviceFact).sort());
  } finally {
    await env.close();
  }
});

Deno.test("extract, a provider out of credits (402, as DeepSeek and OpenRouter answer a spent balance): the jobs are postponed, not killed", async () => {
  await outageOverFourPosts(reply.error(402, { message: "Insufficient Balance" }));
});

Deno.test("extract, a part whose request alone is over the provider's tokens-per-minute limit (429 'Request too large'): counted as a message the provider always fails, and it does not take the drain's other jobs down", async () => {
  const env = await writeEnv({ llm: { retry: { maxRetries: 0 } } });
  try {
    const tenant = newTenant();
    // OpenAI's answer to a request larger than the key's TPM limit: a 429 every time, whatever the minute.
    const tooLarge = reply.error(429, {
      message: "Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, " +
        "Requested 61234. The input or output tokens must be reduced in order to run successfully.",
    });
    env.fake.onChat((req) => newPart(req).includes("Fact 0:"), tooLarge);
    env.fake.onChat(() => true, extract);
    await accepted(env, tenant, 3); // session s-outage: the part the provider never takes
    const other = await postExtract(env, tenant, { session_id: "s-other", project: "shop", messages: messages(4, 7) });
    assert.equal(other.status, 202);
    const first = await drainAll(env.deps, tenant);
    const otherJob = first.jobs.find((j) => j.id === other.body.job_id);
    assert.equal(otherJob?.status, "done", `the other session's job is asked, not postponed: ${JSON.stringify(first)}`);
    for (let drain = 2; drain <= 6; drain++) {
      await waitIsOver(env, tenant);
      await drainAll(env.deps, tenant);
    }
    const [big] = await jobsOf(env.sql, tenant, ["extract"]);
    const seen = (big!.result as { provider_unavailable?: { times: number } }).provider_unavailable;
    assert.equal(big!.status, "dead", `six drains, ${seen?.times} times postponed: ${big!.last_error}`);
  } finally {
    await env.close();
  }
});

Deno.test("extract, a key the provider refuses with a 400 (Gemini's 'API key not valid'): the probe is refused too, so the jobs are postponed, not killed", async () => {
  // A refusal asks the part without its context first (extraction.ts answerChunk): two requests, or one.
  await outageOverFourPosts(
    reply.error(400, { message: "API key not valid. Please pass a valid API key." }),
    null,
  );
});

// A probe is one request (llm-outage.ts oneRequest): the client's retries (3 after the first try)
// are the job's request's. Before, a down provider's probe was retried as a job's request is: 4
// requests and their backoff for one answer, that the provider is down.
Deno.test("extract, a provider down (503) with the client retrying as configured: the job's request is retried, its probe is one request", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    env.fake.onChat(() => true, extract);
    env.fake.chatOutage = reply.error(503);
    await accepted(env, tenant, 3);
    const report = await drainAll(env.deps, tenant);
    assert.deepEqual([report.dead, report.postponed], [0, 1], JSON.stringify(report));
    assert.deepEqual([env.fake.chatRequests().length, env.fake.probeRequests().length], [4, 1]);
  } finally {
    await env.close();
  }
});

/** Whether an extraction request holds the part's context (extraction-prompt.ts). */
const withContext = (req: { messages: { content: unknown }[] }) =>
  req.messages.some((m) => String(m.content).includes("EARLIER IN THIS CONVERSATION"));

// A 429 saying the request alone is over the limit (counts printed with thousands separators, as
// `Limit 30,000, Requested 45,512`) is a refusal (llm-retry.ts refusesContent), as a 413 is: the
// client does not retry it, and the part is asked without its context at once. Before: retried
// (4 requests an attempt), then counted, the job retried until its last attempt asked without the
// context; before that, the thousands separators were not read and the job was postponed forever.
Deno.test("extract, a part whose context puts its request over the tokens-per-minute limit (429 'Limit 30,000, Requested 45,512'): one request with the context, then the part is asked without it, done at its first attempt", async () => {
  const env = await writeEnv(); // the client's retries as configured: 3 after the first try
  try {
    const tenant = newTenant();
    const tooLarge = reply.error(429, {
      message: "Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit 30,000, " +
        "Requested 45,512. The input or output tokens must be reduced in order to run successfully.",
    });
    env.fake.onChat(withContext, tooLarge);
    env.fake.onChat(() => true, extract);
    await accepted(env, tenant, 3);
    const first = await drainAll(env.deps, tenant);
    assert.deepEqual([first.postponed, first.retried, first.dead], [0, 0, 0], JSON.stringify(first));
    await accepted(env, tenant, 5); // the part [3, 5), the first three messages its context
    const report = await drainAll(env.deps, tenant);
    assert.deepEqual([report.postponed, report.retried, report.dead], [0, 0, 0], JSON.stringify(report));
    const second = env.fake.chatRequests().slice(1);
    assert.deepEqual(
      second.map((r) => withContext(r.body)),
      [true, false],
      "one request with the context, not retried",
    );
    assert.equal(env.fake.probeRequests().length, 0, "a refusal of the request alone: no probe");
    const [, job] = await jobsOf(env.sql, tenant, ["extract"]);
    assert.deepEqual([job!.status, job!.attempts], ["done", 1]);
    assert.deepEqual(await factsOf(env, tenant), [serviceFact(0), serviceFact(2), serviceFact(4)].sort());
  } finally {
    await env.close();
  }
});
