// What every route of the `memory` function shares: the Hono app type, the caller of a request,
// path ids, query strings and optional bodies.
import type { Context, Hono } from "hono";
import { z } from "zod";
import type { FunctionEnv } from "../_shared/app.ts";
import type { Caller, ConfigCaller } from "../_shared/auth.ts";
import type { TenantContext } from "../_shared/db.ts";
import { HttpError, parseJsonBody, parseQueryString, refuseQueryString, validate } from "../_shared/http.ts";
import { uuid } from "../_shared/schemas.ts";
import { NoQuery } from "../_shared/memories/schemas.ts";

/** A memory route's caller (its tenant), or for the configuration routes the admin, set by handler.ts. */
export type Env = FunctionEnv<{ caller: Caller; admin: ConfigCaller }>;
export type Ctx = Context<Env>;
export type MemoryApp = Hono<Env>;

export function who(c: Ctx): TenantContext {
  const caller = c.get("caller");
  return { tenantId: caller.tenantId, actor: caller.actor };
}

/**
 * A path parameter that must be a uuid (lower-cased); `what` names it in the 400. A mistyped route
 * (`GET memory/stat`) lands on `memory/{id}`, so the message quotes what was read as the id and
 * says so: "must be a uuid" alone sent the user looking for an id they never meant to send.
 */
export function parseUuidParam(c: Ctx, name: string, what: string): string {
  const raw = c.req.param(name) ?? "";
  const result = uuid.safeParse(raw);
  if (!result.success) {
    const quoted = JSON.stringify(raw.length > 64 ? `${raw.slice(0, 64)}…` : raw);
    throw new HttpError(
      400,
      "invalid_id",
      `${what} must be a uuid, not ${quoted} (in ${c.req.method} ${c.req.path}); a misspelt route of the ` +
        "memory function lands here too: check the path against the README's API table",
      [{ path: [name], message: "expected a uuid", code: "invalid_format" }],
    );
  }
  return result.data.toLowerCase();
}

export const parseId = (c: Ctx) => parseUuidParam(c, "id", "memory id");

/** A path parameter that is a name (a session, thread, agent, category): the 400's issues name it, as a body's do. */
export function parsePathParam<T extends z.ZodType>(
  c: { req: { param(name: string): string | undefined } },
  name: string,
  schema: T,
  what: string,
): z.infer<T> {
  const parsed = validate(z.object({ [name]: schema }), { [name]: c.req.param(name) }, what);
  return parsed[name] as z.infer<T>;
}

/** Query string → schema; a repeated parameter is ambiguous, so it is a 400 rather than a guess. */
export function parseQuery<T extends z.ZodType>(c: Ctx, schema: T): z.infer<T> {
  return parseQueryString(c.req.url, schema);
}

/** A GET route that takes no parameter refuses any (400), as the others refuse unknown ones. */
export function noQuery(c: { req: { url: string } }): void {
  parseQueryString(c.req.url, NoQuery);
}

/**
 * POST routes whose body is optional: no body, or an empty one (curl -X POST sends neither a
 * Content-Length nor a body; Deno still hands the handler an empty stream), means {}.
 */
export async function optionalBody<T extends z.ZodType>(
  req: Request,
  schema: T,
  maxBytes: number,
): Promise<z.infer<T>> {
  refuseQueryString(req);
  if (req.body === null || req.headers.get("content-length") === "0") return validate(schema, {}, "request body");
  return await parseJsonBody(req, schema, maxBytes, { emptyAs: {} });
}
