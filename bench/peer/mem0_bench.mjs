// Runs mem0ai's open-source Memory (pgvector store) for the side-by-side benchmark, under Node.
// Called by bench/suites/peer.ts:  node mem0_bench.mjs <input.json>   → JSON on stdout.
//
// Embeddings and LLM are replaced IN PROCESS (no HTTP), exactly like our side's injected embedder:
//   memory.embedder  returns the corpus vector for every known text (queries, added memories) and a
//                    deterministic hash-seeded unit vector for anything else (mem0's entity texts)
//   memory.llm       answers the additive-extraction prompt at once with one fact: the added text
// mem0's history store is disabled (its default needs better-sqlite3); ours writes history rows in
// triggers, so our add does strictly more work.
import { readFileSync } from "node:fs";
import { Memory } from "mem0ai/oss";

const input = JSON.parse(readFileSync(process.argv[2], "utf8"));
const DIM = input.dim;
const known = new Map();
for (const q of input.queries) known.set(q.text, q.vector);
for (const a of input.adds) known.set(a.text, a.vector);

function hashVector(text) {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  let s = h >>> 0;
  const v = new Array(DIM);
  let n = 0;
  for (let i = 0; i < DIM; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    v[i] = s / 4294967296 - 0.5;
    n += v[i] * v[i];
  }
  n = Math.sqrt(n);
  return v.map((x) => x / n);
}
const embed = (text) => known.get(text) ?? hashVector(text);

let currentAdd = "";
const memory = new Memory({
  version: "v1.1",
  embedder: { provider: "openai", config: { apiKey: "unused", model: "text-embedding-3-small", embeddingDims: DIM } },
  vectorStore: {
    provider: "pgvector",
    config: { collectionName: "memories", embeddingModelDims: DIM, dimension: DIM, connectionString: input.url, hnsw: true },
  },
  llm: { provider: "openai", config: { apiKey: "unused", model: "gpt-4o-mini" } },
  disableHistory: true,
});
memory.embedder = { embed: (t) => Promise.resolve(embed(t)), embedBatch: (ts) => Promise.resolve(ts.map(embed)) };
memory.llm = {
  generateResponse: () => Promise.resolve(JSON.stringify({ memory: [{ id: "0", text: currentAdd, attributed_to: "user" }] })),
  generateChat: () => Promise.resolve({ content: "{}", role: "assistant" }),
};

const now = () => performance.now();
const out = { search: [], rawSearch: [], add: [], searchIds: [], rawIds: [], errors: [] };

// Warm up the connection and the entity store (not measured).
for (const q of input.queries.slice(0, 3)) {
  await memory.search(q.text, { filters: { user_id: q.userId }, topK: 15 });
}
for (const q of input.queries) {
  try {
    let t0 = now();
    const r = await memory.search(q.text, { filters: { user_id: q.userId }, topK: 15 });
    out.search.push(now() - t0);
    out.searchIds.push((r.results ?? []).map((x) => x.id));
    t0 = now();
    const raw = await memory.vectorStore.search(q.vector, 15, { user_id: q.userId });
    out.rawSearch.push(now() - t0);
    out.rawIds.push(raw.map((x) => x.id));
  } catch (e) {
    out.errors.push(String(e));
  }
}
for (const a of input.adds) {
  try {
    currentAdd = a.text;
    const t0 = now();
    await memory.add(a.text, { userId: a.userId, infer: true });
    out.add.push(now() - t0);
  } catch (e) {
    out.errors.push(String(e));
  }
}
process.stdout.write(JSON.stringify(out));
try { await memory.vectorStore.close(); } catch { /* ignore */ }
try { const es = memory._entityStore; if (es) await es.close(); } catch { /* ignore */ }
process.exit(0);
