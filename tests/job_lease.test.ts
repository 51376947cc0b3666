// A crashed worker's jobs resume within one short lease, a slow live worker keeps its jobs, and
// nothing is applied twice. Workers lease a job for DEFAULT_LEASE_SECONDS (20 s) and renew the
// lease every third of it while they work (_shared/job-lease.ts); claim_jobs takes a job whose
// lease has expired. Everything here waits on events (the model receiving a request, a renewal,
// a claim), never for a fixed time.
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { createHandler } from "../supabase/functions/memory-extract/handler.ts";
import { drainQueue, processJob } from "../supabase/functions/_shared/drain-queue.ts";
import { DEFAULT_LEASE_SECONDS } from "../supabase/functions/_shared/job-lease.ts";
import { claimJobs } from "../supabase/functions/_shared/jobs.ts";
import { reply } from "./fake_openai.ts";
import { userHeaders } from "./support/auth.ts";
import { testDatabaseUrl } from "./support/config.ts";
import { newTenant } from "./support/seed.ts";
import { waitUntil } from "./support/wait.ts";
import { drainAll, memoriesOf, type WriteEnv, writeEnv } from "./write_helpers.ts";

const EXTRACT_MARK = "What from this conversation would help you do a better job next time?";
const fact = {
  content: "The shop deploys from the main branch.",
  type: "semantic",
  namespace: "devai/global/deploy",
  source: "discovery",
  priority: "medium",
  importance: 3,
};

async function queueExtract(env: WriteEnv, tenant: string): Promise<string> {
  const handler = createHandler({ ...env.deps, kickWorker: () => Promise.resolve() });
  const res = await handler(
    new Request("http://localhost/functions/v1/memory-extract", {
      method: "POST",
      headers: await userHeaders(tenant),
      body: JSON.stringify({
        session_id: "s-lease",
        messages: [{ role: "user", content: "Remember that the shop's CDN is Fastly." }],
      }),
    }),
  );
  assert.equal(res.status, 202);
  return (await res.json()).job_id;
}

/** A queued extract job whose model call answers only when the test says so. */
async function jobWithSlowModel(env: WriteEnv) {
  const tenant = newTenant();
  const jobId = await queueExtract(env, tenant);
  const answer = Promise.withResolvers<void>();
  env.fake.onChat(EXTRACT_MARK, reply.until(answer.promise, reply.json({ stored: [fact], filtered: [] })));
  return { tenant, jobId, answer: () => answer.resolve() };
}

async function lease(env: WriteEnv, jobId: string) {
  const [row] = await env.sql<{ status: string; locked_by: string | null; seconds_left: number }[]>`
    select status, locked_by, extract(epoch from locked_until - now())::float8 as seconds_left from public.memory_jobs where id = ${jobId}`;
  return row!;
}

Deno.test("lease: a drain leases a job for at most 20 s, so a dead worker's job is claimable within 20 s", async () => {
  const env = await writeEnv();
  const { tenant, jobId, answer } = await jobWithSlowModel(env);
  try {
    const drain = drainQueue(env.deps, { ownerId: tenant, workerId: "default-lease", kinds: ["extract"] });
    await env.fake.chatRequestsReceived(1); // the worker is inside the job, waiting for the model
    const held = await lease(env, jobId);
    assert.equal(held.locked_by, "default-lease");
    assert.ok(DEFAULT_LEASE_SECONDS <= 20);
    assert.ok(
      held.seconds_left > 0 && held.seconds_left <= DEFAULT_LEASE_SECONDS + 1,
      `lease ends in ${held.seconds_left} s`,
    );
    answer();
    assert.equal((await drain).done, 1);
  } finally {
    answer();
    await env.close();
  }
});

Deno.test("lease: a slow model call keeps its job: the heartbeat renews the lease and no other worker claims it", async () => {
  const env = await writeEnv();
  const { tenant, jobId, answer } = await jobWithSlowModel(env);
  try {
    // A one-second lease, renewed every third of a second: four renewals outlast the lease.
    const renewals: boolean[] = [];
    const drain = drainQueue(env.deps, {
      ownerId: tenant,
      workerId: "slow-worker",
      kinds: ["extract"],
      leaseSeconds: 1,
      onLeaseRenewed: (_id, held) => renewals.push(held),
    });
    await env.fake.chatRequestsReceived(1);
    const claimedBy: string[] = [];
    for (let i = 0; i < 4; i++) {
      // After each renewal (an event), another worker finds nothing to claim.
      await waitUntil(() => Promise.resolve(renewals.length > i), `lease renewal ${i + 1}`, { deadlineMs: 10_000 });
      claimedBy.push(
        ...(await claimJobs(env.sql, {
          workerId: "other-worker",
          kinds: ["extract"],
          ownerId: tenant,
          leaseSeconds: 1,
        })).map((j) => j.id),
      );
    }
    assert.ok(renewals.length >= 4);
    assert.deepEqual(claimedBy, [], "the job stayed with its worker");
    assert.ok(renewals.every((held) => held), JSON.stringify(renewals));
    assert.equal((await lease(env, jobId)).locked_by, "slow-worker");
    answer();
    const report = await drain;
    assert.deepEqual([report.done, report.lease_lost], [1, 0]);
  } finally {
    answer();
    await env.close();
  }
});

Deno.test("lease: a worker killed mid-job gives its job back within one lease; the job then completes once", async () => {
  const env = await writeEnv();
  let child: Deno.ChildProcess | undefined;
  try {
    const tenant = newTenant();
    const jobId = await queueExtract(env, tenant);
    const leaseSeconds = 2;
    env.fake.onChat(EXTRACT_MARK, reply.hang());
    child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        "--config",
        fileURLToPath(new URL("../supabase/functions/deno.json", import.meta.url)),
        fileURLToPath(new URL("./support/worker_child.ts", import.meta.url)),
      ],
      env: {
        DATABASE_URL: testDatabaseUrl(),
        FAKE_LLM_URL: env.fake.baseUrl,
        TENANT: tenant,
        WORKER_ID: "doomed-worker",
        LEASE_SECONDS: String(leaseSeconds),
      },
      stdout: "null",
      stderr: "null",
    }).spawn();
    await env.fake.chatRequestsReceived(1); // the child is inside the job, its rules' part queued
    const held = await lease(env, jobId);
    assert.equal(held.locked_by, "doomed-worker");
    assert.ok(held.seconds_left <= leaseSeconds, `lease ends in ${held.seconds_left} s`);
    child.kill("SIGKILL");
    await child.status;
    child = undefined;

    // No heartbeat any more: the lease runs out and another worker claims the job (the event).
    env.fake.reset();
    env.fake.onChat(EXTRACT_MARK, reply.json({ stored: [fact], filtered: [] }));
    const reclaimed = await waitUntil(
      async () => (await claimJobs(env.sql, { workerId: "rescuer", kinds: ["extract"], ownerId: tenant }))[0],
      `the job claimed again after its ${leaseSeconds} s lease`,
      { deadlineMs: 10 * leaseSeconds * 1000 },
    );
    assert.equal(reclaimed.id, jobId);
    assert.equal(reclaimed.attempts, 2);
    // The rescuer finishes it: the rules' part the dead worker queued is not queued again.
    await processJob(env.deps, reclaimed, "rescuer");
    const report = await drainAll(env.deps, tenant);
    assert.deepEqual([report.done, report.dead], [2, 0], JSON.stringify(report)); // the rules' and the model's dedup jobs
    const mems = await memoriesOf(env.sql, tenant);
    assert.deepEqual(mems.map((m) => m.content).sort(), [
      "The shop deploys from the main branch.",
      "The shop's CDN is Fastly.",
    ], "each memory once");
  } finally {
    child?.kill("SIGKILL");
    await child?.status;
    await env.close();
  }
});
