// Configuration that cannot surprise: what env.ts accepts and refuses, the server's start-up probe
// of the embedding and LLM providers (refusing to start on what it can detect), the same 503 from
// every route when the embedder fails at run time, and a README that documents every variable.
import assert from "node:assert/strict";
import { createHandler as createRetrieve } from "../supabase/functions/memory-retrieve/handler.ts";
import { createEmbedder } from "../supabase/functions/_shared/embeddings.ts";
import { ConfigError, ENV_VARIABLES, loadConfig } from "../supabase/functions/_shared/env.ts";
import { createLlm } from "../supabase/functions/_shared/llm.ts";
import { banner } from "../scripts/serve.ts";
import { FakeOpenAI } from "./fake_openai.ts";
import { userHeaders } from "./support/auth.ts";
import { testConfig } from "./support/config.ts";
import { callJson } from "./support/http.ts";
import { startTestServer } from "./support/http_server.ts";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, testSql } from "./support/seed.ts";

const minimal = { DATABASE_URL: "postgresql://postgres@127.0.0.1:1/x", SUPABASE_JWT_SECRET: "s".repeat(32) };
const opts = { sanitizeResources: false, sanitizeOps: false };

Deno.test("config: a base URL alone selects an OpenAI-compatible embedder, as it selects the LLM (no key needed)", () => {
  const c = loadConfig({
    ...minimal,
    EMBEDDING_BASE_URL: "http://127.0.0.1:11434/v1",
    EMBEDDING_MODEL: "nomic-embed-text",
  });
  assert.deepEqual(c.embedding, {
    provider: "openai",
    apiKey: undefined,
    baseUrl: "http://127.0.0.1:11434/v1",
    model: "nomic-embed-text",
  });
  const shared = loadConfig({ ...minimal, OPENAI_BASE_URL: "http://127.0.0.1:11434/v1" });
  assert.equal(shared.embedding.provider, "openai");
  assert.equal(shared.llm.baseUrl, "http://127.0.0.1:11434/v1");
  assert.ok(
    createLlm(loadConfig({ ...minimal, LLM_BASE_URL: "http://127.0.0.1:11434/v1" })),
    "LLM_BASE_URL alone enables the LLM",
  );
  assert.equal(loadConfig(minimal).embedding.provider, "local");
});

Deno.test("config: settings that cannot be meant are refused, naming the variables", () => {
  assert.throws(
    () => loadConfig({ ...minimal, EMBEDDING_MODEL: "text-embedding-3-large" }),
    (e) => e instanceof ConfigError && /EMBEDDING_MODEL is set but there is no server/.test(e.message),
  );
  assert.throws(
    () => loadConfig({ ...minimal, EMBEDDING_PROVIDER: "local", EMBEDDING_BASE_URL: "http://x/v1" }),
    (e) => e instanceof ConfigError && /EMBEDDING_PROVIDER=local ignores EMBEDDING_BASE_URL/.test(e.message),
  );
  assert.throws(
    () => loadConfig({ ...minimal, EMBEDDING_PROVIDER: "openai" }),
    /needs EMBEDDING_API_KEY or OPENAI_API_KEY/,
  );
  // The LLM's key beside the local embedder is fine: OPENAI_API_KEY serves both when both are wanted.
  assert.equal(
    loadConfig({ ...minimal, EMBEDDING_PROVIDER: "local", OPENAI_API_KEY: "sk-x" }).embedding.provider,
    "local",
  );
});

Deno.test("config: the README's configuration table names every variable env.ts reads", async () => {
  const readme = await Deno.readTextFile(new URL("../README.md", import.meta.url));
  const table = readme.slice(
    readme.indexOf("## Configuration"),
    readme.indexOf("\n## ", readme.indexOf("## Configuration") + 1),
  );
  const missing = ENV_VARIABLES.filter((v) => !table.includes(`\`${v}\``));
  assert.deepEqual(missing, []);
});

Deno.test({
  name: "probe: the server refuses to start on a wrong dimension, an unreachable provider or a refused key",
  ...opts,
}, async () => {
  const fake = await FakeOpenAI.start();
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const deadUrl = `http://127.0.0.1:${(closed.addr as Deno.NetAddr).port}/v1`;
  closed.close();
  try {
    const start = (env: Record<string, string>) =>
      startTestServer({ env: { DB_POOL_MAX: "2", ...env }, worker: false });
    fake.embeddingDimensions = 768;
    await assert.rejects(
      start({ EMBEDDING_BASE_URL: fake.baseUrl }),
      (e) => e instanceof ConfigError && /returned 768 dimensions/.test(e.message),
    );
    fake.embeddingDimensions = undefined;
    await assert.rejects(
      start({ EMBEDDING_BASE_URL: deadUrl }),
      (e) => e instanceof ConfigError && /failed the start-up probe/.test(e.message),
    );
    await assert.rejects(
      start({ LLM_BASE_URL: deadUrl }),
      (e) => e instanceof ConfigError && /LLM: .* is unreachable/.test(e.message),
    );
    fake.requireKey = "sk-right";
    await assert.rejects(
      start({ LLM_BASE_URL: fake.baseUrl, LLM_API_KEY: "sk-wrong" }),
      (e) => e instanceof ConfigError && /refused the key \(HTTP 401\)/.test(e.message),
    );
    await assert.rejects(
      start({ EMBEDDING_BASE_URL: fake.baseUrl, EMBEDDING_API_KEY: "sk-wrong" }),
      (e) => e instanceof ConfigError && /401/.test(e.message),
    );

    // Well configured: it starts and the banner says what it checked.
    const server = await start({
      EMBEDDING_BASE_URL: fake.baseUrl,
      EMBEDDING_API_KEY: "sk-right",
      LLM_BASE_URL: fake.baseUrl,
      LLM_API_KEY: "sk-right",
      LLM_MODEL: "fake-llm",
    });
    try {
      const text = banner(server);
      assert.match(
        text,
        new RegExp(`Embeddings +text-embedding-3-small at ${fake.baseUrl}: 512 dimensions, answered in \\d+ ms`),
      );
      assert.match(text, new RegExp(`LLM +fake-llm at ${fake.baseUrl}: reachable, model listed`));
    } finally {
      await server.close();
    }
    // A model the server does not list is reported, not refused (names differ between servers).
    const unlisted = await start({ LLM_BASE_URL: fake.baseUrl, LLM_API_KEY: "sk-right", LLM_MODEL: "gpt-9" });
    try {
      assert.match(
        banner(unlisted),
        /LLM +gpt-9 at .*: reachable, but gpt-9 is not in its model list \(fake-llm, text-embedding-3-small\): check LLM_MODEL/,
      );
      assert.match(banner(unlisted), /Embeddings +local \(local-hash-512-v1\)/);
    } finally {
      await unlisted.close();
    }
  } finally {
    await fake.close();
  }
});

Deno.test({
  name: "run time: a failing embedder (here 768 dimensions) is the same 503 from remember, retrieve and memory.query",
  ...opts,
}, async () => {
  const fake = await FakeOpenAI.start();
  const sql = testSql(2);
  try {
    fake.embeddingDimensions = 768;
    const config = testConfig({
      embedding: { provider: "openai", apiKey: "k", baseUrl: fake.baseUrl, model: "nomic-embed-text" },
    });
    const embedder = createEmbedder(config);
    const t = newTenant();
    const remember = await memoryApi(sql, { embedder })("POST", "/memory/remember", {
      as: t,
      body: { content: "The API uses JWT" },
    });
    const retrieve = createRetrieve({ sql, config, embedder });
    const retrieved = await callJson(retrieve, "http://localhost/functions/v1/memory-retrieve", {
      headers: await userHeaders(t),
      body: { message: "auth?" },
    });
    const queried = await callJson(retrieve, "http://localhost/functions/v1/memory-retrieve/query", {
      headers: await userHeaders(t),
      body: { agent: "coder", query: "auth?" },
    });
    for (const [name, res] of [["remember", remember], ["retrieve", retrieved], ["query", queried]] as const) {
      assert.equal(res.status, 503, `${name}: ${JSON.stringify(res.body)}`);
      const error = (res.body as { error: { code: string; message: string } }).error;
      assert.equal(error.code, "embedding_unavailable", name);
      assert.match(error.message, /nomic-embed-text.*returned 768 dimensions; 512 are required/, name);
    }
  } finally {
    await sql.end();
    await fake.close();
  }
});
