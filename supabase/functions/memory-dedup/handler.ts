// memory-dedup: queue candidate memories for phase 2 (the worker runs dedupCandidates). For agents
// that extract on their own (e.g. a pre-compaction flush) and want the same dedup, linking and
// audit as extraction. POST { candidates, session_id?, thread_id?, project?, scope? } → 202.
// Candidates are validated (writing constraints) and capped before anything is queued. A
// candidate's namespace is the caller's word: kept when valid for the request, a 400 when not; a
// candidate without one goes to the request's scope (README "Scopes"). A category must be one of
// public.memory_categories (400 naming them otherwise).
import { createHash } from "node:crypto";
import { z } from "zod";
import { codeOrigin, projectName, sessionId, threadId } from "../_shared/schemas.ts";
import { createFunctionApp, fetchHandler } from "../_shared/app.ts";
import { type Caller, requireCaller } from "../_shared/auth.ts";
import { withTenant } from "../_shared/db.ts";
import { HttpError, invalidBody, json, methodNotAllowed, parseJsonBody } from "../_shared/http.ts";
import { rateLimit } from "../_shared/rate-limit.ts";
import { enqueueJob } from "../_shared/jobs.ts";
import { type Candidate, candidateFiles, CandidateSchema, prepareCandidates } from "../_shared/candidates.ts";
import { compressedText, indexKey, summaryText } from "../_shared/context/compress.ts";
import { loadCategoryNames, unknownCategory } from "../_shared/categories.ts";
import { recordRedactions, redactMetadata } from "../_shared/redaction-events.ts";
import { addCounts } from "../_shared/redact.ts";
import { drainQueue, type QueueingDeps } from "../_shared/drain-queue.ts";
import { KICK_MAX_JOBS, kickDrain } from "../_shared/drain-kick.ts";
import { callerNamespace, defaultScope, SCOPE_NEEDS_PROJECT, scopeHasProject, writeScope } from "../_shared/scopes.ts";
import type { ErrorIssue } from "../_shared/http.ts";

export const DedupRequestSchema = z.object({
  candidates: z.array(CandidateSchema.extend({
    /** Optional here: without one, the request's scope (README "Scopes"). */
    namespace: CandidateSchema.shape.namespace.optional(),
    // The caller's files and index key are refused when invalid (a NUL, a path over 500 characters,
    // a key of two words), the 400 naming which: a model's are dropped, and so were these, the
    // whole list without a word. Paths and keys are names: one with a character removed is another.
    // A summary or compressed form too long for its level likewise (a NUL in them is removed, as
    // in content: text, not a name).
    files: candidateFiles.optional(),
    index_key: indexKey.optional(),
    summary: summaryText.optional(),
    compressed: compressedText.optional(),
  })).min(1).max(20),
  session_id: sessionId.optional(),
  thread_id: threadId.optional(),
  project: projectName.optional(),
  scope: writeScope.optional(),
  /** Repository, branch and commit the candidates come from (docs/context.md#code-lineage). */
  lineage: codeOrigin.optional(),
}).strict().refine(scopeHasProject, SCOPE_NEEDS_PROJECT);

export function createHandler(deps: QueueingDeps) {
  const kick = deps.kickWorker ?? (() => drainQueue(deps, { maxJobs: KICK_MAX_JOBS }));
  const app = createFunctionApp<{ caller: Caller }>();
  app.use(rateLimit(() => "write"));
  app.post("/memory-dedup", requireCaller(deps.config, deps.sql), async (c) => {
    const caller = c.get("caller");
    const body = await parseJsonBody(c.req.raw, DedupRequestSchema, deps.config.maxBodyBytes);
    const root = deps.config.namespaceRoot;
    const categories = await withTenant(deps.sql, caller, (tx) => loadCategoryNames(tx));
    // Every problem of the batch in one 400: an unknown category names the configured ones.
    const issues: ErrorIssue[] = [];
    let unknown: HttpError | undefined;
    const candidates: Candidate[] = body.candidates.map((c, i) => {
      if (c.category && !categories.includes(c.category)) {
        const refused = unknownCategory(c.category, categories, ["candidates", i, "category"]);
        unknown ??= refused;
        issues.push(...refused.issues!);
      }
      if (c.namespace === undefined) return { ...c, namespace: defaultScope(root, body) };
      const ns = callerNamespace(c.namespace, root, body);
      if (!ns.ok) issues.push({ path: ["candidates", i, "namespace"], message: ns.message, code: "invalid_namespace" });
      return { ...c, namespace: ns.ok ? ns.namespace : c.namespace };
    });
    if (issues.length > 0) {
      if (unknown && issues.every((i) => i.code === "unknown_category")) {
        throw new HttpError(400, unknown.code, unknown.message, issues);
      }
      throw invalidBody(issues);
    }
    // An agent's candidates are model output (stated by nobody we can verify): capped, never user-stated.
    const prepared = prepareCandidates({ stated: [], proposed: [candidates] }, {
      root,
      project: body.project,
      scope: body.scope,
      categories,
      namespaces: "caller",
    });
    if (prepared.candidates.length === 0) {
      const reasons = {
        ...prepared.stats.reasons,
        ...(prepared.stats.secrets_dropped ? { only_secret: prepared.stats.secrets_dropped } : {}),
      };
      throw new HttpError(
        422,
        "no_valid_candidates",
        "every candidate violates the writing constraints or is nothing but a secret",
        [
          { path: ["candidates"], message: JSON.stringify(reasons) },
        ],
      );
    }
    const key = `api:${createHash("sha256").update(JSON.stringify(prepared.candidates)).digest("hex")}`;
    // The lineage is stored with each memory: redacted as remember's metadata is, counted with the candidates.
    const origin = redactMetadata(body.lineage);
    const queued = await withTenant(deps.sql, caller, async (tx) => {
      await recordRedactions(tx, {
        ownerId: caller.tenantId,
        writer: "dedup",
        node: "hotpath",
        threadId: body.thread_id,
        counts: addCounts({ ...prepared.stats.redacted_kinds }, origin.counts),
        dropped: prepared.stats.secrets_dropped + origin.dropped,
      });
      return await enqueueJob(tx, {
        ownerId: caller.tenantId,
        kind: "dedup",
        idempotencyKey: key,
        payload: {
          candidates: prepared.candidates,
          session_id: body.session_id,
          thread_id: body.thread_id,
          project: body.project,
          origin: "api",
          ...(origin.metadata ? { lineage: origin.metadata } : {}),
        },
      });
    });
    if (!queued.deduplicated) kickDrain(kick, "memory-dedup worker kick", deps.config.workerKickedDrains);
    return json(
      { job_id: queued.id, status: queued.status, deduplicated: queued.deduplicated, stats: prepared.stats },
      202,
    );
  });
  app.all("/memory-dedup", () => {
    throw methodNotAllowed(["POST"]);
  });
  return fetchHandler(app);
}
