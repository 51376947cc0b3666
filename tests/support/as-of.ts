// The as_of tests' instants and retrieval calls (tests/graph_as_of, tests/search_as_of_fields):
// instants are read from the database's clock between the writes, so nothing waits on wall-clock time.
import { createHandler as createRetrieveHandler } from "../../supabase/functions/memory-retrieve/handler.ts";
import { localEmbedder } from "../../supabase/functions/_shared/embeddings.ts";
import type { Sql } from "../../supabase/functions/_shared/db.ts";
import { userHeaders } from "./auth.ts";
import { testConfig } from "./config.ts";

/** The database's clock now, as an ISO instant with microseconds. */
export async function dbNow(sql: Sql): Promise<string> {
  const [r] = await sql<
    { at: string }[]
  >`select to_char(clock_timestamp() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at`;
  return r!.at;
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
