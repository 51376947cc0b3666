// Whether the model provider is unavailable, or fails what a job asks it. A job the provider could
// not serve (down, overloaded, its key or model refused) is postponed, queued again with its attempt
// given back (drain-queue.ts, memory_private.postpone_job): an outage never kills a job, so never
// gives an extract part's messages up or loses a dedup job's candidates. A failure about what the job
// holds still counts toward its death, as before. docs/operations.md#job-queue.
//
// A status alone cannot tell them apart: a provider that always fails a request holding some message
// may answer it with a 500 or a timeout, as an outage does. So a failure an outage may give is
// followed by a probe, a request holding nothing of any job: the provider is unavailable only when
// the probe fails so too. A refusal (400, 413, 422) is probed too: a provider refusing even the probe
// refuses every request (a key, a model, a format), which is no more the job's than a 401.
import { z } from "zod";
import { type Embedder, EmbeddingError, type EmbedOptions } from "./embeddings.ts";
import {
  type CompleteJsonOptions,
  emptyUsage,
  type Llm,
  LlmRequestError,
  type LlmResult,
  type PromptMessage,
} from "./llm.ts";
import { refusesContent } from "./llm-retry.ts";
import { DrainCutError, type DrainDeadline } from "./drain-deadline.ts";
import { foundUnavailable, notAsked } from "./provider-name.ts";

/**
 * The statuses a provider gives every request alike: a refused key (401, 403), a spent balance (402:
 * DeepSeek, OpenRouter) or an unknown model (404).
 */
const MISCONFIGURED = new Set([401, 402, 403, 404]);

/**
 * A 429 after the client's retries: the provider says "not now" (a rate limit, or a spent quota),
 * never what the request holds. No probe: a tiny probe may pass a limit counted in tokens that the
 * job's request does not, and counting the failure would give a long part up for a busy provider.
 */
const rateLimited = (err: unknown) => err instanceof LlmRequestError && err.status === 429;

/**
 * A failure an unavailable provider gives: those llm.ts retries (timeouts, resets, 408, 409, 429,
 * 5xx) and a refused key or model. A refusal (400, 413, 422, a 429 saying the request alone is over
 * the limit: llm-retry.ts refusesContent) or output that stays invalid after its repair is the
 * provider's word on the request: never an outage's.
 */
export function failsAsAnOutage(err: unknown): boolean {
  return err instanceof LlmRequestError && !refusesContent(err.status, err.message) &&
    (err.retryable || (err.status !== undefined && MISCONFIGURED.has(err.status)));
}

/**
 * A refusal (400, 413, 422): the provider's word on what the request holds, unless it refuses a probe
 * so too. Then it refuses every request: a key it reads as invalid (Gemini answers 400 "API key not
 * valid"), a model it retired, a response_format it does not take: a configuration to fix, as a 401.
 * Not a 429 over the limit alone: a probe, tiny, always fits the limit; that one counts unprobed.
 */
const refused = (err: unknown) => err instanceof LlmRequestError && refusesContent(err.status);

/** A failure a probe tells apart: an outage's, or a refusal that may be of every request. */
const worthAProbe = (err: unknown) => failsAsAnOutage(err) || refused(err);

/** The probe's name: what the request is, for the provider's logs and the tests' fake. */
export const PROBE_NAME = "provider_probe";
const ProbeSchema = z.object({ ok: z.boolean() });

/**
 * How long a probe may take: a provider that hangs would otherwise hold the worker for
 * LLM_TIMEOUT_MS more, after the job's own requests took 4 x as long. Less when a drain's deadline
 * leaves less (DrainDeadline.probeRoom).
 */
const PROBE_TIMEOUT_MS = 15_000;

/** How long a probe may take now: none when the drain's deadline leaves no room for one. */
const probeTimeout = (roomMs = Number.POSITIVE_INFINITY) => Math.min(PROBE_TIMEOUT_MS, Math.floor(roomMs));

/**
 * A probe is one request: a deadline already passed lets its client start no retry (llm-retry.ts
 * retryWait, the embedder alike). The job's own request had its retries; a down provider's probe
 * took them too, 4 requests and their waits for each probe (the answer is the same: it failed).
 */
const oneRequest = () => ({ deadline: Date.now() });

/**
 * Whether the provider answers a request holding nothing of any job (any answer but an outage's
 * failure or a refusal) within timeoutMs. No room for a probe is no answer: the job is postponed.
 */
export async function providerAnswers(llm: Llm, timeoutMs = PROBE_TIMEOUT_MS): Promise<boolean> {
  if (timeoutMs <= 0) return false;
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    await llm.completeJson(ProbeSchema, [{ role: "user", content: 'Reply {"ok": true}.' }], {
      name: PROBE_NAME,
      signal,
      ...oneRequest(),
    });
    return true;
  } catch (err) {
    return !signal.aborted && !worthAProbe(err);
  }
}

/**
 * The model as one run of the worker sees it (drainQueue wraps its deps' model in one): once the
 * provider was found unavailable, the run's later jobs do not ask it again, they fail at once (and
 * are postponed): a run sends a down provider one job's requests and one probe, not one per job.
 * With the run's deadline, its requests are aborted at the cut, none is sent after it, and the
 * failure is a DrainCutError (a timeout's, probed within what is left: drain-deadline.ts).
 */
export class ProviderWatch implements Llm {
  /** The provider and the failure that found it unavailable in this run, if one did. */
  unavailable: string | undefined;

  constructor(
    private readonly inner: Llm,
    private readonly deadline?: DrainDeadline,
    readonly name = `model ${inner.model}`,
  ) {}

  get model(): string {
    return this.inner.model;
  }

  get totalUsage() {
    return this.inner.totalUsage;
  }

  async completeJson<S extends z.ZodType>(
    schema: S,
    messages: PromptMessage[],
    opts?: CompleteJsonOptions,
  ): Promise<LlmResult<z.infer<S>>> {
    if (this.unavailable !== undefined) {
      throw new LlmRequestError(
        notAsked(this.unavailable),
        undefined,
        true,
        emptyUsage(),
      );
    }
    if (!this.deadline) return await this.inner.completeJson(schema, messages, opts);
    if (this.deadline.cut.aborted) throw new DrainCutError(emptyUsage());
    const until = { signal: this.deadline.signal(opts?.signal), deadline: this.deadline.cutAt() };
    try {
      return await this.inner.completeJson(schema, messages, { ...opts, ...until });
    } catch (err) {
      if (!this.deadline.cut.aborted || opts?.signal?.aborted) throw err;
      throw new DrainCutError(err instanceof LlmRequestError ? err.usage : emptyUsage());
    }
  }

  /** The failures the provider was found to answer despite: judged again (a job's catch, then the drain's), not probed again. */
  private readonly answeredDespite = new WeakSet<object>();

  /** providerUnavailable, probing once a run, and once a failure. */
  async judge(err: unknown): Promise<boolean> {
    if (!worthAProbe(err)) return false;
    if (this.unavailable !== undefined) return true;
    if (this.answeredDespite.has(err as object)) return false;
    if (!rateLimited(err) && await providerAnswers(this.inner, probeTimeout(this.deadline?.probeRoom()))) {
      this.answeredDespite.add(err as object);
      return false;
    }
    this.unavailable = foundUnavailable(this.name, err);
    return true;
  }
}

/**
 * Whether `err`, a job's failure, says the provider is unavailable: it failed as an outage fails, or
 * refused the request, and a probe fails or is refused too (a 429: without a probe). Then the job is postponed, not failed (drain-queue.ts); callers that would
 * settle for less than the model's answer (a last attempt, a job done by rules alone) rethrow instead.
 */
export async function providerUnavailable(llm: Llm | undefined, err: unknown): Promise<boolean> {
  if (!llm) return false;
  // One rule, the watch's: outside a drain (no watch yet), a watch of this one judgement.
  return await (llm instanceof ProviderWatch ? llm : new ProviderWatch(llm)).judge(err);
}

/**
 * An embedding failure an unavailable provider gives: transient (unreachable, 408, 409, 429, 5xx) or
 * a refused key or model; not a 429 saying the request alone is over the limit (a refusal).
 */
const embeddingFailsAsAnOutage = (e: unknown) =>
  e instanceof EmbeddingError && !refusesContent(e.status, e.message) &&
  (e.transient || (e.status !== undefined && MISCONFIGURED.has(e.status)));

/**
 * Whether `err`, a job's failure, says the embeddings provider is unavailable: by default the model's
 * provider and key (env.ts), so an outage or a refused key fails a dedup job's embedding request
 * before any model request. As for the model: it failed as an outage fails, and so does a probe, one
 * text embedded (given up after PROBE_TIMEOUT_MS, or what a drain's deadline leaves: `roomMs`; no room,
 * no probe, unavailable). Before, the dedup job died after its five attempts. A 429 without a probe,
 * as the model's: one text embedded passes a limit the job's batch does not (before, a busy limit
 * counted each attempt and killed the job, its candidates lost).
 */
export async function embeddingsUnavailable(embedder: Embedder, err: unknown, roomMs?: number): Promise<boolean> {
  if (!embeddingFailsAsAnOutage(err)) return false;
  if ((err as EmbeddingError).status === 429) return true;
  const timeoutMs = probeTimeout(roomMs);
  if (timeoutMs <= 0) return true;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), timeoutMs)));
  const probe = embedder.embed([PROBE_NAME], { signal: AbortSignal.timeout(timeoutMs), ...oneRequest() })
    .then(() => "answered" as const, (e) => e);
  try {
    const outcome = await Promise.race([probe, timedOut]);
    return outcome === "timeout" || embeddingFailsAsAnOutage(outcome);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The embedder as one run of the worker sees it, as ProviderWatch is the model: once the embeddings
 * provider was found unavailable, the run's later jobs do not ask it again (their embedding fails at
 * once, as an outage's, and they are postponed). Before, each job of the run sent the down provider
 * its request and a probe of its own. `probeWith`: the embedder the probe goes to (not the run's,
 * whose requests the drain's cut aborts: the probe has its own room, DrainDeadline.probeRoom).
 */
export class EmbeddingsWatch implements Embedder {
  /** The provider and the failure that found it unavailable in this run, if one did. */
  unavailable: string | undefined;
  private readonly answeredDespite = new WeakSet<object>();

  constructor(
    private readonly inner: Embedder,
    private readonly probeWith: Embedder = inner,
    readonly name = `embeddings ${inner.model}`,
  ) {}

  get provider() {
    return this.inner.provider;
  }

  get model() {
    return this.inner.model;
  }

  get dimensions() {
    return this.inner.dimensions;
  }

  async embed(texts: string[], opts?: EmbedOptions): Promise<number[][]> {
    if (this.unavailable !== undefined) {
      throw new EmbeddingError(
        notAsked(this.unavailable),
        undefined,
        true,
      );
    }
    return await this.inner.embed(texts, opts);
  }

  /** embeddingsUnavailable, probing once a run, and once a failure. */
  async judge(err: unknown, roomMs?: number): Promise<boolean> {
    if (!embeddingFailsAsAnOutage(err)) return false;
    if (this.unavailable !== undefined) return true;
    if (this.answeredDespite.has(err as object)) return false;
    if (!await embeddingsUnavailable(this.probeWith, err, roomMs)) {
      this.answeredDespite.add(err as object);
      return false;
    }
    this.unavailable = foundUnavailable(this.name, err);
    return true;
  }
}

/**
 * Which provider, the model's or the embeddings', `err` (a job's failure) found unavailable, each by
 * its watch's rule (`roomMs`: what the drain's deadline leaves the embeddings' probe), if one did.
 */
export async function unavailableProvider(
  model: ProviderWatch | undefined,
  embeddings: EmbeddingsWatch,
  err: unknown,
  roomMs?: number,
): Promise<string | undefined> {
  if (model && await model.judge(err)) return model.name;
  if (await embeddings.judge(err, roomMs)) return embeddings.name;
  return undefined;
}

/** A job's failure that found the provider unavailable: drainQueue postpones the job. */
export class ProviderUnavailableError extends Error {
  override name = "ProviderUnavailableError";
  /** `provider`: which one (providerName). */
  constructor(readonly failure: unknown, readonly provider: string) {
    super(failure instanceof Error ? `${failure.name}: ${failure.message}` : String(failure));
  }
}
