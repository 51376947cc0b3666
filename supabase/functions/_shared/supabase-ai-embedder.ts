// The embedder Supabase's Edge Runtime carries: gte-small, run inside the function by the runtime's
// own inference API (Supabase.ai.Session), with no provider, key, network call or bill. A semantic
// model, unlike the local hashed n-grams, at the cost of CPU in the function (tens of ms per text).
// Its 384 dimensions are padded with zeros to the 512 the database stores: zeros change no dot
// product and no norm, so every cosine similarity is gte-small's own.
// Only the Edge Runtime (a hosted project, `supabase functions serve`) has Supabase.ai. Elsewhere
// (the local server under plain Deno) choosing it is refused when the server starts, with why.
import { type Embedder, EMBEDDING_DIMENSIONS, EmbeddingError } from "./embeddings.ts";
import { ConfigError, SUPABASE_EMBEDDING_MODEL } from "./env.ts";

export const GTE_SMALL_DIMENSIONS = 384;

interface AiSession {
  run(input: string, options: { mean_pool: boolean; normalize: boolean }): Promise<unknown>;
}

export interface SupabaseAiRuntime {
  ai: { Session: new (model: string) => AiSession };
}

/** The Edge Runtime's `Supabase` global, when this process has one. */
export function supabaseAiRuntime(): SupabaseAiRuntime | undefined {
  const supabase = (globalThis as { Supabase?: { ai?: { Session?: unknown } } }).Supabase;
  return typeof supabase?.ai?.Session === "function" ? supabase as SupabaseAiRuntime : undefined;
}

/** gte-small through the runtime; a ConfigError when there is no runtime to run it. */
export function supabaseAiEmbedder(runtime: SupabaseAiRuntime | undefined = supabaseAiRuntime()): Embedder {
  if (!runtime) {
    throw new ConfigError(
      "invalid environment: EMBEDDING_PROVIDER=supabase runs gte-small in Supabase's Edge Runtime (Supabase.ai), " +
        "which this process does not have: deploy the functions to Supabase (or run `supabase functions serve`), " +
        "or choose another EMBEDDING_PROVIDER",
    );
  }
  // One session for the life of the function (the model loads once), made at the first text.
  let session: AiSession | undefined;
  return {
    provider: "supabase",
    model: SUPABASE_EMBEDDING_MODEL,
    dimensions: EMBEDDING_DIMENSIONS,
    async embed(texts: string[]): Promise<number[][]> {
      session ??= new runtime.ai.Session(SUPABASE_EMBEDDING_MODEL);
      const vectors: number[][] = [];
      for (const text of texts) {
        let output: unknown;
        try {
          output = await session.run(text, { mean_pool: true, normalize: true });
        } catch (err) {
          throw new EmbeddingError(`${SUPABASE_EMBEDDING_MODEL} failed in the Edge Runtime: ${(err as Error).message}`);
        }
        vectors.push(padded(output));
      }
      return vectors;
    },
  };
}

/** gte-small's vector followed by zeros up to EMBEDDING_DIMENSIONS; anything else is refused. */
function padded(output: unknown): number[] {
  const values = Array.isArray(output) || ArrayBuffer.isView(output)
    ? Array.from(output as ArrayLike<unknown>)
    : undefined;
  if (!values || values.length !== GTE_SMALL_DIMENSIONS || !values.every((x) => Number.isFinite(x))) {
    throw new EmbeddingError(
      `${SUPABASE_EMBEDDING_MODEL} returned ${
        values ? `${values.length} values` : "no vector"
      }; ${GTE_SMALL_DIMENSIONS} finite numbers were expected`,
    );
  }
  const vector = values as number[];
  for (let i = GTE_SMALL_DIMENSIONS; i < EMBEDDING_DIMENSIONS; i++) vector.push(0);
  return vector;
}
