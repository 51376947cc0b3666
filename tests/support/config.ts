// A Config for handler tests: the test database (DATABASE_URL), an HS256 secret the tests sign
// tokens with (tests/support/auth.ts), the local embedder and the default retrieval settings.
// Shared by every handler test; extend with overrides rather than editing defaults.
import { type Config, LOCAL_EMBEDDING_MODEL } from "../../supabase/functions/_shared/env.ts";
import { TEST_PORT_DEFAULTS } from "./ports.ts";

/** The HS256 secret test tokens are signed with; only ever used against test databases. */
export const TEST_JWT_SECRET = "devai-memory-test-secret-at-least-32-bytes-long";

/** Supabase API keys of the test project (sent in the apikey header, not JWTs). */
export const TEST_SECRET_KEY = "sb_secret_devai-test-secret-key_0000";
export const TEST_PUBLISHABLE_KEY = "sb_publishable_devai-test-publishable-key_0000";

export function testDatabaseUrl(): string {
  const url = Deno.env.get("DATABASE_URL");
  if (!url) throw new Error("set DATABASE_URL to a migrated test database (scripts/db.sh reset)");
  return url;
}

export type ConfigOverrides = Partial<Omit<Config, "retrieval" | "embedding" | "llm" | "jwt">> & {
  retrieval?: Partial<Config["retrieval"]>;
  embedding?: Partial<Config["embedding"]>;
  llm?: Partial<Config["llm"]>;
  jwt?: Config["jwt"];
};

export function testConfig(overrides: ConfigOverrides = {}): Config {
  const { retrieval, embedding, llm, jwt, ...rest } = overrides;
  return {
    databaseUrl: Deno.env.get("DATABASE_URL") ??
      `postgresql://postgres@127.0.0.1:${TEST_PORT_DEFAULTS.DEVAI_TEST_PG_PORT}/postgres`,
    dbPoolMax: 5,
    dbStatementTimeoutMs: 15_000,
    dbPrepare: "auto",
    jwt: jwt ?? { secret: TEST_JWT_SECRET },
    apiKeys: { secret: [TEST_SECRET_KEY], publishable: [TEST_PUBLISHABLE_KEY] },
    embedding: { provider: "local", model: LOCAL_EMBEDDING_MODEL, ...embedding },
    llm: { model: "fake-llm", timeoutMs: 10_000, ...llm },
    namespaceRoot: "devai",
    retrieval: { threshold: undefined, topK: 15, budgetTokens: 2000, ...retrieval },
    dedupThreshold: undefined,
    extractDailyCap: 200,
    maxBodyBytes: 256 * 1024,
    maxCompactBodyBytes: 8 * 1024 * 1024,
    maxExtractBodyBytes: 8 * 1024 * 1024,
    maxCheckpointBytes: 4 * 1024 * 1024,
    ...rest,
  };
}
