// EMBEDDING_PROVIDER=supabase: gte-small through the Edge Runtime's Supabase.ai.Session. No Edge
// Runtime runs here, so the runtime is faked at its boundary (the `Supabase` global the runtime
// injects), answering 384-d vectors made from the local embedder's; everything past it is real:
// the configuration, the padding to 512, the thresholds, the errors, and a remember + retrieve
// through the handlers on the real database.
import assert from "node:assert/strict";
import { createHandler as createRetrieve } from "../supabase/functions/memory-retrieve/handler.ts";
import {
  createEmbedder,
  EmbeddingError,
  embedForRequest,
  embedLocally,
  thresholdsFor,
} from "../supabase/functions/_shared/embeddings.ts";
import { ConfigError, loadConfig } from "../supabase/functions/_shared/env.ts";
import { HttpError } from "../supabase/functions/_shared/http.ts";
import {
  GTE_SMALL_DIMENSIONS,
  supabaseAiEmbedder,
  type SupabaseAiRuntime,
} from "../supabase/functions/_shared/supabase-ai-embedder.ts";
import { probeEmbedder } from "../scripts/serve/probe.ts";
import { userHeaders } from "./support/auth.ts";
import { testConfig } from "./support/config.ts";
import { callJson } from "./support/http.ts";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, testSql } from "./support/seed.ts";

const minimal = { DATABASE_URL: "postgresql://postgres@127.0.0.1:1/x", SUPABASE_JWT_SECRET: "s".repeat(32) };

/** The fake model's vector for a text: the local embedder's first 384 values, normalised. */
function fakeVector(text: string): number[] {
  const v = embedLocally(text).slice(0, GTE_SMALL_DIMENSIONS);
  const norm = Math.hypot(...v) || 1;
  return v.map((x) => x / norm);
}

/** A stand-in for the Edge Runtime's Supabase.ai: what it was asked, and a normalised 384-d vector per text. */
function fakeRuntime(answer?: (text: string) => unknown) {
  const made: string[] = [];
  const runs: { text: string; options: unknown }[] = [];
  const runtime: SupabaseAiRuntime = {
    ai: {
      Session: class {
        constructor(model: string) {
          made.push(model);
        }
        run(text: string, options: unknown): Promise<unknown> {
          runs.push({ text, options });
          return Promise.resolve(answer ? answer(text) : fakeVector(text));
        }
      },
    },
  };
  return { runtime, made, runs };
}

Deno.test("config: EMBEDDING_PROVIDER=supabase is gte-small; a key, a base URL or another model beside it is refused", () => {
  assert.deepEqual(loadConfig({ ...minimal, EMBEDDING_PROVIDER: "supabase" }).embedding, {
    provider: "supabase",
    model: "gte-small",
  });
  assert.equal(
    loadConfig({ ...minimal, EMBEDDING_PROVIDER: "supabase", EMBEDDING_MODEL: "gte-small", OPENAI_API_KEY: "sk-x" })
      .embedding.model,
    "gte-small",
    "naming its model is fine, and OPENAI_API_KEY may serve the LLM",
  );
  assert.throws(
    () => loadConfig({ ...minimal, EMBEDDING_PROVIDER: "supabase", EMBEDDING_MODEL: "text-embedding-3-small" }),
    (e) => e instanceof ConfigError && /runs gte-small, the one model Supabase\.ai serves/.test(e.message),
  );
  assert.throws(
    () => loadConfig({ ...minimal, EMBEDDING_PROVIDER: "supabase", EMBEDDING_API_KEY: "k" }),
    (e) => e instanceof ConfigError && /EMBEDDING_PROVIDER=supabase .* ignores EMBEDDING_API_KEY/.test(e.message),
  );
});

Deno.test("supabase embedder: outside the Edge Runtime it is refused at start, saying why", async () => {
  const config = loadConfig({ ...minimal, EMBEDDING_PROVIDER: "supabase" });
  assert.throws(() => createEmbedder(config), (e) => e instanceof ConfigError && /Edge Runtime/.test(e.message));
  await assert.rejects(probeEmbedder(config), (e) => e instanceof ConfigError && /Edge Runtime/.test(e.message));
});

Deno.test("supabase embedder: gte-small's own values padded to 512 with zeros, one session", async () => {
  const { runtime, made, runs } = fakeRuntime();
  const embedder = supabaseAiEmbedder(runtime);
  assert.deepEqual(made, [], "the model loads at the first text, not before");
  const [a, b] = await embedder.embed(["The API uses JWT auth", "Auth is JWT in the API"]);
  const [c] = await embedder.embed(["Deploys run on Fridays"]);
  assert.deepEqual(made, ["gte-small"], "one session for the embedder's life");
  assert.deepEqual(runs.map((r) => r.options), Array(3).fill({ mean_pool: true, normalize: true }));
  for (const v of [a!, b!, c!]) {
    assert.equal(v.length, 512);
    assert.ok(v.slice(GTE_SMALL_DIMENSIONS).every((x) => x === 0));
  }
  // The model's own values, in its order, come first.
  assert.deepEqual(c!.slice(0, GTE_SMALL_DIMENSIONS), fakeVector("Deploys run on Fridays"));
  assert.equal(embedder.provider, "supabase");
  assert.equal(thresholdsFor(embedder.model).retrieve, 0.8, "its own floor, above gte-small's unrelated scores");
});

Deno.test("supabase embedder: a failing or wrong-sized answer is an EmbeddingError, the same 503 as any provider's", async () => {
  const failing = supabaseAiEmbedder(fakeRuntime(() => Promise.reject(new Error("model not loaded"))).runtime);
  await assert.rejects(failing.embed(["x"]), (e) => e instanceof EmbeddingError && /model not loaded/.test(e.message));
  const wrong = supabaseAiEmbedder(fakeRuntime(() => new Array(768).fill(0.01)).runtime);
  await assert.rejects(wrong.embed(["x"]), /returned 768 values; 384 finite numbers were expected/);
  const notANumber = supabaseAiEmbedder(fakeRuntime(() => new Array(384).fill(Number.NaN)).runtime);
  await assert.rejects(notANumber.embed(["x"]), EmbeddingError);
  await assert.rejects(
    embedForRequest(failing, "x"),
    (e) => e instanceof HttpError && e.status === 503 && e.code === "embedding_unavailable",
  );
});

Deno.test({
  name: "supabase embedder: remember and retrieve through the handlers, vectors stored as gte-small",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const { runtime } = fakeRuntime();
  const global = globalThis as { Supabase?: unknown };
  global.Supabase = runtime;
  const sql = testSql(2);
  try {
    const config = testConfig({ embedding: { provider: "supabase", model: "gte-small" } });
    const embedder = createEmbedder(config);
    const t = newTenant();
    const api = memoryApi(sql, { embedder });
    const fact = "The billing API authenticates callers with JWT bearer tokens";
    for (const content of [fact, "Deploys of the storefront happen on Friday mornings"]) {
      const remembered = await api("POST", "/memory/remember", { as: t, body: { content, project: "billing" } });
      assert.equal(remembered.status, 201, JSON.stringify(remembered.body));
    }
    const models = await sql<{ embedding_model: string }[]>`
      select embedding_model from public.devai_memories where owner_id = ${t}`;
    assert.deepEqual(models.map((r) => r.embedding_model), ["gte-small", "gte-small"]);
    const retrieve = createRetrieve({ sql, config, embedder });
    const res = await callJson(retrieve, "http://localhost/functions/v1/memory-retrieve", {
      headers: await userHeaders(t),
      // The fake's vectors are the local embedder's: the fact's own words reach gte-small's floor.
      body: { message: fact, project: "billing", mode: "vector" },
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const body = res.body as { embedding_model: string; memories: { content: string; similarity: number }[] };
    assert.equal(body.embedding_model, "gte-small");
    assert.deepEqual(body.memories.map((m) => m.content), [fact], "only what reaches gte-small's floor (0.8)");
    assert.ok(body.memories[0]!.similarity > 0.8);
  } finally {
    delete global.Supabase;
    await sql.end();
  }
});
