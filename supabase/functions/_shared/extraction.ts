// Phase 1 of the write path, run by the worker for an 'extract' job, in two parts: the rules (the
// user's own "remember …" and corrections, no model) and, when configured, one LLM call per
// ~60k-token chunk → validated, scoped, capped candidates for the dedup queue. The worker queues
// the rules' candidates before it asks the model (extract-job.ts), so a failing model loses none.
//
// Extraction is incremental per session: memory-extract queues only the messages no earlier job of
// the session covers (`messages`, starting at `offset` in the session's transcript), plus a few
// messages before them as `context`. The model reads the context to understand the new part but is
// told to extract nothing from it; the rule-based extractor never sees it.
import { z } from "zod";
import {
  addUsage,
  emptyUsage,
  type Llm,
  LlmOutputError,
  LlmRequestError,
  type LlmResult,
  type LlmUsage,
  StoredChatMessageSchema,
} from "./llm.ts";
import { refusesContent } from "./llm-retry.ts";
import { DrainCutError } from "./drain-deadline.ts";
import { projectName, queuedCodeOrigin, sessionId, threadId } from "./schemas.ts";
import { type Candidate, prepareCandidates, type PreparedCandidates } from "./candidates.ts";
import {
  extractionMessages,
  type ExtractionOutput,
  ExtractionOutputSchema,
  type TranscriptChunks,
  transcriptChunks,
} from "./extraction-prompt.ts";
import { extractByRules } from "./rule-extractor.ts";
import { defaultScope, writeScope } from "./scopes.ts";

/** How many already-extracted messages an incremental job carries as context. */
export const CONTEXT_MESSAGES = 6;

/** Payload of an 'extract' job (queued by memory-extract). */
export const ExtractJobPayloadSchema = z.object({
  session_id: sessionId,
  /** The messages to extract from: the part of the transcript no earlier job covered. */
  messages: z.array(StoredChatMessageSchema).min(1).max(1_000_000),
  /** Already-extracted messages just before `messages`, for context only. */
  context: z.array(StoredChatMessageSchema).max(CONTEXT_MESSAGES).default([]),
  /** Index of messages[0] in the session's transcript (0: the whole transcript). */
  offset: z.number().int().min(0).default(0),
  project: projectName.optional(),
  /** Where the session's memories go without a namespace of their own (scopes.ts). */
  scope: writeScope.optional(),
  thread_id: threadId.optional(),
  /** Repository, branch and commit the session's memories come from. */
  lineage: queuedCodeOrigin.optional(),
}).strict();
export type ExtractJobPayload = z.input<typeof ExtractJobPayloadSchema>;

/** The rule-based part: the user's own statements, validated and scoped; never needs a model. */
export function extractStated(
  payload: ExtractJobPayload,
  opts: { namespaceRoot: string; categories: readonly string[] },
): { found: Candidate[]; prepared: PreparedCandidates } {
  const found = extractByRules(payload.messages, { namespace: defaultScope(opts.namespaceRoot, payload) });
  const prepared = prepareCandidates({ stated: found, proposed: [] }, {
    root: opts.namespaceRoot,
    project: payload.project,
    scope: payload.scope,
    categories: opts.categories,
  });
  return { found, prepared };
}

export interface ModelExtraction {
  /** The model's candidates: capped per chunk, none repeating a stated one. */
  candidates: Candidate[];
  /** Of the whole batch (stated and the model's), as prepareCandidates counts them. */
  stats: PreparedCandidates["stats"] & {
    chunks: number;
    /**
     * Extraction requests this attempt made (answered or failed, with the context or without it);
     * each may be several HTTP calls (the client's retries, a repair round trip: usage.requests).
     * The chunks_resumed chunks were answered by earlier attempts and are not counted.
     */
    llm_calls: number;
    /** Chunks an earlier attempt of the job had answered (not asked again). */
    chunks_resumed: number;
    /** A request with the context failed where one without it did not, so the chunks went without it (answerChunk). */
    context_dropped: boolean;
    rule_candidates: number;
    llm_candidates: number;
    filtered_by_llm: number;
  };
  usage: LlmUsage;
}

/**
 * The model's chunks answered so far: what a retry of the job starts from (extract-job.ts keeps it
 * in the job's result), so a model that fails at the 30th chunk of 35 costs the 5 left, not 35.
 */
export interface ChunkProgress {
  /** How many chunks the messages make (a retry of the same job makes the same chunks). */
  chunks: number;
  /** Each answered chunk's proposals, in chunk order. */
  proposed: ExtractionOutput["stored"][];
  filtered: number;
  usage: LlmUsage;
  /** A request with the context failed where one without it did not (answerChunk): this job's chunks go without it. */
  withoutContext?: true;
}

const ChunkProgressSchema = z.object({
  chunks: z.number().int().min(1),
  proposed: z.array(ExtractionOutputSchema.shape.stored),
  filtered: z.number().int().min(0),
  withoutContext: z.literal(true).optional(),
  usage: z.object({
    promptTokens: z.number(),
    completionTokens: z.number(),
    totalTokens: z.number(),
    requests: z.number(),
  }),
});

/** One extraction request for a chunk, with the context or without it. */
type AskChunk = (withContext: boolean) => Promise<LlmResult<ExtractionOutput>>;

/**
 * Whether a failure of the request with the context, when the one without it was answered, says
 * the context is what fails: a refusal (400, 413, 422, a 429 over the limit alone), a 5xx or output
 * that is not valid, which a provider failing every request holding a message gives each time. A
 * busy 429, a timeout, a reset, a 408 or 409 say the provider is busy or unreachable, not what the
 * request holds: they never drop it.
 */
function failsForContext(err: unknown): boolean {
  if (err instanceof LlmOutputError) return true;
  return err instanceof LlmRequestError && err.status !== undefined &&
    (refusesContent(err.status, err.message) || err.status >= 500);
}

/**
 * A chunk's answer, with the context unless the job dropped it. A provider that fails every
 * request holding a message fails the parts whose context holds it too, though nothing in them
 * fails: so before a failure of the request with the context kills the job (the provider refused
 * it, which is not retried, or any failure at the job's last attempt), the chunk is asked without
 * it. A refusal is the provider's word on what the request holds, never an outage's: its answer
 * without the context is taken. Otherwise the context is dropped only when the request with it,
 * asked once more after the one without it was answered, fails again for what it holds
 * (failsForContext): a provider that is back answers it and the context is kept; a busy one's
 * failure kills the job as any. At the last attempt, the chunk the attempt starts at (the earlier
 * attempts failed there with the context) is asked without it first, then with it: two requests
 * where the other order spends three, and one failure, not two (a timeout's retries take minutes).
 * docs/extraction.md#a-failing-context.
 */
async function answerChunk(
  ask: AskChunk,
  progress: ChunkProgress,
  at: { lastAttempt: boolean; failedBefore: boolean },
  dropped: () => Promise<unknown> | undefined,
): Promise<LlmResult<ExtractionOutput>> {
  if (progress.withoutContext) return await ask(false);
  if (!(at.lastAttempt && at.failedBefore)) {
    try {
      return await ask(true);
    } catch (err) {
      const refused = err instanceof LlmRequestError && refusesContent(err.status, err.message);
      // A drain's cut sends nothing more: asking without the context would "fail" unsent.
      if ((!refused && !at.lastAttempt) || err instanceof DrainCutError) throw err;
      addUsage(progress.usage, usageOf(err));
      if (refused) {
        // Recorded before the request without it: a transient failure of that one retries it alone.
        progress.withoutContext = true;
        await dropped();
        return await ask(false);
      }
    }
  }
  const alone = await ask(false);
  try {
    const withIt = await ask(true);
    addUsage(progress.usage, alone.usage);
    return withIt;
  } catch (err) {
    addUsage(progress.usage, usageOf(err));
    if (!failsForContext(err)) throw err;
  }
  progress.withoutContext = true;
  await dropped();
  return alone;
}

/** The tokens and requests a failed call spent (both errors of llm.ts carry them). */
function usageOf(err: unknown): LlmUsage {
  return err instanceof LlmRequestError || err instanceof LlmOutputError ? err.usage : emptyUsage();
}

/**
 * The model's part: one LLM call per ~60k-token chunk of the new messages (the context shown as
 * context, unless a request holding it failed and one without it did not: answerChunk).
 * `stated` are the rules' raw candidates, so a model paraphrase of the user's own words is dropped
 * in favour of them. Chunks `resume` holds are not asked again; `onChunk` hears the progress after
 * each answer and when the context is dropped. Throws what the LLM throws.
 */
export async function extractWithModel(
  payload: ExtractJobPayload,
  stated: Candidate[],
  deps: {
    llm: Llm;
    namespaceRoot: string;
    categories: readonly string[];
    chunkTokens?: number;
    /** The transcript already chunked (transcriptChunks, with deps.chunkTokens). */
    chunked?: TranscriptChunks;
    resume?: unknown;
    onChunk?: (progress: ChunkProgress) => Promise<unknown>;
    /** The job's last attempt: a failure now kills it (answerChunk). */
    lastAttempt?: boolean;
    /** An earlier attempt of the job failed: at the chunk this one starts at, with the context. */
    retry?: boolean;
    /**
     * A request without the context failed, which ends the attempt: the part failed on its own
     * (extract-job.ts records it; next-part.ts then queues the part's last job with its context).
     */
    onFailedWithoutContext?: () => void;
  },
): Promise<ModelExtraction> {
  const { chunks, context } = deps.chunked ?? await transcriptChunks(payload, deps.chunkTokens);
  const resumed = ChunkProgressSchema.safeParse(deps.resume);
  const progress: ChunkProgress = resumed.success && resumed.data.chunks === chunks.length &&
      resumed.data.proposed.length <= chunks.length
    ? resumed.data
    : { chunks: chunks.length, proposed: [], filtered: 0, usage: emptyUsage() };
  const chunksResumed = progress.proposed.length;
  let requests = 0;
  for (const [i, chunk] of chunks.slice(chunksResumed).entries()) {
    const ask: AskChunk = async (withContext) => {
      requests++;
      const messages = extractionMessages(
        chunk,
        deps.namespaceRoot,
        payload,
        deps.categories,
        withContext ? context : undefined,
      );
      try {
        return await deps.llm.completeJson(ExtractionOutputSchema, messages, { name: "memory_extraction" });
      } catch (err) {
        // A drain's cut is no failure of the request's own (drain-deadline.ts): nothing said of the part.
        if (!withContext && !(err instanceof DrainCutError)) deps.onFailedWithoutContext?.();
        throw err;
      }
    };
    const at = { lastAttempt: deps.lastAttempt ?? false, failedBefore: i === 0 && deps.retry === true };
    const out = context === undefined
      ? await ask(false)
      : await answerChunk(ask, progress, at, () => deps.onChunk?.(progress));
    addUsage(progress.usage, out.usage);
    progress.filtered += out.value.filtered.length;
    progress.proposed.push(out.value.stored);
    await deps.onChunk?.(progress);
  }
  const perChunk: Candidate[][] = progress.proposed;
  const proposedCount = perChunk.reduce((n, c) => n + c.length, 0);
  const { usage, filtered } = progress;
  // Rules first (user-stated, uncapped), so the in-batch duplicate check keeps the user's words;
  // each chunk's proposals are capped on their own (≤ 5 per chunk) and never user-stated.
  const opts = {
    root: deps.namespaceRoot,
    project: payload.project,
    scope: payload.scope,
    categories: deps.categories,
  };
  const all = prepareCandidates({ stated, proposed: perChunk }, opts);
  const statedKept = prepareCandidates({ stated, proposed: [] }, opts).candidates.length;
  return {
    candidates: all.candidates.slice(statedKept),
    stats: {
      ...all.stats,
      chunks: chunks.length,
      llm_calls: requests,
      chunks_resumed: chunksResumed,
      context_dropped: progress.withoutContext === true,
      rule_candidates: stated.length,
      llm_candidates: proposedCount,
      filtered_by_llm: filtered,
    },
    usage,
  };
}
