// Intent by nearest exemplars, for neural embedders (docs/retrieval.md#intent). A query the
// keyword cues do not classify is compared with the centroid of a few example questions per
// intent; the nearest wins when it is close enough and clearly ahead of the runner-up. The local
// hashed embedder only sees shared words, so it never classifies this way.
import type { Embedder } from "../embeddings.ts";
import type { Intent } from "./intent.ts";

export const INTENT_EXEMPLARS: Readonly<Record<Exclude<Intent, "general">, readonly string[]>> = {
  why: [
    "Why did we switch from REST to gRPC?",
    "What was the reason for pinning the Node version?",
    "Why is the cache disabled in staging?",
    "What made us drop the ORM?",
    "Explain the motivation behind the monorepo split",
  ],
  when: [
    "When did we upgrade Postgres?",
    "What did we decide about caching last week?",
    "When was the deploy pipeline changed?",
    "What changed in the auth service recently?",
    "Which release went out on Friday?",
  ],
  who: [
    "Who owns the billing service?",
    "Who reviews changes to the infrastructure code?",
    "Whom should I ask about the mobile build?",
    "Who wrote the payment retry logic?",
    "Which person maintains the design system?",
  ],
  what: [
    "What database does the project use?",
    "What is the API rate limit?",
    "Which test framework do we use?",
    "What does the FEATURE_NEW_CHECKOUT flag control?",
    "What is the naming convention for branches?",
  ],
  how: [
    "How do I run the integration tests?",
    "How do we deploy to production?",
    "What are the steps to rotate the API keys?",
    "How can I reproduce the flaky test locally?",
    "How should I set up the development database?",
  ],
};

/** Below this cosine, or with a smaller lead over the runner-up, the exemplars do not decide. */
export const EXEMPLAR_MIN_SIMILARITY = 0.35;
export const EXEMPLAR_MIN_MARGIN = 0.03;

type Centroids = { intent: Exclude<Intent, "general">; centroid: number[] }[];
const centroidsByModel = new Map<string, Promise<Centroids>>();

function normalise(v: number[]): number[] {
  const n = Math.sqrt(v.reduce((s, x) => s + x * x, 0)) || 1;
  return v.map((x) => x / n);
}

/** One embedding call per embedding model and process: the exemplars, averaged per intent. */
function centroidsFor(embedder: Embedder): Promise<Centroids> {
  let pending = centroidsByModel.get(embedder.model);
  if (!pending) {
    const intents = Object.keys(INTENT_EXEMPLARS) as Exclude<Intent, "general">[];
    const texts = intents.flatMap((i) => INTENT_EXEMPLARS[i]);
    pending = embedder.embed(texts).then((vectors) => {
      let at = 0;
      return intents.map((intent) => {
        const own = vectors.slice(at, at + INTENT_EXEMPLARS[intent].length);
        at += own.length;
        const sum = own[0]!.map((_, d) => own.reduce((s, v) => s + v[d]!, 0));
        return { intent, centroid: normalise(sum) };
      });
    });
    // A failed call is retried by the next query rather than cached.
    pending.catch(() => centroidsByModel.delete(embedder.model));
    centroidsByModel.set(embedder.model, pending);
  }
  return pending;
}

/** The nearest intent for an (L2-normalised) query vector, or undefined when none is clear. */
export async function classifyByExemplars(
  queryVector: readonly number[],
  embedder: Embedder,
): Promise<Exclude<Intent, "general"> | undefined> {
  if (embedder.provider === "local") return undefined;
  const centroids = await centroidsFor(embedder);
  const q = normalise([...queryVector]);
  const scored = centroids
    .map((c) => ({ intent: c.intent, sim: c.centroid.reduce((s, x, d) => s + x * q[d]!, 0) }))
    .sort((a, b) => b.sim - a.sim);
  const [best, second] = scored;
  if (!best || best.sim < EXEMPLAR_MIN_SIMILARITY) return undefined;
  if (second && best.sim - second.sim < EXEMPLAR_MIN_MARGIN) return undefined;
  return best.intent;
}
