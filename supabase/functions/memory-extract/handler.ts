// memory-extract: post-session extraction. POST enqueues an 'extract' job inside the caller's tenant
// transaction and answers 202 at once (the agent is never blocked); the worker does the LLM work.
// GET ?job_id= returns the job's status (RLS: only the owner sees it).
//
//   POST { session_id, messages (OpenAI chat format), after?, project?, scope?, thread_id? }
//     → 202 { job_id, status, deduplicated, new_messages, transcript: { count, digest }, retried?, given_up? }
//       Incremental per session: messages is the transcript so far; only the messages no earlier
//       (not dead) job of the session covers are queued, new_messages of them in job_id, with up to
//       CONTEXT_MESSAGES before them as context (next-part.ts). The same transcript again,
//       or one earlier jobs already cover: the covering job, deduplicated, new_messages 0.
//       Messages dead jobs held go in jobs of their own, one per dead job (`retried`: ids, messages, tries),
//       the same transcript as a dead job's included (then job_id is the retry); the third such job
//       to die gives them up, and an answer covering its end with it says given_up (queue-plan.ts,
//       docs/extraction.md).
//       With `after` (the `transcript` of an earlier answer), messages are only what follows it: a
//       long session never resends what it sent (409 transcript_mismatch when the session has no
//       such transcript, when a dead job's messages lie too far behind it, or when the earlier
//       messages it needs were cleared with their finished job's payload: resend the whole one).
//   GET ?job_id=<uuid> → 200 { job_id, kind, status, attempts, last_error, result, ..., part? } | 404
//       (part, for an extract job: { start, end, tries, given_up } of its session's transcript)
import { z } from "zod";
import { createFunctionApp, fetchHandler } from "../_shared/app.ts";
import { type Caller, requireCaller } from "../_shared/auth.ts";
import { chargeRequest, withTenant } from "../_shared/db.ts";
import { HttpError, json, methodNotAllowed, parseJsonBody, parseQueryString, withBodyRead } from "../_shared/http.ts";
import { rateLimit } from "../_shared/rate-limit.ts";
import { inHeavyTurn } from "../_shared/heavy-turns.ts";
import { getJob, jobView } from "../_shared/jobs.ts";
import { drainQueue, type QueueingDeps } from "../_shared/drain-queue.ts";
import { KICK_MAX_JOBS, kickDrain } from "../_shared/drain-kick.ts";
import { ChatMessageSchema, MAX_MESSAGES_PER_REQUEST } from "../_shared/llm.ts";
import { codeOrigin, projectName, sessionId, threadId, uuid } from "../_shared/schemas.ts";
import { redactMessages } from "../_shared/redact-json.ts";
import { EventLoopSlice } from "../_shared/event-loop-slice.ts";
import { recordRedactions, redactMetadata } from "../_shared/redaction-events.ts";
import { addCounts } from "../_shared/redact.ts";
import { SCOPE_NEEDS_PROJECT, scopeHasProject, writeScope } from "../_shared/scopes.ts";
import { partAfter, partOfWhole } from "./next-part.ts";
import { queuePlan } from "./queue-plan.ts";
import { partOfJob } from "./session-parts.ts";

const JobQuery = z.object({ job_id: uuid }).strict();

/** POST body (at most MAX_MESSAGES_PER_REQUEST messages; a longer session sends the rest with `after`): the session's transcript so far, or (with `after`) what follows what it already sent. */
export const ExtractRequestSchema = z.object({
  session_id: sessionId,
  messages: z.array(ChatMessageSchema).min(1, "messages must not be empty").max(MAX_MESSAGES_PER_REQUEST),
  /** The transcript these messages follow: the `transcript` of an earlier answer for this session. */
  after: z.object({
    count: z.number().int().min(1),
    digest: z.string().regex(/^[0-9a-f]{64}$/, "the hex digest an earlier answer gave"),
  }).strict().optional(),
  project: projectName.optional(),
  /** Where the session's memories go without a namespace of their own; global only when asked (README "Scopes"). */
  scope: writeScope.optional(),
  thread_id: threadId.optional(),
  /** Repository, branch and commit the session works on: recorded in the metadata of its memories (docs/context.md#code-lineage). */
  lineage: codeOrigin.optional(),
}).strict().refine(scopeHasProject, SCOPE_NEEDS_PROJECT);
export type ExtractRequest = z.infer<typeof ExtractRequestSchema>;

export function createHandler(deps: QueueingDeps) {
  const kick = deps.kickWorker ?? (() => drainQueue(deps, { maxJobs: KICK_MAX_JOBS }));
  const app = createFunctionApp<{ caller: Caller }>();
  app.use(rateLimit((req) => (req.method === "GET" ? "read" : "heavy")));
  app.get("/memory-extract", requireCaller(deps.config, deps.sql), async (c) => {
    const query = parseQueryString(c.req.url, JobQuery);
    const found = await withTenant(deps.sql, c.get("caller"), async (tx) => {
      const job = await getJob(tx, query.job_id);
      // An extract job's part of its session (tries, given_up: docs/extraction.md#a-message-that-always-kills-its-job).
      return job && { ...jobView(job), ...(job.kind === "extract" ? { part: await partOfJob(tx, job.id) } : {}) };
    });
    if (!found) throw new HttpError(404, "not_found", `job ${query.job_id} not found`);
    return json(found);
  });
  app.post("/memory-extract", requireCaller(deps.config, deps.sql), async (c) => {
    const caller = c.get("caller");
    // Parsing and redacting a body of up to MAX_EXTRACT_BODY_BYTES is the heavy part: the request
    // is charged to the tenant's rate limit first, so a refused one is a 429 before its body is read.
    await chargeRequest(deps.sql, caller);
    const tooLarge =
      `memory-extract takes at most ${deps.config.maxExtractBodyBytes} bytes (MAX_EXTRACT_BODY_BYTES): send only the ` +
      "messages after what this session already sent, with `after` set to the `transcript` {count, digest} of the last answer";
    // Parsing, redacting and queueing the whole body take the tenant's heavy turn, once it is received (heavy-turns.ts).
    const received = await withBodyRead(c.req.raw, deps.config.maxExtractBodyBytes, tooLarge);
    const queued = await inHeavyTurn(caller.tenantId, deps.config.dbStatementTimeoutMs, async () => {
      const slice = new EventLoopSlice(); // one for the request's work (event-loop-slice.ts)
      const sent = await parseJsonBody(received, ExtractRequestSchema, deps.config.maxExtractBodyBytes, {
        tooLarge,
        slice,
      });
      // The queued job stores the transcript: its secrets are redacted before anything else (the
      // digests, and what the worker and the model read, are of the redacted text), and a lone
      // surrogate (a tool output cut mid-emoji) becomes U+FFFD, which jsonb can store.
      const redaction = await redactMessages(sent.messages, slice);
      // Its lineage too, as remember's metadata is: stored with each memory it yields.
      const origin = redactMetadata(sent.lineage);
      const body = { ...sent, messages: redaction.messages, lineage: origin.metadata };
      return await withTenant(deps.sql, caller, async (tx) => {
        // One enqueue per session at a time, so two POSTs of a growing transcript cannot both queue
        // the same new messages (whichever order they arrive in: see next-part.ts).
        await tx`select pg_advisory_xact_lock(hashtextextended(${`devai-extract|${caller.tenantId}|${body.session_id}`}, 0))`;
        // What earlier parts of the session cover is looked up by digest (next-part.ts): a POST
        // reads what its own messages need, not the session (docs/extraction.md).
        const session = { tx, ownerId: caller.tenantId, sessionId: body.session_id };
        const plan = body.after
          ? await partAfter(session, body.after, body.messages, deps.config.maxExtractBodyBytes)
          : await partOfWhole(session, body.messages);
        if (!plan) throw transcriptMismatch(body.session_id, body.after!);
        if ("historyUnknown" in plan) throw historyUnknown(body.session_id);
        if ("payloadCleared" in plan) throw payloadCleared(body.session_id);
        // Counted after coverage is read: this write gives the transaction its xid, and the snapshot
        // recorded with the part must not see past it (record_extract_part refuses one that does).
        await recordRedactions(tx, {
          ownerId: caller.tenantId,
          writer: "extract",
          node: "hotpath",
          counts: addCounts({ ...redaction.counts }, origin.counts),
          dropped: origin.dropped,
          threadId: body.thread_id,
        });
        return await queuePlan(tx, {
          ownerId: caller.tenantId,
          session_id: body.session_id,
          project: body.project,
          scope: body.scope,
          thread_id: body.thread_id,
          lineage: body.lineage,
        }, plan);
      }, { threadId: body.thread_id });
    });
    if (!queued.deduplicated || queued.retried) {
      kickDrain(kick, "memory-extract worker kick", deps.config.workerKickedDrains);
    }
    return json({
      job_id: queued.id,
      status: queued.status,
      deduplicated: queued.deduplicated,
      new_messages: queued.newMessages,
      transcript: queued.transcript,
      ...(queued.retried ? { retried: queued.retried } : {}),
      ...(queued.givenUp ? { given_up: true } : {}),
    }, 202);
  });
  app.all("/memory-extract", () => {
    throw methodNotAllowed(["GET", "POST"]);
  });
  return fetchHandler(app);
}

/** The 409 that tells the client to send the whole transcript: the session never sent `after`. */
function transcriptMismatch(sessionId: string, after: { count: number; digest: string }): HttpError {
  return new HttpError(
    409,
    "transcript_mismatch",
    `session '${sessionId}' has no transcript of ${after.count} messages with that digest (it never sent one, or it is another ` +
      "session's): resend the whole transcript, from the first message, without `after`",
  );
}

/**
 * The 409 for a POST with `after` behind a dead job whose messages it cannot read back or reach
 * (docs/extraction.md#after-sending-only-what-follows): the whole transcript queues them again.
 */
function historyUnknown(sessionId: string): HttpError {
  return new HttpError(
    409,
    "transcript_mismatch",
    `session '${sessionId}': an earlier extract job of this session died, and what it held is too far back ` +
      "to be read from `after`: resend the whole transcript, from the first message, without `after`",
  );
}

/**
 * The 409 for a POST with `after` that needs messages of an earlier job whose transcript has been
 * cleared (finished more than job_keep_days ago: docs/extraction.md#where-coverage-is-kept): the
 * context of a point inside its part, or a dead job's messages to queue again. The whole
 * transcript needs no stored messages.
 */
function payloadCleared(sessionId: string): HttpError {
  return new HttpError(
    409,
    "transcript_mismatch",
    `session '${sessionId}': \`after\` needs messages of an earlier extract job of this session that are no longer ` +
      "stored (a finished job's transcript is cleared job_keep_days after it finished): resend the whole transcript, " +
      "from the first message, without `after`",
  );
}
