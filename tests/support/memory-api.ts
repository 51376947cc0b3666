// Calls the `memory` function's handler directly (no network), the way Supabase passes the path:
// /memory/... Shared by the tests/memory_*.test.ts files.
import { createHandler } from "../../supabase/functions/memory/handler.ts";
import { type Embedder, localEmbedder } from "../../supabase/functions/_shared/embeddings.ts";
import type { Sql } from "../../supabase/functions/_shared/db.ts";
import { type ConfigOverrides, testConfig } from "./config.ts";
import { serviceHeaders, userHeaders } from "./auth.ts";

export interface MemoryApiOptions {
  config?: ConfigOverrides;
  clock?: () => Date;
  /** Default: the local embedder (episodes are embedded in the request). */
  embedder?: Embedder;
  /** A read replica's pool (createReadSql): the reads that may lag go there. */
  readSql?: Sql;
}

export interface CallOptions {
  /** A tenant id (user token for it), or explicit headers. */
  as?: string;
  headers?: Record<string, string>;
  body?: unknown;
  /** Raw body, sent as-is (malformed JSON, oversize payloads, compressed bytes). */
  rawBody?: string | Uint8Array<ArrayBuffer>;
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  // deno-lint-ignore no-explicit-any
  body: any;
}

export type MemoryApi = (method: string, path: string, opts?: CallOptions) => Promise<ApiResponse>;

export function memoryApi(sql: Sql, opts: MemoryApiOptions = {}): MemoryApi {
  const handler = createHandler({
    sql,
    readSql: opts.readSql,
    config: testConfig(opts.config),
    embedder: opts.embedder ?? localEmbedder(),
    clock: opts.clock,
  });
  return async (method, path, call = {}) => {
    const headers = call.headers ?? (call.as ? await userHeaders(call.as) : {});
    const init: RequestInit = { method, headers };
    if (call.rawBody !== undefined) init.body = call.rawBody;
    else if (call.body !== undefined) init.body = JSON.stringify(call.body);
    const res = await handler(new Request(`http://local${path}`, init));
    const text = await res.text();
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: keep the text
    }
    return { status: res.status, headers: res.headers, body };
  };
}

export { serviceHeaders, userHeaders };
