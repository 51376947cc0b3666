// What every route of the `memory` function shares: the Hono app type, the caller of a request,
// path ids, query strings and optional bodies, and the row lock most writes start with.
import type { Context, Hono } from "hono";
import type { z } from "zod";
import type { Caller } from "../_shared/auth.ts";
import type { Sql, TenantContext, Tx } from "../_shared/db.ts";
import type { Embedder } from "../_shared/embeddings.ts";
import type { Config } from "../_shared/env.ts";
import { HttpError, parseJsonBody, validate } from "../_shared/http.ts";
import type { Llm } from "../_shared/llm.ts";
import { uuid } from "../_shared/schemas.ts";
import { isoDates, memoryColumns } from "./memory-row.ts";
import type { Memory } from "./schemas.ts";

export interface MemoryDeps {
  sql: Sql;
  config: Config;
  embedder: Embedder;
  /** Consolidation's model, for the in-process drain kickWorker starts (none: rules only). */
  llm?: Llm;
  /** "Now" for decay predictions, purge dates and episode times; tests freeze it. */
  clock?: () => Date;
  /** Starts draining the queue after a route queued work (episodes' embeddings, consolidation); none: the worker's own schedule. */
  kickWorker?: () => Promise<unknown>;
}

/** What the route modules get: the dependencies, with the clock always set. */
export type RouteDeps = MemoryDeps & { clock: () => Date };

export type Env = { Bindings: { caller: Caller } };
export type Ctx = Context<Env>;
export type MemoryApp = Hono<Env>;

export const toMemory = (row: Record<string, unknown> | undefined): Memory => isoDates(row!) as unknown as Memory;

export function who(c: Ctx): TenantContext {
  return { tenantId: c.env.caller.tenantId, actor: c.env.caller.actor };
}

/** A path parameter that must be a uuid (lower-cased); `what` names it in the 400. */
export function parseUuidParam(c: Ctx, name: string, what: string): string {
  const raw = c.req.param(name) ?? "";
  const result = uuid.safeParse(raw);
  if (!result.success) {
    throw new HttpError(400, "invalid_id", `${what} must be a uuid`, [{ path: [name], message: "expected a uuid" }]);
  }
  return result.data.toLowerCase();
}

export const parseId = (c: Ctx) => parseUuidParam(c, "id", "memory id");

/** Query string → schema; a repeated parameter is ambiguous, so it is a 400 rather than a guess. */
export function parseQuery<T extends z.ZodType>(c: Ctx, schema: T): z.infer<T> {
  const params = new URL(c.req.url).searchParams;
  const out: Record<string, string> = {};
  for (const [k, v] of params) {
    if (k in out) throw new HttpError(400, "invalid_request", "invalid query string", [{ path: [k], message: "given more than once" }]);
    out[k] = v;
  }
  return validate(schema, out, "query string");
}

/**
 * POST routes whose body is optional: no body, or an empty one (curl -X POST sends neither a
 * Content-Length nor a body; Deno still hands the handler an empty stream), means {}.
 */
export async function optionalBody<T extends z.ZodType>(req: Request, schema: T, maxBytes: number): Promise<z.infer<T>> {
  if (req.body === null || req.headers.get("content-length") === "0") return validate(schema, {}, "request body");
  return await parseJsonBody(req, schema, maxBytes, { emptyAs: {} });
}

export function notFound(id: string): HttpError {
  return new HttpError(404, "not_found", `memory ${id} not found`);
}

export async function lockMemory(tx: Tx, id: string): Promise<Memory> {
  const [row] = await tx`select ${memoryColumns(tx, "m")} from public.devai_memories m where m.id = ${id} for update`;
  if (!row) throw notFound(id);
  return toMemory(row);
}

// Same normalisation as memory_private.content_hash (what the content_hash column is derived with). That
// function is not callable by `authenticated` (its schema is private), so the expression is
// repeated here; the regex travels as a parameter so no escaping layer can alter it.
export function contentHashSql(q: Tx, content: string) {
  return q`encode(sha256(convert_to(lower(btrim(regexp_replace(${content}::text, ${"\\s+"}, ' ', 'g'))), 'UTF8')), 'hex')`;
}
