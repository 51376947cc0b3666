// memory-dedup: queue candidate memories for phase 2 (the worker runs dedupCandidates). For agents
// that extract on their own (e.g. a pre-compaction flush, seed 002) and want the same dedup,
// linking and audit as extraction. POST { candidates, session_id?, thread_id?, project? } → 202.
// Candidates are validated (seed 001 §9) and capped before anything is queued.
import { createHash } from "node:crypto";
import { z } from "zod";
import { projectName, sessionId, threadId } from "../_shared/schemas.ts";
import { authenticate } from "../_shared/auth.ts";
import { withTenant } from "../_shared/db.ts";
import { handleErrors, HttpError, json, methodNotAllowed, parseJsonBody } from "../_shared/http.ts";
import { routeOf } from "../_shared/routes.ts";
import { limitRequests } from "../_shared/rate-limit.ts";
import { enqueueJob, runInBackground } from "../_shared/jobs.ts";
import { CandidateSchema, prepareCandidates } from "../_shared/candidates.ts";
import { loadCategoryNames } from "../_shared/categories.ts";
import { drainQueue, type QueueingDeps } from "../_shared/drain-queue.ts";

export const DedupRequestSchema = z.object({
  candidates: z.array(CandidateSchema).min(1).max(20),
  session_id: sessionId.optional(),
  thread_id: threadId.optional(),
  project: projectName.optional(),
}).strict();

export function createHandler(deps: QueueingDeps) {
  const kick = deps.kickWorker ?? (() => drainQueue(deps, { maxJobs: 10 }));
  return handleErrors(limitRequests(() => "write", async (req) => {
    routeOf(req, "memory-dedup", [""]);
    if (req.method !== "POST") throw methodNotAllowed(["POST"]);
    const caller = await authenticate(req, deps.config);
    const body = await parseJsonBody(req, DedupRequestSchema, deps.config.maxBodyBytes);
    // An agent's candidates are model output (stated by nobody we can verify): capped, never user-stated.
    const categories = await withTenant(deps.sql, caller, (tx) => loadCategoryNames(tx));
    const prepared = prepareCandidates({ stated: [], proposed: [body.candidates] }, {
      root: deps.config.namespaceRoot,
      project: body.project,
      categories,
    });
    if (prepared.candidates.length === 0) {
      throw new HttpError(422, "no_valid_candidates", "every candidate violates the writing constraints", [
        { path: ["candidates"], message: JSON.stringify(prepared.stats.reasons) },
      ]);
    }
    const key = `api:${createHash("sha256").update(JSON.stringify(prepared.candidates)).digest("hex")}`;
    const queued = await withTenant(deps.sql, caller, (tx) =>
      enqueueJob(tx, {
        ownerId: caller.tenantId,
        kind: "dedup",
        idempotencyKey: key,
        payload: { candidates: prepared.candidates, session_id: body.session_id, thread_id: body.thread_id, project: body.project, origin: "api" },
      }));
    if (!queued.deduplicated) runInBackground(kick, "memory-dedup worker kick");
    return json({ job_id: queued.id, status: queued.status, deduplicated: queued.deduplicated, stats: prepared.stats }, 202);
  }));
}
