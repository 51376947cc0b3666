// A model answer holding a NUL (U+0000) fails its job as any invalid answer does (retried with its
// error recorded, NUL left out) and the drain goes on to its next job. Before, fail_job refused the
// error text (Postgres text holds no NUL: 22021), the drain threw, its report was lost, the jobs after
// it in that drain were not run, and the job, left running until its lease expired, did the same at
// each claim. Real Postgres, the model faked at the HTTP boundary.
import assert from "node:assert/strict";
import { drainQueue } from "../supabase/functions/_shared/drain-queue.ts";
import { reply } from "./fake_openai.ts";
import { postExtract } from "./support/extract.ts";
import { newTenant } from "./support/seed.ts";
import { jobsOf, memoriesOf, queueDedupCandidate, writeEnv } from "./write_helpers.ts";

Deno.test("a model answer holding a NUL fails its job, not the drain: the next job runs", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    env.fake.onChat(() => true, reply.text("not json \u0000 at all"));
    const posted = await postExtract(env, tenant, {
      session_id: "nul",
      messages: [{ role: "user", content: "We deploy the api with fly." }],
    });
    assert.equal(posted.status, 202, JSON.stringify(posted.body));
    await queueDedupCandidate(env, tenant, "after-the-poison", "The api listens on port 8080.", "devai/project/shop");

    // The retry backs off (10 s): the drain's second claim is the next job.
    const report = await drainQueue(env.deps, { workerId: "w", maxJobs: 2, ownerId: tenant });
    assert.deepEqual([report.claimed, report.retried, report.done], [2, 1, 1], JSON.stringify(report));
    const [extract] = await jobsOf(env.sql, tenant, ["extract"]);
    assert.equal(extract!.status, "queued", "retried as any invalid answer is");
    assert.match(extract!.last_error ?? "", /last output: not json {2}at all$/, "recorded without the NUL");
    assert.deepEqual((await memoriesOf(env.sql, tenant)).map((m) => m.content), ["The api listens on port 8080."]);
  } finally {
    await env.close();
  }
});
