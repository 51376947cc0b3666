// Which provider a drain's watch is of (llm-outage.ts ProviderWatch, EmbeddingsWatch), as an operator
// reads it: a postponed job's last_error and result.provider_unavailable, the drain's report, the
// worker's log line when the provider is found unavailable. Before, these said the failure only
// ("LLM request failed (HTTP 503)"), not which model or host failed, and nothing reached the
// function's log: a drain kicked after a POST drops its report.
// docs/operations.md#an-outage-of-the-model-provider.

/**
 * Which provider a watch is of, as the operator reads it in a postponed job's error, the drain's
 * report and the worker's log: the model's or the embeddings', its model, and where (the base URL's
 * host; never the key). The two may be apart (LLM_BASE_URL, EMBEDDING_BASE_URL).
 */
export function providerName(what: "model" | "embeddings", c: { model: string; baseUrl?: string; provider?: string }) {
  return `${what} ${c.model} (${c.provider && c.provider !== "openai" ? c.provider : hostOf(c.baseUrl)})`;
}

/** A base URL's host; none is the SDK's default, OpenAI's. */
function hostOf(baseUrl: string | undefined): string {
  try {
    return baseUrl ? new URL(baseUrl).host : "api.openai.com";
  } catch {
    return "an invalid base URL";
  }
}

/** What a watch records, and logs once a drain, when it finds its provider unavailable. */
export function foundUnavailable(provider: string, err: unknown): string {
  const error = (err as Error).message.slice(0, 300);
  console.error(
    JSON.stringify({ level: "warn", msg: "provider unavailable: its jobs are postponed", provider, error }),
  );
  return `${provider}: ${error}`;
}

/** The failure of a request a watch did not send: its provider was found unavailable earlier in the drain. */
export const notAsked = (unavailable: string) => `not asked, found unavailable earlier in this drain: ${unavailable}`;
