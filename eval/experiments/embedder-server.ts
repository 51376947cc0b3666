// The experiments' embedders, served as an OpenAI-compatible /v1/embeddings endpoint on loopback so
// `npm run eval` measures them like any configured provider (EMBEDDING_BASE_URL). Listens on
// EMBEDDER_PORT (default 0: a free port) and prints `listening on http://127.0.0.1:<port>`, which
// eval/experiments/embedder-eval.sh waits for.
export async function serveEmbeddings(embed: (text: string) => number[] | Promise<number[]>): Promise<void> {
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: Number(Deno.env.get("EMBEDDER_PORT") ?? 0),
    onListen: (a) => console.log(`listening on http://127.0.0.1:${a.port}`),
  }, async (req) => {
    if (new URL(req.url).pathname !== "/v1/embeddings") return new Response("not found", { status: 404 });
    const body = await req.json() as { input: string | string[]; model: string };
    const inputs = Array.isArray(body.input) ? body.input : [body.input];
    return Response.json({
      object: "list",
      model: body.model,
      data: await Promise.all(
        inputs.map(async (t, index) => ({ object: "embedding", index, embedding: await embed(t) })),
      ),
      usage: { prompt_tokens: 0, total_tokens: 0 },
    });
  });
  await server.finished;
}
