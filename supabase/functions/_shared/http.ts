// One error shape everywhere: { "error": { "code", "message", "issues"? } }. Handlers throw
// HttpError for expected failures; database errors are mapped to what they mean for the caller
// (database-errors.ts: 503 with Retry-After when the database is away, 4xx for bad values);
// respondToError (every function's app.onError, app.ts) turns anything else into a logged 500 that
// leaks no detail but carries a request id to find it in the logs.
import type { z } from "zod";
import { logDatabaseRefusal, mapDatabaseError } from "./database-errors.ts";
import { checkJsonText } from "./json-text.ts";
import { EventLoopSlice } from "./event-loop-slice.ts";

export interface ErrorIssue {
  path: (string | number)[];
  message: string;
  code?: string;
}

export class HttpError extends Error {
  override name = "HttpError";
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly issues?: ErrorIssue[],
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }
}

export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...headers },
  });
}

export function errorResponse(err: HttpError, requestId?: string): Response {
  const body: { error: { code: string; message: string; issues?: ErrorIssue[]; request_id?: string } } = {
    error: { code: err.code, message: err.message },
  };
  if (err.issues?.length) body.error.issues = err.issues;
  if (requestId) body.error.request_id = requestId;
  return json(body, err.status, err.headers);
}

/** The one error responder: HttpError as it is, database errors mapped, anything else a logged 500. */
export function respondToError(err: unknown, requestId: string): Response {
  return errorResponse(asHttpError(err, requestId), requestId);
}

/** What an error means for the caller (the MCP tools answer it as a tool error with the same code). */
export function asHttpError(err: unknown, requestId: string): HttpError {
  if (err instanceof HttpError) return err;
  const mapped = mapDatabaseError(err);
  if (mapped) {
    if (mapped.status < 500) logDatabaseRefusal(err, requestId);
    return mapped;
  }
  console.error(
    JSON.stringify({ level: "error", request_id: requestId, error: String(err), stack: (err as Error)?.stack }),
  );
  return new HttpError(500, "internal_error", "unexpected error; quote the request id when reporting it");
}

/** Issues an error names at most; the rest are counted in one more (`more_issues`). */
export const MAX_ISSUES = 100;

/**
 * A request's problems, each naming its field in `path`. An unknown field too: zod puts it on the
 * object holding it (`path: []` for `?x=1` or a body's `topk`), so it is one issue per key, named.
 * At most MAX_ISSUES, then one saying how many more: a 4.4 MB extract body of 450,000 unknown
 * keys was answered 38.6 MB of issues, after 6 s of the event loop spent listing and writing them
 * (2026-11-29 red team); a 230 KB remember's metadata of 26,000 keys, 2.5 MB.
 */
export function zodIssues(error: z.ZodError): ErrorIssue[] {
  const out: ErrorIssue[] = [];
  let more = 0;
  for (const i of error.issues) {
    const path = i.path.map((p) => (typeof p === "symbol" ? String(p) : p));
    const keys = i.code === "unrecognized_keys" ? i.keys : [undefined];
    const room = Math.max(0, MAX_ISSUES - out.length);
    for (const key of keys.slice(0, room)) {
      out.push(
        key === undefined
          ? { path, message: i.message, code: i.code }
          : { path: [...path, key], message: `Unrecognized key: ${JSON.stringify(key)}`, code: i.code },
      );
    }
    more += Math.max(0, keys.length - room);
  }
  if (more > 0) out.push({ path: [], message: `and ${more} more issues not listed`, code: "more_issues" });
  return out;
}

export const INVALID_BODY = "invalid request body"; // a body an operation refuses after its schema let it through
export const invalidBody = (issues: ErrorIssue[]) => new HttpError(400, "invalid_request", INVALID_BODY, issues);
/**
 * Validates a value against a schema, throwing the 400 every handler uses. When all that is wrong
 * is ids that are no uuid, the code is `invalid_id`, as for an id in the path (memory/routing.ts):
 * `?job_id=x` was `invalid_request` where `memory/x` was `invalid_id`.
 */
export function validate<T extends z.ZodType>(schema: T, value: unknown, what = "request"): z.infer<T> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issues = zodIssues(result.error);
  const badIds = result.error.issues.every((i) => i.code === "invalid_format" && i.format === "uuid");
  if (badIds) {
    const named = issues.filter((i) => i.code !== "more_issues");
    const fields = [...new Set(named.map((i) => i.path.join(".") || "the id"))].join(", ") +
      (named.length < issues.length ? ` (and more)` : "");
    throw new HttpError(400, "invalid_id", `invalid ${what}: ${fields} must be a uuid`, issues);
  }
  throw new HttpError(400, "invalid_request", `invalid ${what}`, issues);
}

/**
 * Validates a URL's query string; a parameter given twice is a 400 (which one was meant is not
 * ours to guess).
 */
export function parseQueryString<T extends z.ZodType>(url: string, schema: T): z.infer<T> {
  const out: Record<string, string> = {};
  for (const [k, v] of new URL(url).searchParams) {
    if (Object.hasOwn(out, k)) {
      throw new HttpError(400, "invalid_request", "invalid query string", [{
        path: [k],
        message: "given more than once",
      }]);
    }
    out[k] = v;
  }
  return validate(schema, out, "query string");
}

/**
 * Reads a JSON body with a hard size limit (checked on the declared length and while streaming, so
 * a lying Content-Length cannot get past it), then validates it. 415 wrong type or a compressed
 * body, 413 too big, 400 malformed JSON or schema violations (with zod issues).
 */
export async function parseJsonBody<T extends z.ZodType>(
  req: Request,
  schema: T,
  maxBytes: number,
  opts: {
    emptyAs?: unknown;
    tooLarge?: string;
    /** Refuse a number a double cannot hold as sent (json-text.ts): for bodies stored as the caller's data. */
    exactNumbers?: boolean;
    /** MCP's endpoint URL is the client's to configure: a query string there is left alone. */
    ignoreQuery?: boolean;
    slice?: EventLoopSlice; // the request's, when its later work is sliced too (event-loop-slice.ts)
  } = {},
): Promise<z.infer<T>> {
  if (!opts.ignoreQuery) refuseQueryString(req);
  refuseContentEncoding(req);
  const type = req.headers.get("content-type") ?? "";
  const declared = Number(req.headers.get("content-length") ?? "NaN");
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(maxBytes, opts.tooLarge);
  if (!/^application\/json\b/i.test(type) && !(opts.emptyAs !== undefined && type === "")) {
    throw new HttpError(415, "unsupported_media_type", "send the body as application/json");
  }
  const text = await readLimited(req, maxBytes, opts.tooLarge);
  if (opts.emptyAs !== undefined && text.trim() === "") return validate(schema, opts.emptyAs, "request body");
  if (!/^application\/json\b/i.test(type)) {
    throw new HttpError(415, "unsupported_media_type", "send the body as application/json");
  }
  // Scan, parse and validation: the event loop given back between them, not held for their sum (docs/operations.md#json-items).
  const slice = opts.slice ?? new EventLoopSlice();
  const checked = checkJsonText(text, MAX_JSON_DEPTH, opts.exactNumbers, MAX_JSON_ITEMS);
  if (checked.tooDeep) {
    throw new HttpError(400, "malformed_json", `body nests arrays or objects deeper than ${MAX_JSON_DEPTH} levels`);
  }
  if (checked.tooMany) throw tooLarge(maxBytes, TOO_MANY_ITEMS);
  if (checked.inexact !== undefined) {
    throw new HttpError(
      400,
      "invalid_request",
      `body holds the number ${
        checked.inexact.slice(0, 40)
      }, which would be stored changed (JSON numbers are read as ` +
        "doubles: beyond 1e308 or past 2^53 for an integer they lose digits or become null): send it as a string",
    );
  }
  if (slice.due()) await slice.yield();
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new HttpError(400, "malformed_json", `body is not valid JSON: ${(err as Error).message}`);
  }
  if (slice.due()) await slice.yield();
  return validate(schema, value, "request body");
}

/**
 * A route that takes a body reads nothing from the query string, so a parameter there is refused,
 * naming it, rather than ignored: `POST memory/consolidate?dry_run=true` ran a real consolidation.
 */
export function refuseQueryString(req: Request): void {
  const names = [...new Set(new URL(req.url).searchParams.keys())];
  if (names.length === 0) return;
  throw new HttpError(
    400,
    "invalid_request",
    `${req.method} takes its parameters in the JSON body, not in the query string: move ${names.join(", ")} there`,
    names.map((name) => ({ path: [name], message: "not read from the query string: send it in the body" })),
  );
}

/**
 * Bodies are read as sent, never decompressed: a gzip (or any other coded) body was read as its
 * compressed bytes and refused as "not valid UTF-8", which said nothing of the cause. One rule for
 * every route, before anything is read: only `identity` (or no Content-Encoding) is accepted, a
 * 415 names it (and so does its Accept-Encoding header, as RFC 9110 asks).
 */
function refuseContentEncoding(req: Request): void {
  const coding = (req.headers.get("content-encoding") ?? "").trim().toLowerCase().slice(0, 40);
  if (coding === "" || coding === "identity") return;
  throw new HttpError(
    415,
    "unsupported_media_type",
    `content-encoding ${coding} is not accepted: send the body uncompressed (no content-encoding, or identity)`,
    undefined,
    { "accept-encoding": "identity" },
  );
}

/** Deepest nesting of arrays and objects a body may have: no request needs more than a handful (json-text.ts). */
export const MAX_JSON_DEPTH = 64;
/** Most items (values and keys) a body may hold, counted before it is parsed (json-text.ts): ten a message at 20,000. */
export const MAX_JSON_ITEMS = 200_000;
const TOO_MANY_ITEMS =
  `the body holds more than ${MAX_JSON_ITEMS} JSON items (values and keys, counted by its commas, ` +
  "colons and opening brackets): nothing was written; send less in each request (a transcript: fewer messages, the rest with `after`)";

/** Every 413 says what to do; a route with a better way (send less, in parts) says that instead. */
function tooLarge(maxBytes: number, hint?: string): HttpError {
  return new HttpError(
    413,
    "payload_too_large",
    hint ??
      `the body exceeds this route's ${maxBytes} bytes (MAX_BODY_BYTES): send a smaller body, or raise MAX_BODY_BYTES on the server`,
  );
}

/** The request with its body read (at most maxBytes, else 413), for parseJsonBody later: work that takes a turn
 * (heavy-turns.ts) must not hold it while a slow client is still sending. */
export async function withBodyRead(req: Request, maxBytes: number, hint?: string): Promise<Request> {
  const declared = Number(req.headers.get("content-length") ?? "NaN");
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(maxBytes, hint);
  const body = req.body ? await readLimitedBytes(req.body, maxBytes, hint) : null;
  return new Request(req.url, { method: req.method, headers: req.headers, body });
}

async function readLimited(req: Request, maxBytes: number, hint?: string): Promise<string> {
  if (!req.body) return "";
  const all = await readLimitedBytes(req.body, maxBytes, hint);
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(all);
  } catch {
    throw new HttpError(400, "malformed_json", "body is not valid UTF-8");
  }
}

async function readLimitedBytes(
  stream: ReadableStream<Uint8Array>,
  maxBytes: number,
  hint?: string,
): Promise<Uint8Array<ArrayBuffer>> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read().catch((err) => {
      // The client went away before sending all of it; or (the local server) sent nothing for too
      // long, the server's own 408 (scripts/serve/request-bodies.ts).
      if (err instanceof HttpError) throw err;
      throw new HttpError(400, "invalid_request", "the request body ended before it was complete; nothing was written");
    });
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => {});
      throw tooLarge(maxBytes, hint);
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let offset = 0;
  for (const c of chunks) {
    all.set(c, offset);
    offset += c.byteLength;
  }
  return all;
}

export function methodNotAllowed(allowed: string[]): HttpError {
  return new HttpError(405, "method_not_allowed", `use ${allowed.join(" or ")}`, undefined, {
    allow: allowed.join(", "),
  });
}
