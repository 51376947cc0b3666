// Embedding providers. Every stored vector records its model, and search only compares vectors of
// the same model, so switching providers never mixes incomparable spaces.
//  - OpenAI (text-embedding-3-small at 512 dimensions) or any OpenAI-compatible server: batched,
//    retried with backoff on 429/5xx/timeouts by the model client's rule (llm-retry.ts).
//  - Local: deterministic hashed word + character n-grams, 512-d, L2-normalised. Used when no key
//    is configured, so the service runs (and tests run) with no provider at all.
//  - Supabase: gte-small in the Edge Runtime (supabase-ai-embedder.ts), no provider or key.
import OpenAI from "openai";
import { chargeRequest, type Sql, type TenantContext } from "./db.ts";
import { type Config, LOCAL_EMBEDDING_MODEL, SUPABASE_EMBEDDING_MODEL } from "./env.ts";
import { HttpError } from "./http.ts";
import { classify, type RetryPolicy, retryWait } from "./llm-retry.ts";
import { supabaseAiEmbedder } from "./supabase-ai-embedder.ts";

export const EMBEDDING_DIMENSIONS = 512;

export interface Embedder {
  provider: "openai" | "local" | "supabase";
  model: string;
  dimensions: number;
  embed(texts: string[], opts?: EmbedOptions): Promise<number[][]>;
}

/** A drain's deadline (drain-deadline.ts): its requests aborted at the cut, no retry waiting past it (epoch ms). */
export interface EmbedOptions {
  signal?: AbortSignal;
  deadline?: number;
}

export class EmbeddingError extends Error {
  override name = "EmbeddingError";
  /**
   * The provider's HTTP status, and whether the request failed as an outage fails (unreachable,
   * 408, 409, 429, 5xx, after the retries): llm-outage.ts postpones the job instead of failing it.
   */
  constructor(message: string, readonly status?: number, readonly transient = false) {
    super(message);
  }
}

/**
 * Cosine scales differ by model: hashed n-grams of related sentences score far lower than a neural
 * model's vectors. The seed's thresholds (retrieve 0.7, dedup 0.8) are for OpenAI models; the local
 * embedder gets thresholds calibrated on its own scale. gte-small scores even unrelated sentences
 * around 0.7-0.75, so its floors sit higher (retrieve 0.8, as Supabase's own gte-small search
 * example; the others above it in the same order as OpenAI's), not calibrated on this project's
 * evaluation, which cannot run the model (docs/retrieval.md#embedders). Config overrides them all.
 */
export interface SimilarityThresholds {
  retrieve: number;
  dedup: number;
  link: number;
  /** Nightly consolidation: pairs at or above this are worth a look (docs/consolidation.md#nightly-consolidation). */
  consolidate: number;
  /** Near-verbatim duplicates: merged without a model (when the words agree too). */
  verbatim: number;
}

export function thresholdsFor(
  model: string,
  config?: Pick<Config, "retrieval" | "dedupThreshold">,
): SimilarityThresholds {
  const base = model === LOCAL_EMBEDDING_MODEL
    ? { retrieve: 0.45, dedup: 0.75, link: 0.35, consolidate: 0.6, verbatim: 0.92 }
    : model === SUPABASE_EMBEDDING_MODEL
    ? { retrieve: 0.8, dedup: 0.9, link: 0.85, consolidate: 0.86, verbatim: 0.97 }
    : { retrieve: 0.7, dedup: 0.8, link: 0.75, consolidate: 0.75, verbatim: 0.95 };
  return {
    retrieve: config?.retrieval.threshold ?? base.retrieve,
    dedup: config?.dedupThreshold ?? base.dedup,
    link: base.link,
    consolidate: base.consolidate,
    verbatim: base.verbatim,
  };
}

/**
 * One text's vector for a request. A provider that fails (unreachable, refusing, answering another
 * dimension than the database stores) is the same 503 on every route that embeds (remember,
 * correct, retrieve, memory.query, context/assemble, a merged resolution, an accepted proposal),
 * never a 500.
 */
export async function embedForRequest(embedder: Embedder, text: string): Promise<number[]> {
  try {
    const [vector] = await embedder.embed([text]);
    if (!vector) throw new EmbeddingError("embedding provider returned no vector");
    if (vector.length !== EMBEDDING_DIMENSIONS) {
      throw new EmbeddingError(
        `model ${embedder.model} returned ${vector.length} dimensions; ${EMBEDDING_DIMENSIONS} are required`,
      );
    }
    return vector;
  } catch (err) {
    if (!(err instanceof EmbeddingError)) throw err;
    throw new HttpError(
      503,
      "embedding_unavailable",
      `the embedding model (${embedder.provider}: ${embedder.model}) is unavailable: ${err.message}. ` +
        'Check EMBEDDING_BASE_URL, EMBEDDING_MODEL and the key; the local server checks them at start (README "Configuration")',
    );
  }
}

/**
 * A request's vector (embedForRequest) before its first statement. A remote embedder is paid per
 * call, and gte-small in the Edge Runtime costs the function tens of ms of CPU: the request's
 * rate-limit token is taken first, so a refused request costs no embedding. The local embedder
 * costs microseconds, and its requests take the token with their first statement as before (no
 * round trip added).
 */
export async function embedForCaller(
  deps: { sql: Sql; embedder: Embedder },
  caller: TenantContext,
  text: string,
): Promise<number[]> {
  if (deps.embedder.provider !== "local") await chargeRequest(deps.sql, caller);
  return await embedForRequest(deps.embedder, text);
}

export function createEmbedder(config: Pick<Config, "embedding">): Embedder {
  const e = config.embedding;
  if (e.provider === "local") return localEmbedder();
  if (e.provider === "supabase") return supabaseAiEmbedder();
  // Local OpenAI-compatible servers (Ollama, vLLM) accept any key; the SDK insists on one.
  return openAiEmbedder({ apiKey: e.apiKey ?? "not-needed", baseUrl: e.baseUrl, model: e.model });
}

// ---------------------------------------------------------------------------------------------
// Local deterministic embedder

/** FNV-1a, 32-bit: fast, stable across runtimes, good enough spread for feature hashing. */
function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export function addFeature(vec: Float64Array, feature: string, weight: number): void {
  const h = fnv1a(feature);
  // One bit of the hash picks the sign, so unrelated features cancel out on average.
  vec[h % EMBEDDING_DIMENSIONS]! += (h & 0x80000000) === 0 ? weight : -weight;
}

// Function words carry no topic; hashing them would make every question look alike.
const STOP_WORDS = new Set(
  ("a an and are as at be by can do does did for from has have how i in is it its of on or our that the this to was " +
    "we what when where which who why will with you your")
    .split(" "),
);

export function embedLocally(text: string): number[] {
  const vec = new Float64Array(EMBEDDING_DIMENSIONS);
  const all = text.toLowerCase().normalize("NFKC").match(/[\p{L}\p{N}]+/gu) ?? [];
  const topical = all.filter((w) => !STOP_WORDS.has(w));
  const words = topical.length > 0 ? topical : all;
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    addFeature(vec, `w:${w}`, 1.0);
    if (i + 1 < words.length) addFeature(vec, `b:${w} ${words[i + 1]}`, 0.5);
    const padded = ` ${w} `;
    for (let j = 0; j + 3 <= padded.length; j++) addFeature(vec, `c:${padded.slice(j, j + 3)}`, 0.25);
  }
  let norm = 0;
  for (const x of vec) norm += x * x;
  norm = Math.sqrt(norm);
  // An empty or symbol-only text still gets a valid unit vector (pgvector rejects cosine on zero).
  if (norm === 0) {
    const out = new Array<number>(EMBEDDING_DIMENSIONS).fill(0);
    out[0] = 1;
    return out;
  }
  return Array.from(vec, (x) => x / norm);
}

export function localEmbedder(): Embedder {
  return {
    provider: "local",
    model: LOCAL_EMBEDDING_MODEL,
    dimensions: EMBEDDING_DIMENSIONS,
    embed: (texts) => Promise.resolve(texts.map(embedLocally)),
  };
}

// ---------------------------------------------------------------------------------------------
// OpenAI / OpenAI-compatible

export interface OpenAiEmbedderOptions {
  apiKey: string;
  baseUrl?: string;
  model: string;
  batchSize?: number;
  maxAttempts?: number;
  baseDelayMs?: number;
  timeoutMs?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function openAiEmbedder(opts: OpenAiEmbedderOptions): Embedder {
  // The SDK's own retries are off so that ours are the only ones (and tests can count attempts).
  const client = new OpenAI({
    apiKey: opts.apiKey,
    baseURL: opts.baseUrl,
    maxRetries: 0,
    timeout: opts.timeoutMs ?? 30_000,
  });
  const batchSize = opts.batchSize ?? 100;
  // The model client's retry rule and backoff (llm-retry.ts), a provider's Retry-After obeyed up to 10 s.
  const retry: RetryPolicy = {
    maxRetries: (opts.maxAttempts ?? 4) - 1,
    baseDelayMs: opts.baseDelayMs ?? 250,
    maxDelayMs: 10_000,
  };

  async function embedBatch(batch: string[], until: EmbedOptions): Promise<number[][]> {
    for (let attempt = 1;; attempt++) {
      try {
        const res = await client.embeddings.create({
          model: opts.model,
          input: batch,
          dimensions: EMBEDDING_DIMENSIONS,
          encoding_format: "float",
        }, { signal: until.signal });
        const vectors = [...res.data].sort((a, b) => a.index - b.index).map((d) => d.embedding);
        if (vectors.length !== batch.length) {
          throw new EmbeddingError(`embedding provider returned ${vectors.length} vectors for ${batch.length} inputs`);
        }
        for (const v of vectors) {
          if (v.length !== EMBEDDING_DIMENSIONS) {
            throw new EmbeddingError(
              `model ${opts.model} returned ${v.length} dimensions; 512 are required (does the server support 'dimensions'?)`,
            );
          }
        }
        return vectors;
      } catch (err) {
        if (err instanceof EmbeddingError) throw err;
        // Transient failures are retried; a refusal is not (a 429 saying the request alone is over
        // the limit among them: llm-retry.ts refusesContent), nor a retry whose wait ends past the
        // deadline.
        const transient = classify(err);
        const wait = retryWait(transient, attempt - 1, retry, until.deadline);
        if (wait === undefined) {
          // Aborted by the caller (a probe's timeout, a drain's cut): fails as an unanswered request does.
          const aborted = err instanceof OpenAI.APIUserAbortError;
          throw new EmbeddingError(
            `embedding request failed after ${attempt} attempt(s): ${(err as Error).message}`,
            transient.status,
            transient.retryable || aborted,
          );
        }
        await sleep(wait);
      }
    }
  }

  return {
    provider: "openai",
    model: opts.model,
    dimensions: EMBEDDING_DIMENSIONS,
    async embed(texts, until = {}) {
      const out: number[][] = [];
      for (let i = 0; i < texts.length; i += batchSize) {
        out.push(...await embedBatch(texts.slice(i, i + batchSize), until));
      }
      return out;
    },
  };
}
