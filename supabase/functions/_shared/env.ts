// Reads and validates the environment once, failing fast with every problem named. Handlers take
// the resulting Config as a dependency, so tests build one from a plain object.
import { z } from "zod";

const optionalText = z.string().trim().min(1).optional();
const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);
// No default: an unset threshold means "the embedding model's own calibration" (thresholdsFor).
// (zod 4 applies .default() even under .optional(), so a default here would pin every model to it.)
const unitInterval = z.coerce.number().min(0).max(1).optional();

const EnvSchema = z.object({
  // Supabase injects SUPABASE_DB_URL into deployed functions; use the transaction pooler URL there.
  SUPABASE_DB_URL: optionalText,
  DATABASE_URL: optionalText,
  DB_POOL_MAX: positiveInt(10),
  DB_STATEMENT_TIMEOUT_MS: positiveInt(15_000),
  // HS256 secret (local server, legacy projects) or a JWKS endpoint (asymmetric signing keys).
  SUPABASE_JWT_SECRET: optionalText,
  JWT_SECRET: optionalText,
  SUPABASE_URL: optionalText,
  JWKS_URL: optionalText,
  // Embeddings: OpenAI or any OpenAI-compatible server; without a key, the local hash embedder.
  EMBEDDING_PROVIDER: z.enum(["openai", "local"]).optional(),
  EMBEDDING_API_KEY: optionalText,
  EMBEDDING_BASE_URL: optionalText,
  EMBEDDING_MODEL: z.string().trim().min(1).default("text-embedding-3-small"),
  OPENAI_API_KEY: optionalText,
  OPENAI_BASE_URL: optionalText,
  // Chat model for extraction, dedup decisions and compaction.
  LLM_API_KEY: optionalText,
  LLM_BASE_URL: optionalText,
  LLM_MODEL: z.string().trim().min(1).default("gpt-4o-mini"),
  LLM_TIMEOUT_MS: positiveInt(60_000),
  // Memory behaviour.
  MEMORY_NAMESPACE_ROOT: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,39}$/, "lowercase letters, digits, _ or -").default("devai"),
  RETRIEVAL_THRESHOLD: unitInterval,
  RETRIEVAL_TOP_K: positiveInt(15),
  RETRIEVAL_BUDGET_TOKENS: positiveInt(2000),
  DEDUP_THRESHOLD: unitInterval,
  EXTRACT_DAILY_CAP: positiveInt(200),
  MAX_BODY_BYTES: positiveInt(256 * 1024),
  MAX_COMPACT_BODY_BYTES: positiveInt(8 * 1024 * 1024),
});

export interface Config {
  databaseUrl: string;
  dbPoolMax: number;
  /** Longest a statement of a request's transaction may run before the request is a 503. */
  dbStatementTimeoutMs: number;
  jwt: { secret?: string; jwksUrl?: string };
  embedding: { provider: "openai" | "local"; apiKey?: string; baseUrl?: string; model: string };
  llm: { apiKey?: string; baseUrl?: string; model: string; timeoutMs: number };
  namespaceRoot: string;
  retrieval: { threshold?: number; topK: number; budgetTokens: number };
  dedupThreshold?: number;
  extractDailyCap: number;
  maxBodyBytes: number;
  maxCompactBodyBytes: number;
}

export class ConfigError extends Error {
  override name = "ConfigError";
}

export function loadConfig(env: Record<string, string | undefined> = Deno.env.toObject()): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
    throw new ConfigError(`invalid environment: ${problems}`);
  }
  const e = parsed.data;
  const databaseUrl = e.SUPABASE_DB_URL ?? e.DATABASE_URL;
  if (!databaseUrl) throw new ConfigError("invalid environment: set SUPABASE_DB_URL or DATABASE_URL");
  const secret = e.SUPABASE_JWT_SECRET ?? e.JWT_SECRET;
  const jwksUrl = e.JWKS_URL ?? (e.SUPABASE_URL ? `${e.SUPABASE_URL.replace(/\/$/, "")}/auth/v1/.well-known/jwks.json` : undefined);
  if (!secret && !jwksUrl) {
    throw new ConfigError("invalid environment: set SUPABASE_JWT_SECRET (HS256) or SUPABASE_URL/JWKS_URL (JWKS) to verify tokens");
  }
  const embeddingKey = e.EMBEDDING_API_KEY ?? e.OPENAI_API_KEY;
  const provider = e.EMBEDDING_PROVIDER ?? (embeddingKey ? "openai" : "local");
  if (provider === "openai" && !embeddingKey) {
    throw new ConfigError("invalid environment: EMBEDDING_PROVIDER=openai needs EMBEDDING_API_KEY or OPENAI_API_KEY");
  }
  return {
    databaseUrl,
    dbPoolMax: e.DB_POOL_MAX,
    dbStatementTimeoutMs: e.DB_STATEMENT_TIMEOUT_MS,
    jwt: { secret, jwksUrl: secret ? undefined : jwksUrl },
    embedding: {
      provider,
      apiKey: embeddingKey,
      baseUrl: e.EMBEDDING_BASE_URL ?? e.OPENAI_BASE_URL,
      model: provider === "local" ? LOCAL_EMBEDDING_MODEL : e.EMBEDDING_MODEL,
    },
    llm: {
      apiKey: e.LLM_API_KEY ?? e.OPENAI_API_KEY,
      baseUrl: e.LLM_BASE_URL ?? e.OPENAI_BASE_URL,
      model: e.LLM_MODEL,
      timeoutMs: e.LLM_TIMEOUT_MS,
    },
    namespaceRoot: e.MEMORY_NAMESPACE_ROOT,
    retrieval: { threshold: e.RETRIEVAL_THRESHOLD, topK: e.RETRIEVAL_TOP_K, budgetTokens: e.RETRIEVAL_BUDGET_TOKENS },
    dedupThreshold: e.DEDUP_THRESHOLD,
    extractDailyCap: e.EXTRACT_DAILY_CAP,
    maxBodyBytes: e.MAX_BODY_BYTES,
    maxCompactBodyBytes: e.MAX_COMPACT_BODY_BYTES,
  };
}

/** Model id recorded on rows embedded by the deterministic local embedder. */
export const LOCAL_EMBEDDING_MODEL = "local-hash-512-v1";
