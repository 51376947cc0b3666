// Incremental extraction per session, through memory-extract's handler on the real database with
// the fake LLM: each POST carries the transcript so far and queues only the messages no earlier
// (not dead) job of the session covers, with a few earlier ones as context the model is told not
// to extract from and the rule-based extractor never sees.
import assert from "node:assert/strict";
import { createHandler } from "../supabase/functions/memory-extract/handler.ts";
import { type ChatRequestBody, reply } from "./fake_openai.ts";
import { userHeaders } from "./support/auth.ts";
import { newTenant } from "./support/seed.ts";
import { drainAll, jobsOf, memoriesOf, type WriteEnv, writeEnv } from "./write_helpers.ts";

const URL_ = "http://localhost/functions/v1/memory-extract";
const CONTEXT_MARK = "context only, extract nothing from it";
const NEW_PART_MARK = "the new part to review:";

// Messages 0-3 are the first POST, 4-6 what the session adds before the second.
const transcript = [
  { role: "user", content: "Remember that the staging database resets every Monday." },
  { role: "assistant", content: "Noted. FACT-alpha: the task-api is deployed with appwrite push." },
  { role: "user", content: "Run the tests please." },
  {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "call_1", type: "function", function: { name: "bash", arguments: '{"cmd":"npm test"}' } }],
  },
  { role: "tool", tool_call_id: "call_1", content: "FACT-beta: 12 tests passed with vitest." },
  { role: "user", content: "Remember that releases are tagged vX.Y.Z." },
  { role: "assistant", content: "Tagged v1.4.0." },
];

/**
 * An honest fake model: one candidate per FACT-<name> in the part it is asked to review (after the
 * new-part header when there is context), none for facts that only appear in the context.
 */
function factCandidates(req: ChatRequestBody) {
  const prompt = String(req.messages.at(-1)?.content ?? "");
  // The facts differ by one word: the dedup decision sees them as near-verbatim neighbours.
  if (prompt.startsWith("NEW candidate")) return reply.json({ action: "ADD", reason: "a different fact" });
  const part = prompt.includes(NEW_PART_MARK) ? prompt.slice(prompt.indexOf(NEW_PART_MARK)) : prompt;
  const facts = [...part.matchAll(/FACT-(\w+)/g)].map((m) => m[1]!);
  return reply.json({
    stored: facts.map((f) => ({
      content: `The project fact ${f} was recorded during the session.`,
      type: "semantic",
      namespace: "devai/project/taskforge/facts",
      source: "discovery",
      priority: "low",
      importance: 2,
    })),
    filtered: [],
  });
}

async function post(env: WriteEnv, tenant: string, body: Record<string, unknown>, kicks?: { n: number }) {
  const handler = createHandler({ ...env.deps, kickWorker: () => (kicks && kicks.n++, Promise.resolve()) });
  const res = await handler(
    new Request(URL_, {
      method: "POST",
      headers: await userHeaders(tenant),
      body: JSON.stringify({ project: "taskforge", ...body }),
    }),
  );
  assert.equal(res.status, 202);
  // (`transcript`, what a client passes as `after` next time, is tested in write_extract_after.test.ts)
  const { transcript: _, ...answer } = await res.json();
  return answer as {
    job_id: string;
    status: string;
    deduplicated: boolean;
    new_messages: number;
    retried?: { job_id: string; messages: number; tries: number }[];
  };
}

interface ExtractJobRow {
  id: string;
  status: string;
  payload: { messages: unknown[]; context: unknown[]; offset: number; session_id: string };
  result: {
    offset: number;
    messages: number;
    candidates: number;
    rules: { dedup_job_id: string | null };
    model: { dedup_job_id: string | null };
  } | null;
}

async function extractJobs(env: WriteEnv, tenant: string): Promise<ExtractJobRow[]> {
  return await env.sql<ExtractJobRow[]>`
    select id, status, payload, result from public.memory_jobs
     where owner_id = ${tenant} and kind = 'extract' order by created_at, id`;
}

Deno.test("extract incremental: a grown transcript queues only its new messages, with the earlier ones as context", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    env.fake.onChat(() => true, reply.dynamic(factCandidates));
    const first = await post(env, tenant, { session_id: "s-grow", messages: transcript.slice(0, 4) });
    assert.deepEqual([first.deduplicated, first.new_messages], [false, 4]);
    await drainAll(env.deps, tenant);
    const kicks = { n: 0 };
    const second = await post(env, tenant, { session_id: "s-grow", messages: transcript }, kicks);
    assert.deepEqual([second.deduplicated, second.new_messages, second.status], [false, 3, "queued"]);
    assert.notEqual(second.job_id, first.job_id);
    assert.equal(kicks.n, 1);

    const [job1, job2] = await extractJobs(env, tenant);
    assert.deepEqual([job1!.payload.offset, job1!.payload.messages, job1!.payload.context], [
      0,
      transcript.slice(0, 4),
      [],
    ]);
    assert.equal(job2!.id, second.job_id);
    assert.equal(job2!.payload.offset, 4);
    assert.deepEqual(job2!.payload.messages, transcript.slice(4));
    assert.deepEqual(job2!.payload.context, transcript.slice(0, 4));
    await drainAll(env.deps, tenant);

    // The model saw the first part only as marked context before the new part.
    const prompts = env.fake.chatRequests().map((r) => String(r.body.messages.at(-1).content));
    assert.equal(prompts.length, 2);
    assert.ok(!prompts[0]!.includes(CONTEXT_MARK));
    const [context, newPart] = prompts[1]!.split(NEW_PART_MARK) as [string, string];
    assert.ok(context.includes(CONTEXT_MARK), prompts[1]);
    assert.ok(context.includes("FACT-alpha") && context.includes("staging database resets"), context);
    assert.ok(
      newPart.includes("FACT-beta") && newPart.includes("releases are tagged vX.Y.Z") &&
        newPart.includes("Tagged v1.4.0."),
      newPart,
    );
    assert.ok(!newPart.includes("FACT-alpha") && !newPart.includes("staging database"), newPart);

    // The second job extracted only what is new: its fact and its "remember" (rules never see the context).
    const jobs = await extractJobs(env, tenant);
    assert.deepEqual(jobs.map((j) => [j.status, j.result?.offset, j.result?.messages, j.result?.candidates]), [[
      "done",
      0,
      4,
      2,
    ], ["done", 4, 3, 2]]);
    const queued = await env.sql<{ content: string }[]>`
      select c ->> 'content' as content from public.memory_jobs j, jsonb_array_elements(j.payload -> 'candidates') c
       where j.id in (${jobs[1]!.result!.rules.dedup_job_id}, ${jobs[1]!.result!.model.dedup_job_id})`;
    assert.deepEqual(
      queued.map((c) => c.content).sort(),
      [
        "The project fact beta was recorded during the session.",
        "Releases are tagged vX.Y.Z.",
      ].sort(),
    );
    const mems = await memoriesOf(env.sql, tenant);
    assert.deepEqual(
      mems.map((m) => m.content).sort(),
      [
        "The project fact alpha was recorded during the session.",
        "The project fact beta was recorded during the session.",
        "The staging database resets every Monday.",
        "Releases are tagged vX.Y.Z.",
      ].sort(),
    );
  } finally {
    await env.close();
  }
});

Deno.test("extract incremental: the same transcript again, or a part of it, is the same job with nothing new", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    env.fake.onChat(() => true, reply.dynamic(factCandidates));
    const kicks = { n: 0 };
    const first = await post(env, tenant, { session_id: "s-again", messages: transcript }, kicks);
    const queued = await post(env, tenant, { session_id: "s-again", messages: transcript }, kicks);
    assert.deepEqual(queued, { job_id: first.job_id, status: "queued", deduplicated: true, new_messages: 0 });
    await drainAll(env.deps, tenant);
    const done = await post(env, tenant, { session_id: "s-again", messages: transcript }, kicks);
    assert.deepEqual(done, { job_id: first.job_id, status: "done", deduplicated: true, new_messages: 0 });
    // A shorter transcript (a late retry of an earlier POST) is covered by the job that has it.
    const shorter = await post(env, tenant, { session_id: "s-again", messages: transcript.slice(0, 5) }, kicks);
    assert.deepEqual(shorter, { job_id: first.job_id, status: "done", deduplicated: true, new_messages: 0 });
    // Keys in another order are the same message.
    const reordered = transcript.map((m) => Object.fromEntries(Object.entries(m).reverse()));
    assert.equal((await post(env, tenant, { session_id: "s-again", messages: reordered }, kicks)).new_messages, 0);
    assert.equal(kicks.n, 1);
    assert.equal((await extractJobs(env, tenant)).length, 1);
    assert.equal(env.fake.chatRequests().length, 1, "extracted once");
  } finally {
    await env.close();
  }
});

Deno.test("extract incremental: a dead earlier job does not cover its messages", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    const first = await post(env, tenant, { session_id: "s-dead", messages: transcript.slice(0, 3) });
    await env.sql`update public.memory_jobs set status = 'dead', last_error = 'test' where id = ${first.job_id}`;
    // A transcript that grew: the dead job's messages again, in a job of their own (a message that
    // kills its job does not take the new ones with it), and the new ones in another.
    const grown = await post(env, tenant, { session_id: "s-dead", messages: transcript.slice(0, 5) });
    assert.deepEqual(
      [grown.deduplicated, grown.new_messages, grown.retried?.[0]?.messages, grown.retried?.[0]?.tries],
      [
        false,
        2,
        3,
        2,
      ],
    );
    let jobs = await extractJobs(env, tenant);
    const part = (id?: string) => jobs.find((j) => j.id === id)!.payload;
    assert.deepEqual([part(grown.retried?.[0]?.job_id).offset, part(grown.retried?.[0]?.job_id).messages], [
      0,
      transcript.slice(0, 3),
    ]);
    assert.deepEqual([part(grown.job_id).offset, part(grown.job_id).messages, part(grown.job_id).context], [
      3,
      transcript.slice(3, 5),
      transcript.slice(0, 3),
    ]);

    // A later job whose earlier part died covers its own messages all the same: only what the dead
    // part held is queued again, and the new message.
    const more = await post(env, tenant, { session_id: "s-dead", messages: transcript.slice(0, 6) });
    assert.deepEqual([more.new_messages, more.retried], [1, undefined]);
    await env.sql`update public.memory_jobs set status = 'dead' where id = ${grown.job_id}`;
    const all = await post(env, tenant, { session_id: "s-dead", messages: transcript });
    assert.deepEqual([all.deduplicated, all.new_messages, all.retried?.[0]?.messages], [false, 1, 2]);
    jobs = await extractJobs(env, tenant);
    assert.deepEqual(
      jobs.map((j) => [j.status, j.payload.offset, j.payload.messages.length]).sort((a, b) => `${a}` < `${b}` ? -1 : 1),
      [
        ["dead", 0, 3],
        ["dead", 3, 2],
        ["queued", 0, 3],
        ["queued", 3, 2],
        ["queued", 5, 1],
        ["queued", 6, 1],
      ],
    );

    // The first three messages are covered by the job that queued them again.
    const covered = await post(env, tenant, { session_id: "s-dead", messages: transcript.slice(0, 3) });
    assert.deepEqual(covered, {
      job_id: grown.retried?.[0]?.job_id,
      status: "queued",
      deduplicated: true,
      new_messages: 0,
    });

    // A dead job's own transcript sent again (not grown): its messages are queued again as a retry
    // (their second job, under its own key), which the answer names and the worker is kicked for;
    // sent once more, the retry covers it: the same job, nothing queued.
    const kicks = { n: 0 };
    const end = await post(env, tenant, { session_id: "s-dead-end", messages: transcript.slice(0, 3) });
    await env.sql`update public.memory_jobs set status = 'dead' where id = ${end.job_id}`;
    const repost = await post(env, tenant, { session_id: "s-dead-end", messages: transcript.slice(0, 3) }, kicks);
    const retry = repost.retried?.[0]?.job_id;
    assert.notEqual(retry, end.job_id);
    assert.deepEqual(repost, {
      job_id: retry,
      status: "queued",
      deduplicated: false,
      new_messages: 0,
      retried: [{ job_id: retry, status: "queued", messages: 3, tries: 2, max_tries: 3 }],
    });
    const again = await post(env, tenant, { session_id: "s-dead-end", messages: transcript.slice(0, 3) }, kicks);
    assert.deepEqual(again, { job_id: retry, status: "queued", deduplicated: true, new_messages: 0 });
    assert.equal(kicks.n, 1);
    const [key] = await env.sql<
      { key: string }[]
    >`select idempotency_key as key from public.memory_jobs where id = ${retry!}`;
    assert.match(key!.key, /^session:s-dead-end:3:[0-9a-f]{64}:try2$/);
  } finally {
    await env.close();
  }
});

Deno.test("extract incremental: an edited history is extracted again from the first changed message", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    await post(env, tenant, { session_id: "s-edit", messages: transcript.slice(0, 4) });
    await post(env, tenant, { session_id: "s-edit", messages: transcript });
    const edited = transcript.map((m, i) => (i === 2 ? { role: "user", content: "Run only the unit tests." } : m));
    const res = await post(env, tenant, { session_id: "s-edit", messages: edited });
    assert.deepEqual([res.deduplicated, res.new_messages], [false, 5]);
    const job = (await extractJobs(env, tenant)).find((j) => j.id === res.job_id)!;
    assert.deepEqual([job.payload.offset, job.payload.messages, job.payload.context], [
      2,
      edited.slice(2),
      edited.slice(0, 2),
    ]);
    // The first message changed: the whole transcript is new.
    const rewritten = transcript.map((m, i) => (i === 0 ? { role: "user", content: "Hello." } : m));
    assert.equal((await post(env, tenant, { session_id: "s-edit", messages: rewritten })).new_messages, 7);
  } finally {
    await env.close();
  }
});

Deno.test("extract incremental: sessions are apart, ':' in their ids included; so are tenants", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    const messages = transcript.slice(0, 4);
    assert.equal((await post(env, tenant, { session_id: "a", messages })).new_messages, 4);
    assert.equal((await post(env, tenant, { session_id: "a:4", messages })).new_messages, 4);
    assert.equal((await post(env, tenant, { session_id: "a:4:1", messages: transcript })).new_messages, 7);
    assert.equal((await post(env, tenant, { session_id: "a", messages: transcript })).new_messages, 3);
    assert.equal((await post(env, tenant, { session_id: "a:4", messages: transcript })).new_messages, 3);
    assert.equal((await post(env, newTenant(), { session_id: "a", messages: transcript })).new_messages, 7);
    assert.equal((await jobsOf(env.sql, tenant)).length, 5);
  } finally {
    await env.close();
  }
});

Deno.test("extract incremental: concurrent POSTs of a growing transcript queue each new message once", async () => {
  const env = await writeEnv();
  try {
    for (let round = 0; round < 5; round++) {
      const tenant = newTenant();
      const session = `s-race-${round}`;
      await post(env, tenant, { session_id: session, messages: transcript.slice(0, 2) });
      // Lengths 3..7, twice each, in an order that differs per round: late short ones included.
      const lengths = [3, 4, 5, 6, 7, 3, 4, 5, 6, 7].sort((a, b) =>
        ((a * 7 + round * 3) % 10) - ((b * 7 + round * 3) % 10)
      );
      const answers = await Promise.all(
        lengths.map((n) => post(env, tenant, { session_id: session, messages: transcript.slice(0, n) })),
      );
      assert.equal(answers.reduce((s, a) => s + a.new_messages, 0), 5, JSON.stringify(answers));
      // The queued parts tile messages 0..7 exactly: no gap, no overlap.
      const parts = (await extractJobs(env, tenant)).map((j) =>
        [j.payload.offset, j.payload.offset + j.payload.messages.length] as const
      )
        .sort((a, b) => a[0] - b[0]);
      let end = 0;
      for (const [from, to] of parts) {
        assert.equal(from, end, JSON.stringify(parts));
        end = to;
      }
      assert.equal(end, 7);
    }
  } finally {
    await env.close();
  }
});
