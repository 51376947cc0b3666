// A message the provider fails slowly (its requests time out, 4 tries of LLM_TIMEOUT_MS: minutes)
// while the worker has a wall-clock limit (a hosted edge function is stopped at 150-400 s): the
// parts whose context holds it must still be extracted. A job asks without the context before its
// last attempt's failure kills it (answerChunk), but a stopped worker loses that answer: the part's
// last job (tries 3) then goes without the context unless its job before recorded that the request
// without it failed too (next-part.ts). docs/extraction.md#a-failing-context.
//
// Simulated time, no sleeps: each request is charged a duration; the one that would pass the
// invocation's budget never returns to it, its lease runs out and the next claim sweeps it (as
// claim_jobs does for a worker the platform stopped), and its later writes are refused.
import assert from "node:assert/strict";
import { reply } from "./fake_openai.ts";
import { factAnswer, postExtract, serviceFact } from "./support/extract.ts";
import { newTenant, testSql } from "./support/seed.ts";
import { drainAll, memoriesOf, type WriteEnv, writeEnv } from "./write_helpers.ts";
import { drainQueue } from "../supabase/functions/_shared/drain-queue.ts";
import { type Llm, LlmRequestError } from "../supabase/functions/_shared/llm.ts";

const EXTRACT_MARK = "What from this conversation would help you do a better job next time?";
const message = (i: number) =>
  i === 1
    ? { role: "user", content: "POISON: a message the provider fails, slowly." }
    : i % 2 === 0
    ? { role: "user", content: `Fact ${i}: service ${i} listens on port ${8000 + i}.` }
    : { role: "assistant", content: "Noted." };
const messages = (to: number) => Array.from({ length: to }, (_, i) => message(i));
const fact = serviceFact;

/** How the provider fails a request holding the poison, and how long the client takes to give up. */
interface Poison {
  seconds: number;
  error: () => LlmRequestError;
}
const usage = { promptTokens: 0, completionTokens: 0, totalTokens: 0, requests: 4 };
/** 4 tries of LLM_TIMEOUT_MS (60 s) and the backoffs between them. */
const timesOut: Poison = {
  seconds: 243.5,
  error: () => new LlmRequestError("LLM request failed (timeout) after 4 attempt(s)", undefined, true, usage),
};
/** A 500 after each of 4 tries that take 50 s. */
const slow500: Poison = {
  seconds: 203.5,
  error: () => new LlmRequestError("LLM request failed (HTTP 500) after 4 attempt(s)", 500, true, usage),
};
const ANSWER_S = 15;

/** The session grown two messages a POST to 15, each POST's jobs run by invocations stopped past `budgetS`. */
async function session(env: WriteEnv, poison: Poison, budgetS: number) {
  const tenant = newTenant();
  env.fake.onChat(
    EXTRACT_MARK,
    reply.dynamic((req) => {
      const text = req.messages.map((m) => typeof m.content === "string" ? m.content : "").join("\n");
      // The new part (after the context, when there is one).
      return reply.json(factAnswer(text.slice(Math.max(0, text.indexOf("the new part to review:")))));
    }),
  );
  let spent = 0;
  let stop: (() => void) | undefined;
  const stranded: (() => void)[] = [];
  const llm: Llm = {
    model: env.llm.model,
    get totalUsage() {
      return env.llm.totalUsage;
    },
    completeJson(schema, msgs, opts) {
      const poisoned = JSON.stringify(msgs).includes("POISON");
      const cost = poisoned ? poison.seconds : ANSWER_S;
      // A stopped invocation's later requests fail at once (it no longer runs).
      if (spent === Infinity) return Promise.reject(poison.error());
      if (spent + cost > budgetS) {
        // The platform stops the invocation: this request never returns to it.
        spent = Infinity;
        stop?.();
        return new Promise((_, reject) => stranded.push(() => reject(poison.error())));
      }
      spent += cost;
      return poisoned ? Promise.reject(poison.error()) : env.llm.completeJson(schema, msgs, opts);
    },
  };
  const workerSql = testSql(4);
  try {
    /** One invocation of the worker, one job; false when none was queued. */
    const invocation = async (): Promise<boolean> => {
      spent = 0;
      const stopped = new Promise<"stopped">((resolve) => (stop = () => resolve("stopped")));
      const run = drainQueue({ ...env.deps, sql: workerSql, llm }, {
        maxJobs: 1,
        ownerId: tenant,
        kinds: ["extract"],
        backoffBaseMs: 0,
        workerId: `w-${crypto.randomUUID().slice(0, 8)}`,
      });
      const outcome = await Promise.race([run, stopped]);
      if (outcome !== "stopped") return outcome.claimed > 0;
      // Nobody renews the lease: it runs out, and the next claim sweeps it.
      await env.sql`update public.memory_jobs set locked_until = now() - interval '1 second'
                     where owner_id = ${tenant} and status = 'running'`;
      await env.sql`select * from memory_private.claim_jobs('sweeper', 1, '1 second'::interval,
                                                            array['none']::text[], ${tenant}::uuid)`;
      for (const reject of stranded.splice(0)) reject();
      await run.catch(() => {});
      return true;
    };
    for (let to = 3; to <= 15; to += 2) {
      const res = await postExtract(env, tenant, { session_id: "s-slow", project: "shop", messages: messages(to) });
      assert.equal(res.status, 202, JSON.stringify(res.body));
      while (await invocation());
    }
  } finally {
    await workerSql.end();
  }
  await drainAll(env.deps, tenant);
  const parts = await env.sql<{ start: number; tries: number; status: string; context: number }[]>`
    select p.start_position as start, p.tries, j.status, jsonb_array_length(coalesce(j.payload -> 'context', '[]')) as context
      from public.memory_extract_parts p join public.memory_jobs j on j.id = p.job_id
     where p.owner_id = ${tenant} and p.start_position < 9 order by p.start_position, p.tries`;
  const facts = (await memoriesOf(env.sql, tenant)).map((m) => m.content);
  return {
    parts: parts.map((p) => [p.start, p.tries, p.status, p.context]),
    missing: [4, 6, 8, 10, 12, 14].filter((i) => !facts.includes(fact(i))),
  };
}

for (const budget of [150, 400]) {
  Deno.test(`extract, a poison that times out, workers stopped at ${budget} s: the parts whose context holds it are extracted by their last job, without the context`, async () => {
    const env = await writeEnv({ llm: { retry: { maxRetries: 0 } } });
    try {
      const { parts, missing } = await session(env, timesOut, budget);
      // The parts just after the poison ([3, 5), [5, 7), [7, 9)) hold nothing the provider fails on.
      assert.deepEqual(missing, []);
      // At 150 s every attempt is stopped at its request with the context (nothing recorded); at
      // 400 s the last attempt's request without it is answered, the one with it times out (a
      // timeout never drops the context). Either way two jobs die, and the third goes without it.
      const after = (start: number, context: number) => [[start, 1, "dead", context], [start, 2, "dead", context], [
        start,
        3,
        "done",
        0,
      ]];
      assert.deepEqual(parts, [
        [0, 1, "dead", 0],
        [0, 2, "dead", 0],
        [0, 3, "dead", 0],
        ...after(3, 3),
        ...after(5, 5),
        ...after(7, 6),
      ]);
    } finally {
      await env.close();
    }
  });
}

Deno.test("extract, a poison that fails slowly with a 500, workers stopped at 400 s: the parts whose context holds it are extracted by their first job", async () => {
  const env = await writeEnv({ llm: { retry: { maxRetries: 0 } } });
  try {
    const { parts, missing } = await session(env, slow500, 400);
    assert.deepEqual(missing, []);
    // Their last attempt asks without the context (15 s), then with it (a 500 at 218 s): the
    // context is dropped within the limit, where asking with it first spends 422 s.
    assert.deepEqual(parts, [
      [0, 1, "dead", 0],
      [0, 2, "dead", 0],
      [0, 3, "dead", 0],
      [3, 1, "done", 3],
      [5, 1, "done", 5],
      [7, 1, "done", 6],
    ]);
  } finally {
    await env.close();
  }
});
