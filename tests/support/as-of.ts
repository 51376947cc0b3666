// The as_of tests' instants and retrieval calls (tests/graph_as_of, tests/search_as_of_fields):
// instants are read from the database's clock between the writes, so nothing waits on wall-clock time.
import { createHandler as createRetrieveHandler } from "../../supabase/functions/memory-retrieve/handler.ts";
import { localEmbedder } from "../../supabase/functions/_shared/embeddings.ts";
import type { Sql } from "../../supabase/functions/_shared/db.ts";
import { userHeaders } from "./auth.ts";
import { testConfig } from "./config.ts";

/**
 * The database's clock now, as an ISO instant with microseconds, returned once the clock has moved
 * past it: a write after this call is stamped later than the instant. PGlite's clock counts
 * milliseconds, so a write right after a read could share its instant and count as "then" (it did,
 * once in CI); the clock's tick is waited on by reading it again, never by sleeping. The instant is
 * read after one tick too: a history row written just before the call may be stamped a microsecond
 * past the clock (memory_private.history_ts_in_write_order keeps a memory's changes of one
 * millisecond in write order), and is still before the instant.
 */
export async function dbNow(sql: Sql): Promise<string> {
  await clockPast(sql, await clockNow(sql));
  const at = await clockNow(sql);
  await clockPast(sql, at);
  return at;
}

async function clockNow(sql: Sql): Promise<string> {
  const [r] = await sql<
    { at: string }[]
  >`select to_char(clock_timestamp() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at`;
  return r!.at;
}

async function clockPast(sql: Sql, at: string): Promise<void> {
  for (let reads = 0; reads < 10_000; reads++) {
    const [tick] = await sql<{ past: boolean }[]>`select clock_timestamp() > ${at}::timestamptz as past`;
    if (tick!.past) return;
  }
  throw new Error(`the database's clock did not move past ${at}`);
}

/** POSTs to the memory-retrieve handler (no network) as tenant t: `/memory-retrieve` or `/memory-retrieve/query`. */
export function retrieveApi(sql: Sql) {
  const retrieve = createRetrieveHandler({ sql, config: testConfig(), embedder: localEmbedder() });
  return async (path: string, t: string, body: unknown) => {
    const res = await retrieve(
      new Request(`http://local${path}`, { method: "POST", headers: await userHeaders(t), body: JSON.stringify(body) }),
    );
    // deno-lint-ignore no-explicit-any
    return { status: res.status, body: await res.json() as any };
  };
}
