// memory-extract: post-session extraction. POST enqueues an 'extract' job inside the caller's tenant
// transaction and answers 202 at once (the agent is never blocked); the worker does the LLM work.
// GET ?job_id= returns the job's status (RLS: only the owner sees it).
//
//   POST { session_id, messages (OpenAI chat format), project?, thread_id? }
//     → 202 { job_id, status, deduplicated }   (same session + same messages → the same job)
//   GET ?job_id=<uuid> → 200 { job_id, kind, status, attempts, last_error, result, ... } | 404
import { createHash } from "node:crypto";
import { z } from "zod";
import { authenticate } from "../_shared/auth.ts";
import { type Sql, withTenant } from "../_shared/db.ts";
import type { Embedder } from "../_shared/embeddings.ts";
import type { Config } from "../_shared/env.ts";
import { handleErrors, HttpError, json, methodNotAllowed, parseJsonBody, validate } from "../_shared/http.ts";
import { enqueueJob, getJob, jobView, runInBackground } from "../_shared/jobs.ts";
import type { Llm } from "../_shared/llm.ts";
import { drainQueue } from "../_shared/drain-queue.ts";
import { ExtractRequestSchema } from "../_shared/extraction.ts";

export interface ExtractDeps {
  sql: Sql;
  config: Config;
  embedder: Embedder;
  llm?: Llm;
  clock?: () => Date;
  /** Starts draining the queue after a 202; defaults to an in-process drain. Tests pass a no-op. */
  kickWorker?: () => Promise<unknown>;
}

const JobQuery = z.object({ job_id: z.uuid() });

/** Same session and same transcript → same key, so a retried POST never extracts twice. */
export function extractIdempotencyKey(sessionId: string, messages: unknown[]): string {
  const digest = createHash("sha256").update(JSON.stringify(messages)).digest("hex");
  return `session:${sessionId}:${digest}`;
}

export function createHandler(deps: ExtractDeps) {
  const kick = deps.kickWorker ?? (() => drainQueue(deps, { maxJobs: 10 }));
  return handleErrors(async (req) => {
    if (req.method === "GET") {
      const caller = await authenticate(req, deps.config);
      const query = validate(JobQuery, Object.fromEntries(new URL(req.url).searchParams), "query");
      const job = await withTenant(deps.sql, caller, (tx) => getJob(tx, query.job_id));
      if (!job) throw new HttpError(404, "not_found", "no such job");
      return json(jobView(job));
    }
    if (req.method !== "POST") throw methodNotAllowed(["GET", "POST"]);
    const caller = await authenticate(req, deps.config);
    const body = await parseJsonBody(req, ExtractRequestSchema, deps.config.maxBodyBytes);
    const queued = await withTenant(deps.sql, caller, (tx) =>
      enqueueJob(tx, {
        ownerId: caller.tenantId,
        kind: "extract",
        idempotencyKey: extractIdempotencyKey(body.session_id, body.messages),
        payload: body,
      }), { threadId: body.thread_id });
    if (!queued.deduplicated) runInBackground(kick, "memory-extract worker kick");
    return json({ job_id: queued.id, status: queued.status, deduplicated: queued.deduplicated }, 202);
  });
}
