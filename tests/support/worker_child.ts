// A queue worker in a process of its own, for tests that kill it mid-job (SIGKILL: no cleanup, no
// last heartbeat). Drains the tenant's extract jobs with the model at FAKE_LLM_URL.
//   DATABASE_URL, FAKE_LLM_URL, TENANT, WORKER_ID, LEASE_SECONDS
import { createSql } from "../../supabase/functions/_shared/db.ts";
import { drainQueue } from "../../supabase/functions/_shared/drain-queue.ts";
import { localEmbedder } from "../../supabase/functions/_shared/embeddings.ts";
import { createLlm } from "../../supabase/functions/_shared/llm.ts";
import { testConfig } from "./config.ts";

const env = (name: string) =>
  Deno.env.get(name) ?? (() => {
    throw new Error(`${name} is not set`);
  })();
const config = testConfig({
  llm: { apiKey: "test-key", baseUrl: env("FAKE_LLM_URL"), model: "fake-llm", timeoutMs: 600_000 },
});
const sql = createSql(env("DATABASE_URL"), { max: 2, applicationName: "devai-test-worker-child" });
await drainQueue({ sql, config, embedder: localEmbedder(), llm: createLlm(config, { retry: { maxRetries: 0 } }) }, {
  ownerId: env("TENANT"),
  workerId: env("WORKER_ID"),
  kinds: ["extract"],
  leaseSeconds: Number(env("LEASE_SECONDS")),
});
await sql.end();
