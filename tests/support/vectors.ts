// Vectors with an exact cosine similarity, for tests that need a precise ranking or threshold
// without depending on what the local embedder makes of a sentence. The query is the unit vector
// on axis 0; a memory with similarity s is s·e0 + sqrt(1-s²)·e_axis (axis ≥ 1, pick different axes
// so memories are not similar to each other more than needed).
import { type Embedder, EMBEDDING_DIMENSIONS } from "../../supabase/functions/_shared/embeddings.ts";
import { LOCAL_EMBEDDING_MODEL } from "../../supabase/functions/_shared/env.ts";

export function queryVector(): number[] {
  const v = new Array<number>(EMBEDDING_DIMENSIONS).fill(0);
  v[0] = 1;
  return v;
}

export function vectorWithSimilarity(similarity: number, axis = 1): number[] {
  if (axis < 1 || axis >= EMBEDDING_DIMENSIONS) throw new Error("axis must be 1..511");
  const v = new Array<number>(EMBEDDING_DIMENSIONS).fill(0);
  v[0] = similarity;
  v[axis] = Math.sqrt(Math.max(0, 1 - similarity * similarity));
  return v;
}

/** An embedder that returns the same vector for every text (default: queryVector()), counting calls. */
export function fixedEmbedder(
  vector: number[] = queryVector(),
  model = LOCAL_EMBEDDING_MODEL,
): Embedder & { calls: number } {
  const e = {
    provider: "local" as const,
    model,
    dimensions: EMBEDDING_DIMENSIONS,
    calls: 0,
    embed(texts: string[]) {
      e.calls++;
      return Promise.resolve(texts.map(() => [...vector]));
    },
  };
  return e;
}
