// The worker's 'extract' job, in two parts that fail apart:
//
// 1. rules: the user's own "remember …" statements and corrections (extractByRules, no model) are
//    queued for dedup first, in their own transaction, and the job's result records it. Whatever
//    the model does next, they are stored.
// 2. model: one LLM call per chunk; its candidates are queued and the job completes, in one
//    transaction. When the model fails (malformed output after its repair, a timeout, a 5xx), the
//    job's result says so (model.status 'failed', with the error) and the job is retried as usual
//    (backoff, then dead; postponed instead while the provider is unavailable, llm-outage.ts) for this part alone: a retry finds the rules' part recorded and does not
//    queue it again, and the chunks the model had answered (model.chunks, recorded after each
//    answer) and does not ask them again.
//
// A job's status therefore reads: done (both parts), queued/dead with result.rules.status
// 'stored' and result.model.status 'failed' (the model's part failed; the rules' candidates are
// stored), or dead with no result (the payload itself was bad).
import type { Sql, Tx } from "./db.ts";
import { withTenant } from "./db.ts";
import type { Config } from "./env.ts";
import type { Llm } from "./llm.ts";
import { completeJobInTx, type Job, PermanentJobError, recordJobProgress } from "./jobs.ts";
import { enqueueDedupJobs } from "./dedup-jobs.ts";
import { loadCategoryNames } from "./categories.ts";
import type { Candidate, PreparedCandidates } from "./candidates.ts";
import { recordRedactions } from "./redaction-events.ts";
import { type ExtractJobPayload, ExtractJobPayloadSchema, extractStated, extractWithModel } from "./extraction.ts";
import { transcriptChunks } from "./extraction-prompt.ts";
import { inWorkerTurn } from "./heavy-turns.ts";
import { BACKGROUND_REST_MS, EventLoopSlice } from "./event-loop-slice.ts";

export interface ExtractJobDeps {
  sql: Sql;
  config: Config;
  llm?: Llm;
  /** The drain's cut: the pass over the transcript waits for its turn until it at most (heavy-turns.ts). */
  drainCut?: AbortSignal;
}

/** What the rules' part did, as recorded in the job's result. */
interface RulesPart {
  status: "stored";
  candidates: number;
  /** The first dedup job (null without candidates); dedup_job_ids has them all, 100 candidates each. */
  dedup_job_id: string | null;
  dedup_job_ids: string[];
}

/** The model's part failed; modelError is what the LLM threw (the retry decision looks at it). */
export class ModelPartError extends Error {
  override name = "ModelPartError";
  constructor(readonly modelError: unknown, rules: RulesPart) {
    super(`model part failed (the rules' ${rules.candidates} candidate(s) are stored): ${describe(modelError)}`);
  }
}

function describe(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

export async function processExtract(deps: ExtractJobDeps, job: Job, workerId: string): Promise<void> {
  // The LLM calls happen outside any transaction: no locks are held while the model thinks.
  const categories = await loadCategoryNames(deps.sql);
  // The passes over the whole transcript (validating it, the rules, chunking it for the model) take
  // the tenant's heavy turn, as memory-extract's own pass over the body does; the model's calls,
  // which wait on the network, come after it (docs/operations.md#heavy-requests-take-turns).
  const { payload, found, stated, chunked } = await inWorkerTurn(job.owner_id, deps.drainCut, async () => {
    // A job whose transcript was cleared (payload_cleared_at) is never claimed: only finished jobs are
    // cleared, and memory_jobs_payload_cleared_finished keeps them finished (migration 20261128730000).
    const parsed = ExtractJobPayloadSchema.safeParse(job.payload);
    if (!parsed.success) throw new PermanentJobError(`invalid extract payload: ${parsed.error.message}`);
    const payload = parsed.data;
    const rules = extractStated(payload, { namespaceRoot: deps.config.namespaceRoot, categories });
    const chunked = deps.llm
      ? await transcriptChunks(payload, undefined, new EventLoopSlice(BACKGROUND_REST_MS))
      : undefined;
    return { payload, found: rules.found, stated: rules.prepared, chunked };
  });
  const base = { offset: payload.offset, messages: payload.messages.length };

  if (!deps.llm) {
    await withTenant(deps.sql, tenantOf(job), async (tx) => {
      const rules = await queueDedup(tx, job, payload, "rules", stated.candidates);
      const stats = {
        ...stated.stats,
        llm_calls: 0,
        rule_candidates: found.length,
        llm_candidates: 0,
        filtered_by_llm: 0,
      };
      await recordEvent(tx, job, payload, { mode: "rules", candidates: rules.candidates, stats, tokens: 0 });
      await completeJobInTx(tx, job.id, workerId, {
        ...base,
        mode: "rules",
        candidates: rules.candidates,
        rules,
        model: { status: "skipped" },
        stats,
        usage: null,
      });
    }, { threadId: payload.thread_id });
    return;
  }

  const recorded = (job.result as { rules?: RulesPart } | null)?.rules;
  const rules = recorded?.status === "stored" ? recorded : await withTenant(deps.sql, tenantOf(job), async (tx) => {
    const part = await queueDedup(tx, job, payload, "rules", stated.candidates);
    await recordJobProgress(tx, job.id, workerId, { ...base, rules: part, model: { status: "pending" } }, {
      inTenantTx: true,
    });
    return part;
  }, { threadId: payload.thread_id });

  // The chunks an earlier attempt had answered are not asked again: each answer is recorded.
  let chunks = (job.result as { model?: { chunks?: unknown } } | null)?.model?.chunks;
  let failedWithoutContext = false;
  let model;
  try {
    model = await extractWithModel(payload, found, {
      llm: deps.llm,
      namespaceRoot: deps.config.namespaceRoot,
      categories,
      chunked,
      resume: chunks,
      lastAttempt: job.attempts >= job.max_attempts,
      retry: job.attempts > 1,
      onFailedWithoutContext: () => (failedWithoutContext = true),
      onChunk: (progress) => {
        chunks = progress;
        return recordJobProgress(deps.sql, job.id, workerId, { model: { status: "running", chunks: progress } });
      },
    });
  } catch (err) {
    // With the attempt: a dead job whose result says so for its last attempt failed on its own
    // (memory-extract/dead-runs.ts); one whose last attempt recorded nothing (a worker stopped) did not say.
    const without = failedWithoutContext ? { failed_without_context: true } : {};
    await recordJobProgress(deps.sql, job.id, workerId, {
      model: { status: "failed", attempt: job.attempts, error: describe(err).slice(0, 1000), chunks, ...without },
    });
    throw new ModelPartError(err, rules);
  }
  await withTenant(deps.sql, tenantOf(job), async (tx) => {
    const queued = await queueDedup(tx, job, payload, "model", model.candidates);
    const candidates = rules.candidates + queued.candidates;
    await recordEvent(tx, job, payload, {
      mode: "llm+rules",
      candidates,
      stats: model.stats,
      tokens: model.usage.totalTokens,
    });
    await completeJobInTx(tx, job.id, workerId, {
      ...base,
      mode: "llm+rules",
      candidates,
      rules,
      model: {
        status: "done",
        candidates: queued.candidates,
        dedup_job_id: queued.dedup_job_id,
        dedup_job_ids: queued.dedup_job_ids,
      },
      stats: model.stats,
      usage: model.usage,
    });
  }, { threadId: payload.thread_id });
}

function tenantOf(job: Job) {
  return { tenantId: job.owner_id, actor: "worker:extract" };
}

/** Queues one part's candidates for dedup (idempotent per job and part). */
async function queueDedup(
  tx: Tx,
  job: Job,
  payload: ExtractJobPayload,
  part: "rules" | "model",
  candidates: Candidate[],
): Promise<RulesPart> {
  const queued = await enqueueDedupJobs(tx, {
    ownerId: job.owner_id,
    idempotencyKey: `extract:${job.id}:${part}`,
    candidates,
    payload: {
      session_id: payload.session_id,
      thread_id: payload.thread_id,
      project: payload.project,
      origin: "extract",
      source_job_id: job.id,
      ...(payload.lineage ? { lineage: payload.lineage } : {}),
    },
  });
  return {
    status: "stored",
    candidates: candidates.length,
    dedup_job_id: queued.jobIds[0] ?? null,
    dedup_job_ids: queued.jobIds,
  };
}

async function recordEvent(
  tx: Tx,
  job: Job,
  payload: ExtractJobPayload,
  what: { mode: string; candidates: number; stats: PreparedCandidates["stats"]; tokens: number },
): Promise<void> {
  await recordRedactions(tx, {
    ownerId: job.owner_id,
    writer: "extract",
    node: "worker",
    threadId: payload.thread_id,
    counts: what.stats.redacted_kinds,
    dropped: what.stats.secrets_dropped,
  });
  await tx`
    insert into public.memory_events (owner_id, thread_id, node, op, status, meta)
    values (${job.owner_id}, ${payload.thread_id ?? null}, 'worker', 'extract', 'ok',
            ${
    tx.json(
      {
        job_id: job.id,
        session_id: payload.session_id,
        offset: payload.offset,
        messages: payload.messages.length,
        ...what,
      } as never,
    )
  })`;
}
