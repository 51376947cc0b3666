// The drains writes start after their answer are bounded per function instance
// (docs/operations.md#drains-after-a-write): POSTs that arrive at once start one drain, not one
// each, so the model provider sees one request at a time from the instance; and the one drain
// still takes every job those POSTs queued, without waiting for the worker's next cron tick.
import assert from "node:assert/strict";
import { createHandler } from "../supabase/functions/memory-extract/handler.ts";
import { drainQueue } from "../supabase/functions/_shared/drain-queue.ts";
import { KICK_MAX_JOBS } from "../supabase/functions/_shared/drain-kick.ts";
import { reply } from "./fake_openai.ts";
import { userHeaders } from "./support/auth.ts";
import { chatMessage, postExtract } from "./support/extract.ts";
import { newTenant } from "./support/seed.ts";
import { waitUntil } from "./support/wait.ts";
import { patientEnv } from "./write_helpers.ts";

const extractJobs = (sql: Awaited<ReturnType<typeof patientEnv>>["env"]["sql"], tenant: string) =>
  sql<{ status: string; n: number }[]>`
    select status, count(*)::int as n from public.memory_jobs
     where owner_id = ${tenant} and kind = 'extract' group by status order by status`;

Deno.test("extract POSTs arriving at once start one drain, which still takes all their jobs", async () => {
  const { env, deps } = await patientEnv();
  // The model answers nothing until every POST below has been answered: the drains they start are all running then.
  const { promise: posted, resolve: allPosted } = Promise.withResolvers<void>();
  let drains = 0, running = 0, mostAtOnce = 0;
  try {
    const tenant = newTenant();
    // More jobs than two drains take (2 × KICK_MAX_JOBS): queued before, by POSTs that started no drain.
    const before = 2 * KICK_MAX_JOBS;
    for (let i = 0; i < before; i++) {
      const res = await postExtract(
        env,
        tenant,
        { session_id: `queued-${i}`, messages: [chatMessage(0)] },
        {},
        "service",
      );
      assert.equal(res.status, 202);
    }
    env.fake.onChat(() => true, reply.until(posted, reply.json({ stored: [], filtered: [] })));
    const handler = createHandler({
      ...deps,
      // The drain each POST would start, counted: the instance's own (drainQueue), kept to this tenant's jobs.
      kickWorker: async () => {
        drains++;
        mostAtOnce = Math.max(mostAtOnce, ++running);
        try {
          return await drainQueue(deps, { maxJobs: KICK_MAX_JOBS, ownerId: tenant });
        } finally {
          running--;
        }
      },
    });
    const flood = 3;
    const statuses = await Promise.all(Array.from({ length: flood }, async (_, i) => {
      const res = await handler(
        new Request("http://localhost/functions/v1/memory-extract", {
          method: "POST",
          headers: await userHeaders(tenant),
          body: JSON.stringify({ session_id: `flood-${i}`, messages: [chatMessage(0)] }),
        }),
      );
      await res.body?.cancel();
      return res.status;
    }));
    assert.deepEqual(statuses, Array(flood).fill(202));
    // Was 3: one drain per POST, each with a request to the model in flight.
    assert.equal(running, 1, "one drain runs for the POSTs that arrived at once");
    allPosted();

    // Every job is taken by the drains the POSTs started (no other worker runs here).
    await waitUntil(async () => {
      const jobs = await extractJobs(env.sql, tenant);
      return jobs.every((j) => j.status === "done") && running === 0;
    }, "the kicked drains took every job");
    assert.deepEqual([...await extractJobs(env.sql, tenant)], [{ status: "done", n: before + flood }]);
    assert.equal(mostAtOnce, 1);
    assert.equal(env.fake.maxChatInFlight, 1, "the provider saw one request at a time");
    // One after the other, and no more rounds than the POSTs' own drains: one each at most.
    assert.ok(drains <= flood, `${drains} drains for ${flood} POSTs`);
  } finally {
    allPosted();
    await waitUntil(() => Promise.resolve(running === 0), "the drains ended");
    await env.close();
  }
});
