// An experiment, not part of the service: how far WordNet concept features alone carry, without the
// database. Ranks each question's tenant's memories by the cosine of their concept features
// (eval/experiments/wordnet-concepts.ts; no n-grams, no scopes) and prints recall@10 per category,
// for each weight setting given, so settings can be compared in seconds before a full eval.
//
//   deno run -A --config supabase/functions/deno.json eval/experiments/wordnet-concepts-probe.ts <dict dir> \
//     '[{"hypernym":0.5,"derived":0.5,"senses":3},{"hypernym":0.5,"derived":0.5,"senses":3,"depth":2,"ic":1}]'
// `ic`: weight each concept by its specificity (conceptSpecificity) to that power.
import { ENGLISH_STOP_WORDS } from "../content-words.ts";
import { buildConceptMap, conceptFeatures, conceptSpecificity, type ConceptWeights } from "./wordnet-concepts.ts";

const [dictDir, settings] = Deno.args;
if (!dictDir || !settings) throw new Error("usage: wordnet-concepts-probe.ts <dict dir> '<JSON list of weights>'");
// Every sense and every synset's relations, so `senses` and `depth` can be raised per setting.
const map = await buildConceptMap(dictDir, 100);

async function readJsonl<T>(dir: string): Promise<T[]> {
  const out: T[] = [];
  for await (const e of Deno.readDir(dir)) {
    for (const line of (await Deno.readTextFile(`${dir}/${e.name}`)).split("\n")) if (line) out.push(JSON.parse(line));
  }
  return out;
}
const memories = await readJsonl<{ id: string; tenant: string; content: string }>("eval/data/memories");
const questions = await readJsonl<{ tenant: string; category: string; text: string; answer_ids: string[] }>(
  "eval/data/questions",
);

function unit(f: Map<string, number>): Map<string, number> {
  let n = 0;
  for (const v of f.values()) n += v * v;
  n = Math.sqrt(n) || 1;
  return new Map([...f].map(([k, v]) => [k, v / n]));
}

function dot(a: Map<string, number>, b: Map<string, number>): number {
  let d = 0;
  for (const [k, v] of a) d += v * (b.get(k) ?? 0);
  return d;
}

for (const w of JSON.parse(settings) as (ConceptWeights & { ic?: number })[]) {
  const spec = w.ic ? new Map([...conceptSpecificity(map, w)].map(([k, v]) => [k, v ** w.ic!])) : undefined;
  const features = new Map(
    memories.map((m) => [m.id, unit(conceptFeatures(map, m.content, ENGLISH_STOP_WORDS, w, spec))]),
  );
  const recall: Record<string, number[]> = {};
  for (const q of questions) {
    if (q.answer_ids.length === 0) continue;
    const f = unit(conceptFeatures(map, q.text, ENGLISH_STOP_WORDS, w, spec));
    const top = memories.filter((m) => m.tenant === q.tenant)
      .map((m) => [m.id, dot(f, features.get(m.id)!)] as const)
      .sort((a, b) => b[1] - a[1]).slice(0, 10).map(([id]) => id);
    const r = q.answer_ids.filter((a) => top.includes(a)).length / q.answer_ids.length;
    (recall[q.category] ??= []).push(r);
    (recall.all ??= []).push(r);
  }
  const mean = (v: number[]) => (v.reduce((a, b) => a + b, 0) / v.length).toFixed(2);
  console.log(JSON.stringify(w), Object.entries(recall).map(([k, v]) => `${k} ${mean(v)}`).join("  "));
}
