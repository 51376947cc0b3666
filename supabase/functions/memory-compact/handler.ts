// memory-compact: context compaction (seed 000 "Context Compaction", seed 002 pre-compaction flush).
//
//   POST { session_id, messages (OpenAI format, tool calls included), context_window?,
//          trigger_tokens? (default 160000, or 80% of context_window), target_chunk_tokens? (60000),
//          project?, scope?, thread_id? }
//   → 200 { compacted: false, messages, tokens_before, tokens_after, trigger_tokens }   under the trigger
//   → 200 { compacted: true, messages, summary, summary_mode, llm_error?, tokens_before, tokens_after,
//           trigger_tokens, compacted_messages, candidates_queued, dedup_job_id, dedup_job_ids (100 candidates a job),
//           candidates_refused? { count, code: "queue_full", message, retry_after } at the tenant's queue bound }
//
// Over the trigger: the oldest ~60k tokens (never splitting a tool call from its results, never the
// system prompt) plus the session's prior summary go to ONE LLM call returning the merged summary
// and memory candidates (a list far over the trigger compacts more: the model reads the newest
// ~60k tokens of it, the rest as extractive lines beside the prior summary). The answer is: system message(s) + a "[Context compacted]" marker carrying
// the summary (role user: every OpenAI-compatible server accepts it mid-conversation, some reject a
// second system message) + the remaining messages. The merged summary replaces the session's
// layer-2 record; candidates go to the dedup queue (idempotency key from the chunk's hash).
//
// Without an LLM, or when it fails after its retries, compaction still happens with a
// deterministic extractive summary and rule-based candidates (summary_mode: "extractive"): an agent
// whose context is full must be able to go on, and a 503 would leave it stuck.
import { createHash } from "node:crypto";
import { z } from "zod";
import { intWithin, projectName, sessionId, threadId } from "../_shared/schemas.ts";
import { createFunctionApp, fetchHandler } from "../_shared/app.ts";
import { type Caller, requireCaller } from "../_shared/auth.ts";
import { chargeRequest, withTenant } from "../_shared/db.ts";
import { HttpError, json, methodNotAllowed, parseJsonBody, withBodyRead } from "../_shared/http.ts";
import { inHeavyTurn } from "../_shared/heavy-turns.ts";
import { rateLimit } from "../_shared/rate-limit.ts";
import { enqueueDedupJobs } from "../_shared/dedup-jobs.ts";
import { ChatMessageSchema, MAX_MESSAGES_PER_REQUEST } from "../_shared/llm.ts";
import { countConversationTokens, countTokens, messageTokenCounter, truncateToTokens } from "../_shared/tokens.ts";
import { type Candidate, prepareCandidates } from "../_shared/candidates.ts";
import { loadCategoryNames } from "../_shared/categories.ts";
import { extractByRules } from "../_shared/rule-extractor.ts";
import { addCounts, redactSecrets } from "../_shared/redact.ts";
import { recordRedactions } from "../_shared/redaction-events.ts";
import { stripUnsafeCharacters } from "../_shared/unsafe-characters.ts";
import { defaultScope, SCOPE_NEEDS_PROJECT, scopeHasProject, writeScope } from "../_shared/scopes.ts";
import { drainQueue, type QueueingDeps } from "../_shared/drain-queue.ts";
import { KICK_MAX_JOBS, kickDrain } from "../_shared/drain-kick.ts";
import { MARKER, planCompaction, splitForModel } from "./chunk.ts";
import { MessageRedactor } from "./redacted.ts";
import { readSessionSummary, writeSessionSummary } from "./session-summary.ts";
import {
  compactionMessages,
  CompactionOutputSchema,
  extractiveSummary,
  OLDER_TITLE,
  PROMPT_MESSAGE_TOKENS,
} from "./prompt.ts";

export const CompactRequestSchema = z.object({
  session_id: sessionId,
  messages: z.array(ChatMessageSchema).min(1, "messages must not be empty").max(MAX_MESSAGES_PER_REQUEST),
  context_window: intWithin(1_000, 10_000_000).optional(),
  trigger_tokens: intWithin(1_000, 10_000_000).optional(),
  target_chunk_tokens: intWithin(500, 1_000_000).optional(),
  project: projectName.optional(),
  /** Where candidates without a namespace of their own go; global only when asked (README "Scopes"). */
  scope: writeScope.optional(),
  thread_id: threadId.optional(),
}).strict().refine(scopeHasProject, SCOPE_NEEDS_PROJECT).refine(
  (b) => !b.context_window || !b.trigger_tokens || b.trigger_tokens < b.context_window,
  {
    message: "trigger_tokens must be below context_window",
    path: ["trigger_tokens"],
  },
);

export const DEFAULT_TRIGGER_TOKENS = 160_000;
export const DEFAULT_CHUNK_TOKENS = 60_000;
const SUMMARY_MAX_TOKENS = 5_000;

export function createHandler(deps: QueueingDeps) {
  const kick = deps.kickWorker ?? (() => drainQueue(deps, { maxJobs: KICK_MAX_JOBS }));
  const app = createFunctionApp<{ caller: Caller }>();
  app.use(rateLimit(() => "heavy"));
  app.post("/memory-compact", requireCaller(deps.config, deps.sql), async (c) => {
    const caller = c.get("caller");
    // Counting an 8 MiB conversation is the heavy part, and comes before any transaction: the
    // request is charged to the tenant's rate limit first (rate-limit.ts).
    await chargeRequest(deps.sql, caller);
    const tooLarge =
      `memory-compact takes at most ${deps.config.maxCompactBodyBytes} bytes (MAX_COMPACT_BODY_BYTES): compact earlier ` +
      "(a lower trigger_tokens or context_window), or raise MAX_COMPACT_BODY_BYTES on the server";
    // Parsing and counting the whole body take the tenant's heavy turn, once it is received (heavy-turns.ts).
    const received = await withBodyRead(c.req.raw, deps.config.maxCompactBodyBytes, tooLarge);
    const { body, tokensOf, before } = await inHeavyTurn(
      caller.tenantId,
      deps.config.dbStatementTimeoutMs,
      async () => {
        const body = await parseJsonBody(received, CompactRequestSchema, deps.config.maxCompactBodyBytes, { tooLarge });
        const tokensOf = messageTokenCounter();
        await tokensOf.prefill(body.messages); // up to 8 MiB: counted a slice at a time
        return { body, tokensOf, before: countConversationTokens(body.messages, tokensOf) };
      },
    );
    const trigger = body.trigger_tokens ??
      (body.context_window
        ? Math.min(DEFAULT_TRIGGER_TOKENS, Math.floor(body.context_window * 0.8))
        : DEFAULT_TRIGGER_TOKENS);
    if (before <= trigger) {
      return json({
        compacted: false,
        messages: body.messages,
        tokens_before: before,
        tokens_after: before,
        trigger_tokens: trigger,
      });
    }
    const target = Math.min(body.target_chunk_tokens ?? DEFAULT_CHUNK_TOKENS, trigger);
    const plan = planCompaction(body.messages, {
      totalTokens: before,
      triggerTokens: trigger,
      targetChunkTokens: target,
      summaryReserveTokens: SUMMARY_MAX_TOKENS + 200,
      tokensOf,
    });
    if (!plan) {
      throw new HttpError(
        422,
        "cannot_compact",
        "nothing to compact: the conversation is a system prompt and a single turn",
      );
    }

    const chunkHash = createHash("sha256").update(JSON.stringify(plan.chunk)).digest("hex");
    const summaryKey = { ownerId: caller.tenantId, sessionId: body.session_id, threadId: body.thread_id, chunkHash };
    const { stored, categories } = await withTenant(deps.sql, caller, async (tx) => ({
      stored: await readSessionSummary(tx, summaryKey),
      categories: await loadCategoryNames(tx),
    }));
    const prior = stored ?? plan.inlinePriorSummary;

    let summary: string;
    let extractiveCounts = {};
    let mode: "llm" | "extractive" = "llm";
    const stated = extractByRules(plan.chunk, { namespace: defaultScope(deps.config.namespaceRoot, body) });
    let proposed: Candidate[] = [];
    let llmError: string | undefined;
    let tokensUsed = 0;
    // Each message is redacted once for the prompt and the fallback summary, as far as they read
    // it, giving the event loop back as it goes (redacted.ts).
    const redactor = new MessageRedactor();
    if (deps.llm) {
      // The model reads the chunk's newest ~target tokens; an older part (a list far over the
      // trigger) comes as lines with the prior summary, so the prompt fits a model's window.
      const { older, shown, messageTokens } = splitForModel(
        plan.chunk,
        target,
        (m) => Math.min(tokensOf(m), PROMPT_MESSAGE_TOKENS),
        PROMPT_MESSAGE_TOKENS,
      );
      const olderLines = older.length === 0
        ? undefined
        : (await extractiveSummary(older, undefined, redactor, 4000, OLDER_TITLE)).text;
      const priorText = prior === undefined ? undefined : (await redactor.text(prior)).text;
      const prompt = compactionMessages(
        await redactor.messages(shown),
        [priorText, olderLines].filter(Boolean).join("\n\n") || undefined,
        deps.config.namespaceRoot,
        body,
        categories,
        messageTokens,
      );
      // The agent waits for its compaction: the model's part, retries and repair included, gets one
      // request's time (LLM_TIMEOUT_MS) from when its prompt is ready, then the summary is
      // extractive. A provider that hangs held it for 4 x LLM_TIMEOUT_MS and the backoff (243 s by
      // default), past the 150 s after which a hosted function answers 504, nothing written.
      const budget = new AbortController();
      const timer = setTimeout(() => budget.abort(), deps.config.llm.timeoutMs);
      try {
        const out = await deps.llm.completeJson(CompactionOutputSchema, prompt, {
          name: "compaction",
          signal: budget.signal,
          deadline: Date.now() + deps.config.llm.timeoutMs,
        });
        summary = out.value.summary;
        proposed = out.value.candidates;
        tokensUsed = out.usage.totalTokens;
      } catch (err) {
        llmError = (err as Error).message;
        mode = "extractive";
        ({ text: summary, counts: extractiveCounts } = await extractiveSummary(plan.chunk, prior, redactor));
      } finally {
        clearTimeout(timer);
      }
    } else {
      mode = "extractive";
      ({ text: summary, counts: extractiveCounts } = await extractiveSummary(plan.chunk, prior, redactor));
    }
    if (countTokens(summary) > SUMMARY_MAX_TOKENS) summary = truncateToTokens(summary, SUMMARY_MAX_TOKENS);
    // The summary is stored (the session's layer-2 record): no secret in it (redact.ts), and none of
    // the characters stored text may not hold (unsafe-characters.ts; a model wrote it).
    const summaryRedaction = redactSecrets(stripUnsafeCharacters(summary));
    summary = summaryRedaction.text;
    const prepared = prepareCandidates({ stated, proposed: [proposed] }, {
      root: deps.config.namespaceRoot,
      project: body.project,
      scope: body.scope,
      categories,
    });

    const marker = { role: "user" as const, content: `${MARKER}\n${summary}` };
    const messages = [...plan.head, marker, ...plan.rest];
    const after = countConversationTokens(messages, tokensOf);

    // At the tenant's queue bound (job_queue_tenant_max) the candidates' jobs are refused, not the
    // compaction: the agent whose context is full goes on with its summary, the model's work kept,
    // and the answer says the candidates were not queued (docs/operations.md#a-tenants-queued-jobs).
    // The refused write rolls back whole, so no batch of them is queued without the others.
    const write = (candidates: readonly unknown[]) =>
      withTenant(deps.sql, caller, async (tx) => {
        await writeSessionSummary(tx, summaryKey, summary, countTokens(summary));
        const jobs = await enqueueDedupJobs(tx, {
          ownerId: caller.tenantId,
          idempotencyKey: `compact:${body.session_id}:${chunkHash}`,
          candidates,
          payload: { session_id: body.session_id, thread_id: body.thread_id, project: body.project, origin: "compact" },
        });
        await recordRedactions(tx, {
          ownerId: caller.tenantId,
          writer: "compact",
          node: "context",
          threadId: body.thread_id,
          counts: addCounts(addCounts({ ...summaryRedaction.counts }, extractiveCounts), prepared.stats.redacted_kinds),
          dropped: prepared.stats.secrets_dropped,
        });
        await tx`
        insert into public.memory_events (owner_id, thread_id, node, op, status, meta)
        values (${caller.tenantId}, ${body.thread_id ?? null}, 'context', 'compact', ${
          mode === "llm" ? "ok" : llmError ? "error" : "skipped"
        },
                ${
          tx.json(
            {
              session_id: body.session_id,
              mode,
              tokens_before: before,
              tokens_after: after,
              chunk_tokens: plan.chunkTokens,
              compacted_messages: plan.chunk.length,
              candidates: candidates.length,
              candidates_refused: prepared.candidates.length - candidates.length,
              llm_tokens: tokensUsed,
              llm_error: llmError ?? null,
              redacted_chars: redactor.work.chars,
            } as never,
          )
        })`;
        return jobs;
      }, { threadId: body.thread_id });
    let refused: HttpError | undefined;
    const queued = await write(prepared.candidates).catch((err) => {
      if (!(err instanceof HttpError && err.code === "queue_full") || prepared.candidates.length === 0) throw err;
      refused = err;
      return write([]);
    });
    if (queued.queued > 0) kickDrain(kick, "memory-compact worker kick", deps.config.workerKickedDrains);

    return json({
      compacted: true,
      messages,
      summary,
      summary_mode: mode,
      ...(llmError ? { llm_error: llmError } : {}),
      tokens_before: before,
      tokens_after: after,
      trigger_tokens: trigger,
      compacted_messages: plan.chunk.length,
      candidates_queued: queued.queued,
      ...(refused
        ? {
          candidates_refused: {
            count: prepared.candidates.length,
            code: refused.code,
            message: refused.message,
            retry_after: Number(refused.headers?.["retry-after"]),
          },
        }
        : {}),
      dedup_job_id: queued.jobIds[0] ?? null,
      dedup_job_ids: queued.jobIds,
    });
  });
  app.all("/memory-compact", () => {
    throw methodNotAllowed(["POST"]);
  });
  return fetchHandler(app);
}
