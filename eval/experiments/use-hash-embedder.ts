// The Universal Sentence Encoder's vector (eval/experiments/use-embedder.mjs, already listening at
// the URL given) plus USE_HASH_ALPHA (default 0.5) times the hashed n-gram embedder's, both unit
// length, renormalised: USE's word pieces blur exact identifiers (file paths, error codes) that
// the n-grams keep. Served like the other experiments' embedders.
//   deno run -A --config supabase/functions/deno.json eval/experiments/use-hash-embedder.ts <USE url>
import { embedLocally } from "../../supabase/functions/_shared/embeddings.ts";
import { serveEmbeddings } from "./embedder-server.ts";

const useUrl = Deno.args[0];
if (!useUrl) throw new Error("usage: use-hash-embedder.ts <url of use-embedder.mjs>");
const alpha = Number(Deno.env.get("USE_HASH_ALPHA") ?? 0.5);

async function useVector(text: string): Promise<number[]> {
  const res = await fetch(`${useUrl}/v1/embeddings`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ input: text, model: "use-lite-512-v1" }),
  });
  if (!res.ok) throw new Error(`use-embedder answered ${res.status}`);
  return (await res.json() as { data: { embedding: number[] }[] }).data[0]!.embedding;
}

await serveEmbeddings(async (text) => {
  const u = await useVector(text), h = embedLocally(text);
  const v = u.map((x, i) => x + alpha * h[i]!);
  const n = Math.hypot(...v) || 1;
  return v.map((x) => x / n);
});
