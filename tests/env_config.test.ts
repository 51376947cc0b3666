// loadConfig: the environment contract of every function (supabase/functions/_shared/env.ts).
import assert from "node:assert/strict";
import { thresholdsFor } from "../supabase/functions/_shared/embeddings.ts";
import {
  ConfigError,
  loadConfig,
  LOCAL_EMBEDDING_MODEL,
  MAX_STATEMENT_TIMEOUT_MS,
} from "../supabase/functions/_shared/env.ts";
import { MAX_BUDGET_TOKENS, MAX_TOP_K } from "../supabase/functions/_shared/retrieval/schemas.ts";

const minimal = { DATABASE_URL: "postgresql://postgres@127.0.0.1:1/x", SUPABASE_JWT_SECRET: "s".repeat(32) };

Deno.test("config: unset thresholds follow the embedding model's calibration, set ones override it", () => {
  const plain = loadConfig(minimal);
  assert.equal(plain.retrieval.threshold, undefined);
  assert.equal(plain.dedupThreshold, undefined);
  assert.equal(plain.embedding.model, LOCAL_EMBEDDING_MODEL);
  // The local embedder's scale, not the seed's OpenAI thresholds (0.7 would hide every match).
  assert.equal(thresholdsFor(plain.embedding.model, plain).retrieve, 0.45);

  const tuned = loadConfig({ ...minimal, RETRIEVAL_THRESHOLD: "0.42", DEDUP_THRESHOLD: "0.9" });
  assert.equal(tuned.retrieval.threshold, 0.42);
  assert.equal(thresholdsFor(tuned.embedding.model, tuned).retrieve, 0.42);
  assert.equal(thresholdsFor(tuned.embedding.model, tuned).dedup, 0.9);
});

Deno.test("config: a key selects OpenAI embeddings with the seed's thresholds", () => {
  const c = loadConfig({ ...minimal, OPENAI_API_KEY: "sk-test" });
  assert.equal(c.embedding.provider, "openai");
  assert.equal(c.embedding.model, "text-embedding-3-small");
  assert.deepEqual(thresholdsFor(c.embedding.model, c), {
    retrieve: 0.7,
    dedup: 0.8,
    link: 0.75,
    consolidate: 0.75,
    verbatim: 0.95,
  });
});

Deno.test("config: missing or invalid settings fail fast, naming each problem", () => {
  assert.throws(
    () => loadConfig({ SUPABASE_JWT_SECRET: "x" }),
    (e) => e instanceof ConfigError && /DATABASE_URL/.test(e.message),
  );
  assert.throws(
    () => loadConfig({ DATABASE_URL: "postgresql://postgres@127.0.0.1:5432/postgres" }),
    (e) => e instanceof ConfigError && /SUPABASE_JWT_SECRET/.test(e.message),
  );
  assert.throws(
    () => loadConfig({ ...minimal, RETRIEVAL_THRESHOLD: "1.5", MEMORY_NAMESPACE_ROOT: "Bad Root" }),
    (e) => e instanceof ConfigError && /RETRIEVAL_THRESHOLD/.test(e.message) && /MEMORY_NAMESPACE_ROOT/.test(e.message),
  );
  assert.throws(() => loadConfig({ ...minimal, EMBEDDING_PROVIDER: "openai" }), /needs EMBEDDING_API_KEY/);
  // A number with a unit, or no number, says how to write it (zod alone said "received NaN").
  for (const [name, value] of [["MAX_BODY_BYTES", "256k"], ["RETRIEVAL_TOP_K", "abc"], ["DEDUP_THRESHOLD", "high"]]) {
    assert.throws(
      () => loadConfig({ ...minimal, [name!]: value }),
      (e) =>
        e instanceof ConfigError &&
        e.message.includes(`${name}: expected a number written in digits, without a unit`) && !/NaN/.test(e.message),
    );
  }
  assert.equal(loadConfig({ ...minimal, MAX_BODY_BYTES: "1000" }).maxBodyBytes, 1000);
  // A drain's budget: 120 s unless set, and at least 10 s (docs/operations.md#a-drains-deadline).
  assert.equal(loadConfig(minimal).workerDrainBudgetMs, 120_000);
  assert.equal(loadConfig({ ...minimal, WORKER_DRAIN_BUDGET_MS: "300000" }).workerDrainBudgetMs, 300_000);
  assert.throws(() => loadConfig({ ...minimal, WORKER_DRAIN_BUDGET_MS: "500" }), /WORKER_DRAIN_BUDGET_MS/);
  // Retrieval's fixed sizes are held to a request's bounds: past them a start is refused, naming the
  // bound (RETRIEVAL_TOP_K=200 started and ran with 50, unsaid) in the words a request's bounded
  // integers use (intWithin: it said "Too big: expected number to be <=50"); the bounds are taken.
  for (
    const [name, bound] of [
      ["RETRIEVAL_TOP_K", MAX_TOP_K],
      ["RETRIEVAL_BUDGET_TOKENS", MAX_BUDGET_TOKENS],
      ["WORKER_KICKED_DRAINS", 16],
    ] as const
  ) {
    for (const value of [String(bound + 1), "0", "2.5"]) {
      assert.throws(
        () => loadConfig({ ...minimal, [name]: value }),
        (e) => e instanceof ConfigError && e.message.includes(`${name}: an integer 1-${bound}`),
        `${name}=${value}`,
      );
    }
  }
  const atBounds = loadConfig({ ...minimal, RETRIEVAL_TOP_K: "50", RETRIEVAL_BUDGET_TOKENS: "32000" }).retrieval;
  assert.deepEqual([atBounds.topK, atBounds.budgetTokens], [MAX_TOP_K, MAX_BUDGET_TOKENS]);
  // A duration past what a timer holds is refused: DB_STATEMENT_TIMEOUT_MS=3000000000 started, then
  // every request was a 400 blaming the request (statement_timeout refused) or a 503 (the timer fired at once).
  for (const name of ["LLM_TIMEOUT_MS", "WORKER_DRAIN_BUDGET_MS", "RETRIEVAL_WRITE_BEHIND_MS"]) {
    assert.throws(() => loadConfig({ ...minimal, [name]: "3000000000" }), new RegExp(`${name}: at most 2147483647 ms`));
    assert.doesNotThrow(() => loadConfig({ ...minimal, [name]: "2147483647" }), name);
  }
  // The statement timeout, of which an export's copy waits four (it waited five), to a fifth of that:
  // 429496730 started, then every export was a 400 blaming the request (Postgres refused
  // idle_in_transaction_session_timeout). The refusal says the wait as it is (it said five).
  assert.equal(MAX_STATEMENT_TIMEOUT_MS, 429_496_729);
  for (const value of ["429496730", "3000000000"]) {
    assert.throws(
      () => loadConfig({ ...minimal, DB_STATEMENT_TIMEOUT_MS: value }),
      /DB_STATEMENT_TIMEOUT_MS: at most 429496729 ms \(4\.97 days\): an export's copy waits up to four times it for its client/,
    );
  }
  assert.equal(loadConfig({ ...minimal, DB_STATEMENT_TIMEOUT_MS: "429496729" }).dbStatementTimeoutMs, 429_496_729);
  // A malformed database URL is named, never shown: it may hold a password.
  for (
    const url of ["postgresql://reader:s3cr3t-pass@127.0.0.1:abc/postgres", "https://reader:s3cr3t-pass@db.example"]
  ) {
    assert.throws(
      () => loadConfig({ ...minimal, SUPABASE_DB_READ_URL: url }),
      (e) => e instanceof ConfigError && /SUPABASE_DB_READ_URL/.test(e.message) && !e.message.includes("s3cr3t"),
    );
  }
  for (const url of ["postgres://reader:pw@127.0.0.1:6543/postgres", "postgres://u:p@db1:5432,db2:5433/postgres"]) {
    assert.equal(loadConfig({ ...minimal, SUPABASE_DB_READ_URL: url }).databaseReadUrl, url);
  }
});
