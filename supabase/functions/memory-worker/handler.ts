// memory-worker: drains the job queue. POST (service_role only: it acts across tenants), called by
// pg_cron through pg_net every few seconds in production; the local server calls drainQueue on a
// timer instead. Body (optional): { max_jobs?: 1-100 }. Answers the drain report. A drain keeps
// inside WORKER_DRAIN_BUDGET_MS (drain-deadline.ts), under the hosted function's wall-clock limit.
import { z } from "zod";
import { createFunctionApp, fetchHandler } from "../_shared/app.ts";
import { requireServiceRole } from "../_shared/auth.ts";
import { json, methodNotAllowed, parseJsonBody } from "../_shared/http.ts";
import { drainQueue, type WorkerDeps } from "../_shared/drain-queue.ts";
import { intWithin } from "../_shared/schemas.ts";

const DrainBody = z.object({ max_jobs: intWithin(1, 100).optional() }).strict();

export function createHandler(deps: WorkerDeps) {
  const app = createFunctionApp();
  app.post("/memory-worker", async (c) => {
    await requireServiceRole(c.req.raw, deps.config, deps.sql);
    // The same body rules as every route (MAX_BODY_BYTES, JSON); no body at all is {}.
    const body = await parseJsonBody(c.req.raw, DrainBody, deps.config.maxBodyBytes, { emptyAs: {} });
    const report = await drainQueue(deps, { maxJobs: body.max_jobs ?? 25 });
    return json(report);
  });
  app.all("/memory-worker", () => {
    throw methodNotAllowed(["POST"]);
  });
  return fetchHandler(app);
}
