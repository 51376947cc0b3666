// The queue worker's passes over a whole queued transcript take the heavy turns the requests take
// (_shared/heavy-turns.ts, docs/operations.md#heavy-requests-take-turns): an extract job's rules and
// chunking, a session consolidation's. With both of the process's turns held, the worker's pass
// waits (its job's lease renewed meanwhile) while another tenant's request is answered, and runs
// once a turn is given back; a wait that reaches its drain's cut hands the job back, nothing run and
// its attempt given back (migration 20261208200000).
// The passes give the event loop back as they count (event-loop-slice.ts). Real Postgres, the fake
// model at the HTTP boundary; ordered by events, never timed.
import assert from "node:assert/strict";
import { heavyTurns } from "../supabase/functions/_shared/heavy-turns.ts";
import { drainQueue } from "../supabase/functions/_shared/drain-queue.ts";
import { chunkTranscript } from "../supabase/functions/_shared/extraction-prompt.ts";
import { chunkEpisodes } from "../supabase/functions/_shared/consolidation-prompt.ts";
import { reply } from "./fake_openai.ts";
import { ManualClock } from "./support/clock.ts";
import { whoEndsFirst } from "./support/event-loop.ts";
import { chatTranscript, postExtract } from "./support/extract.ts";
import { heldTurn } from "./support/heavy-turns.ts";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant } from "./support/seed.ts";
import { waitUntil } from "./support/wait.ts";
import { writeEnv } from "./write_helpers.ts";

const EXTRACT_MARK = "What from this conversation would help you do a better job next time?";
const CONSOLIDATION_MARK = "The conversation is given as numbered messages";

async function queueExtract(env: Awaited<ReturnType<typeof writeEnv>>, tenant: string) {
  const res = await postExtract(env, tenant, { session_id: "s-turns", messages: chatTranscript(4) });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  return res.body.job_id;
}

const jobStatus = async (env: Awaited<ReturnType<typeof writeEnv>>, id: string) =>
  (await env.sql<
    { status: string; attempts: number }[]
  >`select status, attempts from public.memory_jobs where id = ${id}`)[0]!;

Deno.test("worker heavy turns: with both turns held, a queued extraction's pass waits holding its lease, another tenant is answered, and it runs once a turn is given back", async () => {
  const env = await writeEnv();
  const [a, b, x, y] = [newTenant(), newTenant(), newTenant(), newTenant()];
  env.fake.onChat(EXTRACT_MARK, reply.json({ stored: [], filtered: [] }));
  const job = await queueExtract(env, a);
  const [heldX, heldY] = [await heldTurn(x), await heldTurn(y)];
  try {
    let renewed = 0;
    const drained = drainQueue(env.deps, {
      workerId: "w-turns",
      ownerId: a,
      maxJobs: 1,
      leaseSeconds: 1, // renewed every 333 ms: expired many times over without the renewals
      onLeaseRenewed: (_id, held) => held && renewed++,
    });
    await waitUntil(
      () => Promise.resolve(heavyTurns.load(a).waiting === 1 && renewed >= 3),
      "the worker's pass waits for a's turn, its lease renewed three times meanwhile",
    );
    const remembered = await memoryApi(env.sql)("POST", "/memory/remember", {
      as: b,
      body: { content: "Billing runs on Postgres." },
    });
    assert.equal(remembered.status, 201, JSON.stringify(remembered.body));
    assert.deepEqual(heavyTurns.load(a), { active: 0, waiting: 1 }, "the pass still waits");
    assert.equal(env.fake.chatRequests().length, 0, "nothing of the job ran");
    assert.equal((await jobStatus(env, job)).status, "running");

    await heldX.release();
    const report = await drained;
    assert.deepEqual([report.claimed, report.done, report.lease_lost, report.cut], [1, 1, 0, 0]);
    assert.equal(env.fake.chatRequests().length, 1, "the model asked once");
    assert.deepEqual(await jobStatus(env, job), { status: "done", attempts: 1 });
    assert.deepEqual(heavyTurns.load(a), { active: 0, waiting: 0 });
  } finally {
    await heldX.release();
    await heldY.release();
    await env.close();
  }
});

Deno.test("worker heavy turns: a pass that waits for its turn until the drain's cut runs nothing, and the job is queued again with its attempt given back, then done by the next drain", async () => {
  const env = await writeEnv();
  const a = newTenant();
  env.fake.onChat(EXTRACT_MARK, reply.json({ stored: [], filtered: [] }));
  const job = await queueExtract(env, a);
  const held = await heldTurn(a);
  try {
    const clock = new ManualClock();
    const drained = drainQueue(env.deps, { workerId: "w-cut", ownerId: a, maxJobs: 1, backoffBaseMs: 0, clock });
    await waitUntil(() => Promise.resolve(heavyTurns.load(a).waiting === 1), "the worker's pass waits for a's turn");
    clock.toNextTimer();
    const report = await drained;
    assert.deepEqual([report.claimed, report.done, report.cut, report.handed_back, report.retried], [1, 0, 1, 1, 0]);
    assert.match(report.jobs[0]!.error!, /TurnCutError: waited \d+ ms for a heavy turn/);
    assert.equal(env.fake.chatRequests().length + env.fake.probeRequests().length, 0, "nothing asked");
    assert.deepEqual(await jobStatus(env, job), { status: "queued", attempts: 0 }, "its attempt given back");
    assert.deepEqual(heavyTurns.load(a), { active: 1, waiting: 0 }, "the wait left a's queue");

    await held.release();
    const next = await drainQueue(env.deps, { workerId: "w-next", ownerId: a, maxJobs: 1 });
    assert.deepEqual([next.claimed, next.done], [1, 1]);
    assert.deepEqual(await jobStatus(env, job), { status: "done", attempts: 1 });
  } finally {
    await held.release();
    await env.close();
  }
});

Deno.test("worker heavy turns: a session's consolidation waits for its tenant's turn before it reads the episodes through", async () => {
  const env = await writeEnv();
  const a = newTenant();
  env.fake.onChat(CONSOLIDATION_MARK, reply.json({ stored: [], filtered: [] }));
  const api = memoryApi(env.sql);
  const sent = await api("POST", "/memory/episodes", {
    as: a,
    body: { session_id: "s-consolidate", messages: [{ role: "user", content: "we deploy on fridays" }] },
  });
  assert.equal(sent.status, 201, JSON.stringify(sent.body));
  assert.equal((await api("POST", "/memory/sessions/s-consolidate/end", { as: a })).status, 202);
  const held = await heldTurn(a);
  try {
    const drained = drainQueue(env.deps, { workerId: "w-cons", ownerId: a, kinds: ["consolidate"], maxJobs: 1 });
    await waitUntil(() => Promise.resolve(heavyTurns.load(a).waiting === 1), "the consolidation waits for a's turn");
    assert.equal(env.fake.chatRequests().length, 0);
    await held.release();
    const report = await drained;
    assert.deepEqual([report.claimed, report.done], [1, 1], JSON.stringify(report.jobs));
    assert.equal(env.fake.chatRequests().length, 1);
  } finally {
    await held.release();
    await env.close();
  }
});

/** Messages of prose: 300 of 4,000 characters, far more than a slice (10 ms) of counting on any machine. */
const longMessages = () =>
  Array.from({ length: 300 }, (_, i) => ({
    role: i % 2 ? "assistant" : "user",
    content: `message ${i}: ${"we refactor the billing service and its database migrations again ".repeat(60)}`,
  }));

Deno.test("worker heavy turns: chunking a queued transcript or a session gives the event loop back", async () => {
  const messages = longMessages();
  assert.deepEqual(await whoEndsFirst(async () => await chunkTranscript(messages), "chunking"), [
    "other request",
    "chunking",
  ]);
  assert.deepEqual(await whoEndsFirst(async () => await chunkEpisodes(messages), "chunking episodes"), [
    "other request",
    "chunking episodes",
  ]);
});
