// When the LLM client (llm.ts) and the embeddings client (embeddings.ts) retry a failed request and
// how long they wait: transient failures (429, 408, 409, 5xx, timeouts, connection resets) are
// retried with exponential backoff and jitter; a server's Retry-After (seconds, HTTP date, or
// OpenAI's retry-after-ms) wins within a cap.
import OpenAI from "openai";

export interface RetryPolicy {
  /** Retries after the first try, for transient failures only. */
  maxRetries: number;
  baseDelayMs: number;
  /** Cap for one wait, Retry-After included (a server asking for 10 minutes is not obeyed). */
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxRetries: 3, baseDelayMs: 500, maxDelayMs: 20_000 };

export interface Transient {
  retryable: boolean;
  status?: number;
  kind: string;
  retryAfterMs?: number;
}

export function classify(err: unknown): Transient {
  if (err instanceof OpenAI.APIConnectionTimeoutError) return { retryable: true, kind: "timeout" };
  if (err instanceof OpenAI.APIUserAbortError) return { retryable: false, kind: "aborted" };
  if (err instanceof OpenAI.APIConnectionError) return { retryable: true, kind: "connection error" };
  if (err instanceof OpenAI.APIError) {
    const status = err.status;
    // A 429 over the limit alone is a refusal: no wait lets it pass (refusesContent).
    const retryable = status === 408 || status === 409 || (status === 429 && !overTheLimitAlone(err.message)) ||
      (status !== undefined && status >= 500);
    return { retryable, status, kind: "api error", retryAfterMs: retryAfterMs(err.headers) };
  }
  return { retryable: false, kind: "unexpected error" };
}

/**
 * The statuses by which a provider refuses a request for what it holds (400: content policy, a
 * context too long, 413: too large, 422: unprocessable), and a 429 whose `message` says the request
 * alone is over the limit: not retried (classify), and never an outage's, whose failures are 5xx,
 * 429, timeouts and resets. 401, 402, 403 and 404 are not among them: a key, a balance or a model,
 * the same for every request. Extraction then asks without the context (extraction.ts answerChunk,
 * docs/extraction.md#a-failing-context).
 */
export function refusesContent(status: number | undefined, message = ""): boolean {
  return status === 400 || status === 413 || status === 422 || (status === 429 && overTheLimitAlone(message));
}

/**
 * A 429 message saying the request alone is over the limit (OpenAI's "Request too large … (TPM):
 * Limit 30000, Requested 61234", Groq's "Limit 6000, Requested 7664"; the counts printed with or
 * without thousands separators): no minute lets it pass, so it is the provider's word on the request,
 * as a 413 is. Retried, each try failed alike (4 requests and their waits an attempt); postponed as a
 * rate limit, the job was retried forever. A busy limit ("Limit 30000, Used 29000, Requested 2000")
 * is not: the request alone fits.
 */
const OVER_THE_LIMIT = (() => {
  // A count as providers print it: 30000, or grouped by thousands (30,000, 30 000, 30.000, 30'000).
  const count = String.raw`(\d{1,3}(?:[,.' \u00a0\u202f]\d{3})+(?!\d)|\d+)`;
  return new RegExp(String.raw`Limit ${count},?(?: Used ${count},?)? Requested ${count}`, "i");
})();
const countOf = (printed: string) => Number(printed.replace(/\D/g, ""));
function overTheLimitAlone(message: string): boolean {
  const m = OVER_THE_LIMIT.exec(message);
  return m !== null && countOf(m[3]!) > countOf(m[1]!);
}

/** asctime's HTTP-date form ("Sun Nov  6 08:49:37 1994"), the one that does not say GMT. */
const ASCTIME_DATE = /^[A-Za-z]{3} [A-Za-z]{3} [ \d]\d \d{2}:\d{2}:\d{2} \d{4}$/;

/** Retry-After in seconds or as an HTTP date, or OpenAI's retry-after-ms. */
function retryAfterMs(headers: Headers | undefined): number | undefined {
  if (!headers) return undefined;
  const ms = headers.get("retry-after-ms");
  if (ms && Number.isFinite(Number(ms))) return Math.max(0, Number(ms));
  const ra = headers.get("retry-after");
  if (!ra) return undefined;
  if (Number.isFinite(Number(ra))) return Math.max(0, Number(ra) * 1000);
  // Every HTTP date is GMT (RFC 9110 §5.6.7); Date.parse reads asctime's, which has no zone, in the
  // process's local time: `npm start` runs in the machine's zone (Edge Functions in UTC).
  const at = Date.parse(ASCTIME_DATE.test(ra) ? `${ra} GMT` : ra);
  return Number.isFinite(at) ? Math.max(0, at - Date.now()) : undefined;
}

/**
 * The wait before the retry after `attempt`, or undefined when none is made: the failure is not
 * transient, the retries are spent, or the wait would end past `deadline` (epoch ms, a drain's cut,
 * drain-deadline.ts): a retry that cannot start before the cut is not begun, the failure is the job's.
 */
export function retryWait(
  transient: Transient,
  attempt: number,
  policy: RetryPolicy,
  deadline?: number,
): number | undefined {
  if (!transient.retryable || attempt >= policy.maxRetries) return undefined;
  const wait = backoffDelay(attempt, policy, transient.retryAfterMs);
  return deadline !== undefined && Date.now() + wait >= deadline ? undefined : wait;
}

/** Exponential backoff with jitter; a server's Retry-After wins when given, both capped. */
export function backoffDelay(attempt: number, policy: RetryPolicy, retryAfter?: number): number {
  if (retryAfter !== undefined) return Math.min(retryAfter, policy.maxDelayMs);
  const exp = policy.baseDelayMs * 2 ** attempt;
  const jitter = exp * 0.2 * Math.random();
  return Math.min(exp + jitter, policy.maxDelayMs);
}
