// Reads and validates the environment once, failing fast with every problem named. Handlers take
// the resulting Config as a dependency, so tests build one from a plain object.
import { z } from "zod";
import type { PrepareSetting } from "./db-prepare.ts";
import { issuesText } from "./issue-text.ts";
import { MAX_BUDGET_TOKENS, MAX_TOP_K } from "./retrieval/schemas.ts";
import { intWithin } from "./schemas.ts";

const optionalText = z.string().trim().min(1).optional();
// A database URL. The message never repeats the value: it may hold a password.
// Several hosts (host1:5432,host2:5433, which postgres.js tries in turn) are no WHATWG URL.
const postgresUrl = z.string().trim().min(1).refine((v) => {
  if (/^postgres(?:ql)?:\/\/[^/?#]*,[^/?#]*(?:[/?#]|$)/.test(v)) return true;
  try {
    return ["postgres:", "postgresql:"].includes(new URL(v).protocol);
  } catch {
    return false;
  }
}, "must be a postgres:// or postgresql:// URL (the value is not shown: it may hold a password)").optional();
// "256k" or "abc" coerce to NaN, which zod reports as "expected number, received NaN": say what to write.
const inDigits = {
  error: (issue: { code: string; expected?: string }) =>
    issue.code === "invalid_type" && issue.expected === "number"
      ? "expected a number written in digits, without a unit (e.g. 262144, not 256k)"
      : undefined,
};
const number = () => z.coerce.number(inDigits);
const positiveInt = (fallback: number) => number().int().positive().default(fallback);
// A bounded integer, refused in a request's words for its bounded integers (schemas.ts intWithin:
// "an integer 1-50"): RETRIEVAL_TOP_K=200 was refused as "Too big: expected number to be <=50".
const integerWithin = (min: number, max: number) => number().pipe(intWithin(min, max));
// A duration: a timer (and Postgres's statement_timeout) holds at most 2^31 - 1 ms (24.8 days). Past
// it, DB_STATEMENT_TIMEOUT_MS=3000000000 started, then every request was a 400 "a value in the
// request is out of range" (statement_timeout refused) or a 503 (the timer fired at once).
const MAX_TIMER_MS = 2 ** 31 - 1;
const TIMERS = { ms: MAX_TIMER_MS, why: "(24.8 days): timers hold no more" };
const milliseconds = (fallback: number, min = 1, max = TIMERS) =>
  number().int().min(min).max(max.ms, `at most ${max.ms} ms ${max.why}`).default(fallback);
// The statement timeout is multiplied: an export's copy waits for its reader up to four of them, in
// a timer (db-snapshot.ts). The bound is a fifth, as when the export also had Postgres end its
// session after five (idle_in_transaction_session_timeout; with DB_STATEMENT_TIMEOUT_MS=429496730
// every export was a 400), so that a configuration valid then is valid now.
export const MAX_STATEMENT_TIMEOUT_MS = Math.floor(MAX_TIMER_MS / 5);
// No default: an unset threshold means "the embedding model's own calibration" (thresholdsFor).
// (zod 4 applies .default() even under .optional(), so a default here would pin every model to it.)
const unitInterval = number().min(0).max(1).optional();

const EnvSchema = z.object({
  // Supabase injects SUPABASE_DB_URL into deployed functions; use the transaction pooler URL there.
  SUPABASE_DB_URL: postgresUrl,
  DATABASE_URL: postgresUrl,
  // A read replica (Supabase read replicas): retrieval's and the memory API's reads go there.
  SUPABASE_DB_READ_URL: postgresUrl,
  DB_POOL_MAX: positiveInt(10),
  DB_STATEMENT_TIMEOUT_MS: milliseconds(15_000, 1, {
    ms: MAX_STATEMENT_TIMEOUT_MS,
    why: `(4.97 days): an export's copy waits up to four times it for its client, in a timer`,
  }),
  // Prepared statements: auto (by the URL: not behind a transaction pooler), on or off (db-prepare.ts).
  DB_PREPARE: z.enum(["auto", "on", "off"]).default("auto"),
  // Token verification (docs/auth.md): the legacy HS256 secret and the project's JWKS, both at once.
  // Hosted projects reserve the SUPABASE_ prefix for what they inject (SUPABASE_URL, SUPABASE_JWKS,
  // SUPABASE_SECRET_KEYS, …): a secret you set yourself is JWT_SECRET / JWKS_URL.
  SUPABASE_JWT_SECRET: optionalText,
  JWT_SECRET: optionalText,
  SUPABASE_URL: optionalText,
  JWKS_URL: optionalText,
  SUPABASE_JWKS: optionalText,
  // Supabase's API keys (JSON dictionaries of name → key, injected into hosted functions):
  // sb_secret_… keys act as service_role, sb_publishable_… keys as anon.
  SUPABASE_SECRET_KEYS: optionalText,
  SUPABASE_PUBLISHABLE_KEYS: optionalText,
  // Embeddings: OpenAI or any OpenAI-compatible server (a key or a base URL); neither: the local hash embedder.
  EMBEDDING_PROVIDER: z.enum(["openai", "local", "supabase"]).optional(),
  EMBEDDING_API_KEY: optionalText,
  EMBEDDING_BASE_URL: optionalText,
  EMBEDDING_MODEL: z.string().trim().min(1).default("text-embedding-3-small"),
  OPENAI_API_KEY: optionalText,
  OPENAI_BASE_URL: optionalText,
  // Chat model for extraction, dedup decisions and compaction.
  LLM_API_KEY: optionalText,
  LLM_BASE_URL: optionalText,
  LLM_MODEL: z.string().trim().min(1).default("gpt-4o-mini"),
  LLM_TIMEOUT_MS: milliseconds(60_000),
  // A worker drain's wall-clock budget: under the hosted function's limit (docs/operations.md#a-drains-deadline).
  // At least 10 s: a smaller one would cut every job before its first answer, postponing it forever.
  WORKER_DRAIN_BUDGET_MS: milliseconds(120_000, 10_000),
  // How many drains started after writes run at once in one function instance (docs/operations.md#drains-after-a-write).
  WORKER_KICKED_DRAINS: integerWithin(1, 16).default(1),
  // Memory behaviour.
  MEMORY_NAMESPACE_ROOT: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,39}$/, "lowercase letters, digits, _ or -").default(
    "devai",
  ),
  RETRIEVAL_THRESHOLD: unitInterval,
  // Unset: retrieval sizes its answer by the query's complexity (docs/retrieval.md#intent). Held to
  // a request's bounds: past them a start is refused, naming the bound (it was capped unsaid, so
  // RETRIEVAL_TOP_K=200 ran with 50).
  RETRIEVAL_TOP_K: integerWithin(1, MAX_TOP_K).optional(),
  RETRIEVAL_BUDGET_TOKENS: integerWithin(1, MAX_BUDGET_TOKENS).optional(),
  // Searches' reinforcement and events are written in batches this often
  // (docs/operations.md#write-behind-reinforcement-and-search-events).
  RETRIEVAL_WRITE_BEHIND_MS: milliseconds(200),
  DEDUP_THRESHOLD: unitInterval,
  EXTRACT_DAILY_CAP: positiveInt(200),
  MAX_BODY_BYTES: positiveInt(256 * 1024),
  MAX_COMPACT_BODY_BYTES: positiveInt(8 * 1024 * 1024),
  MAX_EXTRACT_BODY_BYTES: positiveInt(8 * 1024 * 1024),
  MAX_CHECKPOINT_BYTES: positiveInt(4 * 1024 * 1024),
});

export interface Config {
  databaseUrl: string;
  /** A read replica of databaseUrl, for reads that may lag it (docs/operations.md#read-replicas). */
  databaseReadUrl?: string;
  dbPoolMax: number;
  /** Longest a statement of a request's transaction may run before the request is a 503. */
  dbStatementTimeoutMs: number;
  /** Whether statements are prepared (DB_PREPARE; db-prepare.ts). */
  dbPrepare: PrepareSetting;
  /** HS256 secret for legacy tokens; the JWKS (inline, else fetched from jwksUrl) for asymmetric ones. */
  jwt: { secret?: string; jwks?: JsonWebKeySet; jwksUrl?: string };
  /** Supabase's API keys (sent in the apikey header): secret keys act as service_role. */
  apiKeys: { secret: string[]; publishable: string[] };
  /** The project's public URL (SUPABASE_URL): what MCP clients are told the resource and its authorization server are. */
  publicUrl?: string;
  embedding: { provider: "openai" | "local" | "supabase"; apiKey?: string; baseUrl?: string; model: string };
  llm: { apiKey?: string; baseUrl?: string; model: string; timeoutMs: number };
  /** A worker drain's wall-clock budget (drain-deadline.ts); unset: 120 s. */
  workerDrainBudgetMs?: number;
  /** Drains started after writes running at once in this instance (drain-kick.ts); unset: 1. */
  workerKickedDrains?: number;
  namespaceRoot: string;
  /** topK / budgetTokens unset: chosen per query by its complexity. writeBehindMs: searches' writes wait at most this long. */
  retrieval: { threshold?: number; topK?: number; budgetTokens?: number; writeBehindMs?: number };
  dedupThreshold?: number;
  extractDailyCap: number;
  maxBodyBytes: number;
  maxCompactBodyBytes: number;
  /** memory-extract's body limit: a long session's transcript (or the part after what it sent). */
  maxExtractBodyBytes: number;
  /** PUT memory/checkpoints/{thread_id}'s body limit: an agent's whole saved state. */
  maxCheckpointBytes: number;
}

export class ConfigError extends Error {
  override name = "ConfigError";
}

export function loadConfig(env: Record<string, string | undefined> = Deno.env.toObject()): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const problems = issuesText(parsed.error.issues);
    throw new ConfigError(`invalid environment: ${problems}`);
  }
  const e = parsed.data;
  const databaseUrl = e.SUPABASE_DB_URL ?? e.DATABASE_URL;
  if (!databaseUrl) throw new ConfigError("invalid environment: set SUPABASE_DB_URL or DATABASE_URL");
  const secret = e.SUPABASE_JWT_SECRET ?? e.JWT_SECRET;
  const publicUrl = e.SUPABASE_URL?.replace(/\/+$/, "");
  const jwksUrl = e.JWKS_URL ?? (publicUrl ? `${publicUrl}/auth/v1/.well-known/jwks.json` : undefined);
  const jwks = e.SUPABASE_JWKS ? parseJwks(e.SUPABASE_JWKS) : undefined;
  if (!secret && !jwksUrl && !jwks) {
    throw new ConfigError(
      "invalid environment: set JWT_SECRET or SUPABASE_JWT_SECRET (HS256), or SUPABASE_URL / JWKS_URL / SUPABASE_JWKS (the project's JWKS), or both, to verify tokens",
    );
  }
  const embedding = embeddingProvider(e, env.EMBEDDING_MODEL !== undefined);
  return {
    databaseUrl,
    databaseReadUrl: e.SUPABASE_DB_READ_URL,
    dbPoolMax: e.DB_POOL_MAX,
    dbStatementTimeoutMs: e.DB_STATEMENT_TIMEOUT_MS,
    dbPrepare: e.DB_PREPARE,
    jwt: { secret, jwks, jwksUrl },
    apiKeys: {
      secret: apiKeysOf("SUPABASE_SECRET_KEYS", e.SUPABASE_SECRET_KEYS, "sb_secret_"),
      publishable: apiKeysOf("SUPABASE_PUBLISHABLE_KEYS", e.SUPABASE_PUBLISHABLE_KEYS, "sb_publishable_"),
    },
    publicUrl,
    embedding,
    llm: {
      apiKey: e.LLM_API_KEY ?? e.OPENAI_API_KEY,
      baseUrl: e.LLM_BASE_URL ?? e.OPENAI_BASE_URL,
      model: e.LLM_MODEL,
      timeoutMs: e.LLM_TIMEOUT_MS,
    },
    workerDrainBudgetMs: e.WORKER_DRAIN_BUDGET_MS,
    workerKickedDrains: e.WORKER_KICKED_DRAINS,
    namespaceRoot: e.MEMORY_NAMESPACE_ROOT,
    retrieval: {
      threshold: e.RETRIEVAL_THRESHOLD,
      topK: e.RETRIEVAL_TOP_K,
      budgetTokens: e.RETRIEVAL_BUDGET_TOKENS,
      writeBehindMs: e.RETRIEVAL_WRITE_BEHIND_MS,
    },
    dedupThreshold: e.DEDUP_THRESHOLD,
    extractDailyCap: e.EXTRACT_DAILY_CAP,
    maxBodyBytes: e.MAX_BODY_BYTES,
    maxCompactBodyBytes: e.MAX_COMPACT_BODY_BYTES,
    maxExtractBodyBytes: e.MAX_EXTRACT_BODY_BYTES,
    maxCheckpointBytes: e.MAX_CHECKPOINT_BYTES,
  };
}

/**
 * Which embedder the environment asks for. The same rule as the LLM: a key OR a base URL selects an
 * OpenAI-compatible server (local servers such as Ollama need no key); neither, the local embedder.
 * What cannot be meant is refused rather than guessed: a model named with nothing to call it, or
 * EMBEDDING_PROVIDER=local beside settings only a server uses.
 */
function embeddingProvider(e: z.infer<typeof EnvSchema>, modelNamed: boolean): Config["embedding"] {
  const apiKey = e.EMBEDDING_API_KEY ?? e.OPENAI_API_KEY;
  const baseUrl = e.EMBEDDING_BASE_URL ?? e.OPENAI_BASE_URL;
  const provider = e.EMBEDDING_PROVIDER ?? (apiKey || baseUrl ? "openai" : "local");
  if (provider === "supabase") {
    const serverOnly = [e.EMBEDDING_BASE_URL && "EMBEDDING_BASE_URL", e.EMBEDDING_API_KEY && "EMBEDDING_API_KEY"]
      .filter(Boolean);
    if (serverOnly.length > 0) {
      throw new ConfigError(
        `invalid environment: EMBEDDING_PROVIDER=supabase runs gte-small in the Edge Runtime and ignores ${
          serverOnly.join(", ")
        }; unset them, or EMBEDDING_PROVIDER`,
      );
    }
    if (modelNamed && e.EMBEDDING_MODEL !== SUPABASE_EMBEDDING_MODEL) {
      throw new ConfigError(
        `invalid environment: EMBEDDING_PROVIDER=supabase runs ${SUPABASE_EMBEDDING_MODEL}, the one model Supabase.ai serves; ` +
          `EMBEDDING_MODEL=${e.EMBEDDING_MODEL} cannot be (unset it)`,
      );
    }
    return { provider, model: SUPABASE_EMBEDDING_MODEL };
  }
  if (provider === "local") {
    const serverOnly = [
      e.EMBEDDING_BASE_URL && "EMBEDDING_BASE_URL",
      e.EMBEDDING_API_KEY && "EMBEDDING_API_KEY",
      modelNamed && "EMBEDDING_MODEL",
    ].filter(Boolean);
    if (serverOnly.length > 0 && e.EMBEDDING_PROVIDER === "local") {
      throw new ConfigError(
        `invalid environment: EMBEDDING_PROVIDER=local ignores ${
          serverOnly.join(", ")
        }; unset them, or EMBEDDING_PROVIDER`,
      );
    }
    if (modelNamed) {
      throw new ConfigError(
        "invalid environment: EMBEDDING_MODEL is set but there is no server to call it: set EMBEDDING_BASE_URL " +
          "(an OpenAI-compatible server) or EMBEDDING_API_KEY / OPENAI_API_KEY (OpenAI), or unset EMBEDDING_MODEL for the local embedder",
      );
    }
    return { provider, model: LOCAL_EMBEDDING_MODEL };
  }
  if (!apiKey && !baseUrl) {
    throw new ConfigError(
      "invalid environment: EMBEDDING_PROVIDER=openai needs EMBEDDING_API_KEY or OPENAI_API_KEY (or EMBEDDING_BASE_URL for a server that needs no key)",
    );
  }
  return { provider, apiKey, baseUrl, model: e.EMBEDDING_MODEL };
}

export interface JsonWebKeySet {
  keys: Record<string, unknown>[];
}

function parseJwks(text: string): JsonWebKeySet {
  try {
    const value = JSON.parse(text) as { keys?: unknown };
    if (Array.isArray(value?.keys) && value.keys.every((k) => k && typeof k === "object")) {
      return value as JsonWebKeySet;
    }
  } catch {
    // reported below
  }
  throw new ConfigError('invalid environment: SUPABASE_JWKS must be a JSON Web Key Set ({"keys": [...]})');
}

/** The keys of a JSON dictionary of name → key (as Supabase injects them), or of one key given alone. */
function apiKeysOf(name: string, text: string | undefined, prefix: string): string[] {
  if (!text) return [];
  if (text.startsWith(prefix)) return [text];
  try {
    const value = JSON.parse(text) as unknown;
    const keys = value && typeof value === "object" ? Object.values(value as Record<string, unknown>) : [];
    if (keys.length > 0 && keys.every((k) => typeof k === "string" && k.startsWith(prefix))) return keys as string[];
  } catch {
    // reported below
  }
  throw new ConfigError(
    `invalid environment: ${name} must be a JSON object of name → ${prefix}… key (or one such key)`,
  );
}

/** Every variable loadConfig reads (the README's configuration table documents each). */
export const ENV_VARIABLES: readonly string[] = Object.keys(EnvSchema.shape);

/** Model id recorded on rows embedded by the deterministic local embedder. */
export const LOCAL_EMBEDDING_MODEL = "local-hash-512-v1";
/** The model of EMBEDDING_PROVIDER=supabase (supabase-ai-embedder.ts). */
export const SUPABASE_EMBEDDING_MODEL = "gte-small";
