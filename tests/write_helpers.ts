// Shared setup for the write-path tests: a fake OpenAI server for both chat and embeddings (so
// tests script similarity exactly with fake.setEmbedding), the real SDK clients pointed at it, and
// the test database.
import { createEmbedder, type Embedder } from "../supabase/functions/_shared/embeddings.ts";
import type { Config } from "../supabase/functions/_shared/env.ts";
import { type Sql, withTenant } from "../supabase/functions/_shared/db.ts";
import { createLlm, type Llm, type LlmOptions } from "../supabase/functions/_shared/llm.ts";
import { drainQueue, type DrainReport } from "../supabase/functions/_shared/drain-queue.ts";
import { enqueueJob, type JobKind } from "../supabase/functions/_shared/jobs.ts";
import { GRAPH_JOB_KINDS } from "../supabase/functions/_shared/graph-jobs.ts";
import { FakeOpenAI } from "./fake_openai.ts";
import { testConfig } from "./support/config.ts";
import { testSql } from "./support/seed.ts";

export const EMBEDDING_MODEL = "text-embedding-3-small";

export interface WriteEnv {
  fake: FakeOpenAI;
  sql: Sql;
  config: Config;
  embedder: Embedder;
  llm: Llm;
  deps: { sql: Sql; config: Config; embedder: Embedder; llm?: Llm };
  close(): Promise<void>;
}

export async function writeEnv(
  opts: { llm?: LlmOptions; config?: Partial<Config>; withLlm?: boolean; llmTimeoutMs?: number } = {},
): Promise<WriteEnv> {
  const fake = await FakeOpenAI.start();
  const sql = testSql(8);
  const config: Config = {
    ...testConfig({
      llm: { apiKey: "test-key", baseUrl: fake.baseUrl, model: "fake-llm", timeoutMs: opts.llmTimeoutMs ?? 2_000 },
      embedding: { provider: "openai", apiKey: "test-key", baseUrl: fake.baseUrl, model: EMBEDDING_MODEL },
    }),
    ...opts.config,
  };
  const embedder = createEmbedder(config);
  const llm = createLlm(config, { retry: { baseDelayMs: 5, maxDelayMs: 200 }, ...opts.llm })!;
  const deps = { sql, config, embedder, llm: opts.withLlm === false ? undefined : llm };
  return {
    fake,
    sql,
    config,
    embedder,
    llm,
    deps,
    async close() {
      await fake.close();
      await sql.end();
    },
  };
}

/**
 * writeEnv with a model whose held answers (reply.until) outlast any wait in a test: writeEnv's
 * client gives up after 2 s. The worker's deps use it; the env's own llm stays as it is.
 */
export async function patientEnv() {
  const env = await writeEnv();
  const llm = createLlm({ ...env.config, llm: { ...env.config.llm!, timeoutMs: 60_000 } }, {
    retry: { baseDelayMs: 5 },
  })!;
  return { env, deps: { ...env.deps, llm } };
}

/** The write path's and the graph's job kinds: what drainAll runs unless told otherwise. */
export const WRITE_AND_GRAPH_KINDS: JobKind[] = ["extract", "dedup", ...GRAPH_JOB_KINDS];

/**
 * Drains until nothing is claimable; retries happen at once (backoff base 0). By default only the
 * write path's and the graph's jobs: the background jobs writers queue besides (contradiction
 * checks) stay queued for the tests of docs/consolidation.md, which pass their kinds.
 */
export async function drainAll(
  deps: WriteEnv["deps"],
  ownerId: string,
  workerId = "test-worker",
  maxJobs = 50,
  kinds: JobKind[] = WRITE_AND_GRAPH_KINDS,
): Promise<DrainReport> {
  return await drainQueue(deps, { workerId, maxJobs, backoffBaseMs: 0, ownerId, kinds });
}

export async function memoriesOf(sql: Sql, tenant: string) {
  return await sql<
    {
      id: string;
      content: string;
      namespace: string;
      is_valid: boolean;
      superseded_by: string | null;
      source: string | null;
      priority: string;
      memory_type: string;
    }[]
  >`
    select id, content, namespace, is_valid, superseded_by, source, priority, memory_type
      from public.devai_memories where owner_id = ${tenant} order by created_at, id`;
}

/** The tenant's jobs of the write path and the graph (as drainAll runs them), oldest first. */
export async function jobsOf(sql: Sql, tenant: string, kinds: JobKind[] = WRITE_AND_GRAPH_KINDS) {
  return await sql<
    {
      id: string;
      kind: string;
      status: string;
      attempts: number;
      last_error: string | null;
      result: unknown;
      idempotency_key: string;
    }[]
  >`
    select id, kind, status, attempts, last_error, result, idempotency_key from public.memory_jobs
     where owner_id = ${tenant} and kind = any (${kinds}::text[]) order by created_at`;
}

/** A dedup job holding one agent-learned candidate of the tenant's, `content` in `namespace` (as POST memory-dedup queues it). */
export const queueDedupCandidate = (env: WriteEnv, tenant: string, key: string, content: string, namespace: string) =>
  withTenant(env.sql, { tenantId: tenant, actor: "test" }, (tx) =>
    enqueueJob(tx, {
      ownerId: tenant,
      kind: "dedup",
      idempotencyKey: key,
      payload: {
        candidates: [{ content, type: "semantic", namespace, source: "discovery", priority: "low", importance: 3 }],
        origin: "api",
      },
    }));
