// The `memory` function: what a person or the agent calls to manage memories (issue 3, item 5).
// Routes (Supabase passes the path as /memory/...; /functions/v1/memory/... is accepted too):
//   POST /memory/remember            user-stated fact: priority highest, never decays; exact duplicate → 200, no write
//   GET  /memory                     list with filters, keyset pagination (created_at desc, id desc)
//   GET  /memory/weak                what will decay soon (seed 003 weak_facts)
//   GET  /memory/stats               counts by type/namespace/state/validity/pinned, relations, history
//   GET  /memory/export              ?format=json|markdown, soft-deleted memories included and flagged
//   GET  /memory/{id}                one memory
//   GET  /memory/{id}/history        its audit rows, newest first
//   GET  /memory/{id}/explain        supersede chain, relations, source, history summary, decay outlook
//   POST /memory/{id}/correct        new memory supersedes it (+ 'supersedes' relation); 409 if already replaced
//   POST /memory/{id}/forget         soft delete; purged after the grace period
//   POST /memory/{id}/restore        undo forget (or an invalidation that was not a supersede)
//   POST /memory/{id}/pin|confirm    protected from decay (strength 1.0); /unpin undoes it
// Every request is one or two tenant transactions (withTenant → RLS): another tenant's id is
// simply not found, a 404 like an unknown id, so ids cannot be probed. History is written by the
// database triggers, never here.
import { Hono } from "hono";
import type { Context } from "hono";
import type { z } from "zod";
import { authenticate, type Caller } from "../_shared/auth.ts";
import { createSql, type Sql, type TenantContext, toVectorLiteral, type Tx, withTenant } from "../_shared/db.ts";
import { createEmbedder, type Embedder, EmbeddingError } from "../_shared/embeddings.ts";
import { type Config, loadConfig } from "../_shared/env.ts";
import { handleErrors, HttpError, json, parseJsonBody, validate } from "../_shared/http.ts";
import { limitRequests } from "../_shared/rate-limit.ts";
import { uuid, visibleScopes } from "../_shared/schemas.ts";
import { decodeCursor, encodeCursor } from "./cursor.ts";
import { explainMemory } from "./explain.ts";
import { memoriesToMarkdownFiles } from "./export-markdown.ts";
import { isoDates, memoryColumns } from "./memory-row.ts";
import {
  CorrectRequest,
  ExportQuery,
  ForgetRequest,
  HistoryQuery,
  LifecycleRequest,
  ListQuery,
  type Memory,
  RememberRequest,
  StatsQuery,
  WeakQuery,
} from "./schemas.ts";
import { decaySettings, purgeGraceDays } from "./settings.ts";
import { memoryStats } from "./stats.ts";
import { daysSince, daysUntilPrune, predictStrength } from "./weak.ts";

export interface MemoryDeps {
  sql: Sql;
  config: Config;
  embedder: Embedder;
  /** "Now" for decay predictions and purge dates; tests freeze it. */
  clock?: () => Date;
}

/** Production dependencies from the environment (index.ts; the local functions server may reuse it). */
export function defaultDeps(): MemoryDeps {
  const config = loadConfig();
  return {
    config,
    sql: createSql(config.databaseUrl, { max: config.dbPoolMax, applicationName: "devai-memory:memory", statementTimeoutMs: config.dbStatementTimeoutMs }),
    embedder: createEmbedder(config),
  };
}

type Env = { Bindings: { caller: Caller } };
type Ctx = Context<Env>;
type Row = Record<string, unknown>;

const toMemory = (row: Row | undefined): Memory => isoDates(row!) as unknown as Memory;

// Same normalisation as memory_private.content_hash (what the content_hash column is derived with). That
// function is not callable by `authenticated` (its schema is private), so the expression is
// repeated here; the regex travels as a parameter so no escaping layer can alter it.
function contentHashSql(q: Tx, content: string) {
  return q`encode(sha256(convert_to(lower(btrim(regexp_replace(${content}::text, ${"\\s+"}, ' ', 'g'))), 'UTF8')), 'hex')`;
}

function who(c: Ctx): TenantContext {
  return { tenantId: c.env.caller.tenantId, actor: c.env.caller.actor };
}

function parseId(c: Ctx): string {
  const raw = c.req.param("id") ?? "";
  const result = uuid.safeParse(raw);
  if (!result.success) {
    throw new HttpError(400, "invalid_id", "memory id must be a uuid", [{ path: ["id"], message: "expected a uuid" }]);
  }
  return result.data.toLowerCase();
}

/** Query string → schema; a repeated parameter is ambiguous, so it is a 400 rather than a guess. */
function parseQuery<T extends z.ZodType>(c: Ctx, schema: T): z.infer<T> {
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
async function optionalBody<T extends z.ZodType>(req: Request, schema: T, maxBytes: number): Promise<z.infer<T>> {
  if (req.body === null || req.headers.get("content-length") === "0") return validate(schema, {}, "request body");
  return await parseJsonBody(req, schema, maxBytes, { emptyAs: {} });
}

function notFound(id: string): HttpError {
  return new HttpError(404, "not_found", `memory ${id} not found`);
}

async function lockMemory(tx: Tx, id: string): Promise<Memory> {
  const [row] = await tx`select ${memoryColumns(tx, "m")} from public.devai_memories m where m.id = ${id} for update`;
  if (!row) throw notFound(id);
  return toMemory(row);
}

async function findDuplicate(tx: Tx, content: string, scopes: string[]): Promise<Memory | undefined> {
  const [row] = await tx`
    select ${memoryColumns(tx, "m")} from public.devai_memories m
     where m.content_hash = ${contentHashSql(tx, content)} and m.is_valid and m.state = 'active'
       and (m.namespace || '/') ^@ any (${scopes}::text[])
     order by (m.source = 'user_stated') desc, m.created_at, m.id
     limit 1`;
  return row ? toMemory(row) : undefined;
}

function assertCorrectable(old: Memory): void {
  if (old.superseded_by) {
    throw new HttpError(409, "already_superseded", `memory ${old.id} was already replaced by ${old.superseded_by}; correct that one`);
  }
  if (!old.is_valid) throw new HttpError(409, "memory_invalid", `memory ${old.id} is no longer valid; restore it first`);
  if (old.state !== "active") throw new HttpError(409, "memory_forgotten", `memory ${old.id} is forgotten; restore it first`);
}

export function createHandler(deps: MemoryDeps): (req: Request) => Promise<Response> {
  const { sql, config, embedder } = deps;
  const clock = deps.clock ?? (() => new Date());
  const root = config.namespaceRoot;

  async function embedOne(text: string): Promise<number[]> {
    try {
      const [vector] = await embedder.embed([text]);
      if (!vector) throw new EmbeddingError("embedding provider returned no vector");
      return vector;
    } catch (err) {
      if (err instanceof EmbeddingError) throw new HttpError(503, "embedding_unavailable", err.message);
      throw err;
    }
  }

  const app = new Hono<Env>({ strict: false });
  // Errors go to the outer handleErrors, the one place that shapes them (and logs 500s).
  app.onError((err) => {
    throw err;
  });
  app.notFound((c) => {
    throw new HttpError(404, "route_not_found", `no route for ${c.req.method} ${new URL(c.req.url).pathname}`);
  });

  // -- remember ------------------------------------------------------------------------------
  app.post("/memory/remember", async (c) => {
    const body = await parseJsonBody(c.req.raw, RememberRequest, config.maxBodyBytes);
    const namespace = body.namespace ??
      (body.project ? `${root}/project/${body.project}/notes` : `${root}/user/preferences`);
    if (!namespace.startsWith(`${root}/`)) {
      throw new HttpError(400, "invalid_request", "invalid request body", [
        { path: ["namespace"], message: `namespace must start with '${root}/' (the configured root)` },
      ]);
    }
    const tenant = who(c);
    const scopes = visibleScopes(namespace, root);
    const userStated = (m: Memory) => m.source === "user_stated" && m.priority === "highest";
    // Fast path: an exact duplicate the user already stated costs no embedding call and writes nothing.
    const existing = await withTenant(sql, tenant, (tx) => findDuplicate(tx, body.content, scopes));
    if (existing && userStated(existing)) return json({ created: false, memory: existing });

    const vector = await embedOne(body.content);
    const result = await withTenant(sql, tenant, async (tx) => {
      // Serialises concurrent remembers of the same text in this tenant, so the re-check below
      // cannot race with another insert of it.
      await tx`select pg_advisory_xact_lock(hashtextextended(${tenant.tenantId} || ':' || ${contentHashSql(tx, body.content)}, 0))`;
      const again = await findDuplicate(tx, body.content, scopes);
      if (again && userStated(again)) return { created: false, memory: again };
      if (again) {
        // The agent learned it before; now the user states it: it becomes user-stated (never decays,
        // shielded from the LLM). Audited as UPDATE by the trigger.
        const [row] = await tx`
          update public.devai_memories
             set priority = 'highest', source = 'user_stated', strength = 1, base_strength = 1, last_accessed_at = now()
           where id = ${again.id} returning ${memoryColumns(tx)}`;
        return { created: false, memory: toMemory(row) };
      }
      const [row] = await tx`
        insert into public.devai_memories
          (owner_id, content, embedding, embedding_model, memory_type, namespace, priority, source,
           strength, base_strength, importance, metadata, session_id)
        values
          (${tenant.tenantId}, ${body.content}, ${toVectorLiteral(vector)}::extensions.vector, ${embedder.model},
           ${body.memory_type}, ${namespace}, 'highest', 'user_stated', 1, 1, ${body.importance ?? 3},
           ${tx.json((body.metadata ?? {}) as never)}, ${body.session_id ?? null})
        returning ${memoryColumns(tx)}`;
      return { created: true, memory: toMemory(row) };
    }, { threadId: body.thread_id });
    return json(result, result.created ? 201 : 200);
  });

  // -- list ----------------------------------------------------------------------------------
  app.get("/memory", async (c) => {
    const q = parseQuery(c, ListQuery);
    const after = q.cursor ? decodeCursor(q.cursor) : undefined;
    // The cursor's timestamp is bound as text: bound as a timestamp, postgres.js would pass it
    // through a JS Date and drop the microseconds that order rows of the same millisecond.
    const rows = await withTenant(sql, who(c), (tx) =>
      tx`
        select ${memoryColumns(tx, "m")},
               to_char(m.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') as cursor_ts
          from public.devai_memories m
         where true
           ${q.namespace_prefix ? tx`and (m.namespace || '/') ^@ ${q.namespace_prefix + "/"}` : tx``}
           ${q.memory_type ? tx`and m.memory_type = ${q.memory_type}` : tx``}
           ${q.state !== "all" ? tx`and m.state = ${q.state}` : tx``}
           ${q.is_valid !== undefined ? tx`and m.is_valid = ${q.is_valid}` : tx``}
           ${q.pinned !== undefined ? tx`and m.pinned = ${q.pinned}` : tx``}
           ${q.importance_min !== undefined ? tx`and m.importance >= ${q.importance_min}` : tx``}
           ${q.priority ? tx`and m.priority = ${q.priority}` : tx``}
           ${q.source ? tx`and m.source = ${q.source}` : tx``}
           ${q.category ? tx`and m.metadata ->> 'category' = ${q.category}` : tx``}
           ${after ? tx`and (m.created_at, m.id) < (${after.createdAt}::text::timestamp at time zone 'UTC', ${after.id}::uuid)` : tx``}
         order by m.created_at desc, m.id desc
         limit ${q.limit + 1}`
    );
    const page = rows.slice(0, q.limit);
    const last = page.at(-1);
    const next_cursor = rows.length > q.limit && last
      ? encodeCursor({ createdAt: last.cursor_ts as string, id: last.id as string })
      : null;
    return json({
      memories: page.map(({ cursor_ts: _, ...m }) => toMemory(m)),
      next_cursor,
    });
  });

  // -- weak ----------------------------------------------------------------------------------
  app.get("/memory/weak", async (c) => {
    const q = parseQuery(c, WeakQuery);
    const now = clock();
    const { rows, settings } = await withTenant(sql, who(c), async (tx) => {
      const settings = await decaySettings(tx);
      const rows = await tx`
        select ${memoryColumns(tx, "m")}
          from public.devai_memories m
         where m.is_valid and m.state = 'active' and not m.pinned and m.priority <> 'highest'
         order by public.memory_decayed_strength(m.base_strength, m.last_accessed_at, ${now}::timestamptz, ${settings.decayBase}::float8), m.id
         limit ${q.limit}`;
      return { rows, settings };
    });
    return json({
      decay_per_day: settings.decayBase,
      prune_threshold: settings.pruneThreshold,
      as_of: now.toISOString(),
      memories: rows.map((r) => {
        const memory = toMemory(r);
        const last = new Date(memory.last_accessed_at);
        return {
          memory,
          predicted_strength: predictStrength(memory.base_strength, last, now, settings),
          days_since_access: daysSince(last, now),
          days_until_prune: daysUntilPrune(memory.base_strength, last, now, settings),
        };
      }),
    });
  });

  // -- stats ---------------------------------------------------------------------------------
  app.get("/memory/stats", async (c) => {
    const q = parseQuery(c, StatsQuery);
    const stats = await withTenant(sql, who(c), (tx) => memoryStats(tx, q.top_namespaces));
    return json(stats);
  });

  // -- export --------------------------------------------------------------------------------
  app.get("/memory/export", async (c) => {
    const q = parseQuery(c, ExportQuery);
    const tenant = who(c);
    const data = await withTenant(sql, tenant, async (tx) => {
      const memories = (await tx`
        select ${memoryColumns(tx, "m")} from public.devai_memories m order by m.created_at, m.id`).map(toMemory);
      if (q.format === "markdown") return { memories, relations: [], history: [] };
      const relations = await tx`
        select id, from_id, to_id, relation_type, strength, created_at
          from public.memory_relations order by created_at, id`;
      const history = await tx`
        select id, memory_id, event, old_ref, new_ref, actor, old_content, new_content, meta, ts
          from public.memory_history order by ts, id`;
      return { memories, relations: relations.map((r) => isoDates(r)), history: history.map((h) => isoDates(h)) };
    });
    const base = { tenant_id: tenant.tenantId, exported_at: clock().toISOString() };
    if (q.format === "markdown") {
      return json({ ...base, format: "markdown", files: memoriesToMarkdownFiles(data.memories) });
    }
    return json({
      ...base,
      format: "json",
      counts: {
        memories: data.memories.length,
        soft_deleted: data.memories.filter((m) => m.state === "soft_deleted").length,
        relations: data.relations.length,
        history: data.history.length,
      },
      memories: data.memories.map((m) => ({ ...m, soft_deleted: m.state === "soft_deleted" })),
      relations: data.relations,
      history: data.history,
    });
  });

  // -- one memory ----------------------------------------------------------------------------
  app.get("/memory/:id", async (c) => {
    const id = parseId(c);
    const [row] = await withTenant(sql, who(c), (tx) =>
      tx`select ${memoryColumns(tx, "m")} from public.devai_memories m where m.id = ${id}`
    );
    if (!row) throw notFound(id);
    return json({ memory: toMemory(row) });
  });

  app.get("/memory/:id/history", async (c) => {
    const id = parseId(c);
    const q = parseQuery(c, HistoryQuery);
    const result = await withTenant(sql, who(c), async (tx) => {
      const [exists] = await tx`select 1 from public.devai_memories where id = ${id}`;
      // Rows written in one transaction share its timestamp; id only makes the order stable.
      const history = await tx`
        select id, memory_id, event, old_ref, new_ref, actor, old_content, new_content, meta, ts
          from public.memory_history where memory_id = ${id}
         order by ts desc, id desc limit ${q.limit}`;
      return { exists: Boolean(exists), history };
    });
    // History outlives a purged memory, so its rows alone are enough to answer.
    if (!result.exists && result.history.length === 0) throw notFound(id);
    return json({ memory_id: id, purged: !result.exists, history: result.history.map((h) => isoDates(h)) });
  });

  app.get("/memory/:id/explain", async (c) => {
    const id = parseId(c);
    const explanation = await withTenant(sql, who(c), (tx) => explainMemory(tx, id, clock()));
    if (!explanation) throw notFound(id);
    return json(explanation);
  });

  // -- correct -------------------------------------------------------------------------------
  app.post("/memory/:id/correct", async (c) => {
    const id = parseId(c);
    const body = await parseJsonBody(c.req.raw, CorrectRequest, config.maxBodyBytes);
    const tenant = who(c);
    // Check before paying for an embedding; checked again under the row lock below.
    await withTenant(sql, tenant, async (tx) => {
      const [row] = await tx`
        select ${memoryColumns(tx, "m")}, m.content_hash = ${contentHashSql(tx, body.content)} as same_content
          from public.devai_memories m where m.id = ${id}`;
      if (!row) throw notFound(id);
      assertCorrectable(toMemory(row));
      if (row.same_content) {
        throw new HttpError(422, "unchanged_content", "the correction says the same as the memory it corrects");
      }
    });
    const vector = await embedOne(body.content);
    const result = await withTenant(sql, tenant, async (tx) => {
      const old = await lockMemory(tx, id);
      assertCorrectable(old);
      const metadata = body.reason ? { ...old.metadata, correction_reason: body.reason } : old.metadata;
      const [created] = await tx`
        insert into public.devai_memories
          (owner_id, content, embedding, embedding_model, memory_type, namespace, priority, source,
           strength, base_strength, importance, pinned, metadata, session_id)
        values
          (${tenant.tenantId}, ${body.content}, ${toVectorLiteral(vector)}::extensions.vector, ${embedder.model},
           ${old.memory_type}, ${old.namespace}, 'highest', 'correction', 1, 1, ${old.importance}, ${old.pinned},
           ${tx.json(metadata as never)}, ${body.session_id ?? null})
        returning ${memoryColumns(tx)}`;
      const memory = toMemory(created);
      // The trigger records MERGE for the old memory (superseded_by set) with new_ref = the new id.
      const [superseded] = await tx`
        update public.devai_memories set superseded_by = ${memory.id}, is_valid = false
         where id = ${id} returning ${memoryColumns(tx)}`;
      await tx`
        insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength)
        values (${tenant.tenantId}, ${memory.id}, ${id}, 'supersedes', 1)`;
      return { memory, superseded: toMemory(superseded) };
    }, { threadId: body.thread_id });
    return json(result, 201);
  });

  // -- forget / restore ----------------------------------------------------------------------
  app.post("/memory/:id/forget", async (c) => {
    const id = parseId(c);
    const body = await optionalBody(c.req.raw, ForgetRequest, config.maxBodyBytes);
    const tenant = who(c);
    const now = clock();
    const result = await withTenant(sql, tenant, async (tx) => {
      const m = await lockMemory(tx, id);
      if (m.state === "soft_deleted") return { changed: false, memory: m };
      const days = await purgeGraceDays(tx);
      const [row] = await tx`
        update public.devai_memories
           set state = 'soft_deleted',
               purge_at = ${now}::timestamptz + make_interval(secs => ${days * 86400}),
               metadata = ${body.reason ? tx`metadata || ${tx.json({ forget_reason: body.reason })}` : tx`metadata`}
         where id = ${id} returning ${memoryColumns(tx)}`;
      return { changed: true, memory: toMemory(row) };
    }, { threadId: body.thread_id });
    return json(result);
  });

  app.post("/memory/:id/restore", async (c) => {
    const id = parseId(c);
    const body = await optionalBody(c.req.raw, LifecycleRequest, config.maxBodyBytes);
    const now = clock();
    const result = await withTenant(sql, who(c), async (tx) => {
      const m = await lockMemory(tx, id);
      if (m.state === "active") {
        if (m.is_valid) return { changed: false, memory: m };
        // Re-validating a replaced memory would leave two versions of one fact: correct instead.
        if (m.superseded_by) {
          throw new HttpError(409, "already_superseded", `memory ${id} was replaced by ${m.superseded_by}; it cannot be restored`);
        }
      }
      // One restore semantics for the API and SQL: public.restore_memory (restore_strength setting,
      // superseded memories stay invalid).
      const [row] = await tx`select ${memoryColumns(tx)} from public.restore_memory(${id}::uuid, ${now}::timestamptz)`;
      return { changed: true, memory: toMemory(row) };
    }, { threadId: body.thread_id });
    return json(result);
  });

  // -- pin / confirm / unpin -----------------------------------------------------------------
  const pin = async (c: Ctx) => {
    const id = parseId(c);
    const body = await optionalBody(c.req.raw, LifecycleRequest, config.maxBodyBytes);
    const now = clock();
    const result = await withTenant(sql, who(c), async (tx) => {
      const m = await lockMemory(tx, id);
      if (m.state !== "active" || !m.is_valid) {
        throw new HttpError(409, "memory_not_active", `memory ${id} is forgotten or no longer valid; restore it before pinning`);
      }
      if (m.pinned && m.strength === 1 && m.base_strength === 1) return { changed: false, memory: m };
      // Pinned memories never decay (seed 003 confirm_fact: confidence 1.0, decay_rate 0).
      const [row] = await tx`
        update public.devai_memories
           set pinned = true, strength = 1, base_strength = 1, last_accessed_at = ${now}::timestamptz
         where id = ${id} returning ${memoryColumns(tx)}`;
      return { changed: true, memory: toMemory(row) };
    }, { threadId: body.thread_id });
    return json(result);
  };
  app.post("/memory/:id/pin", pin);
  app.post("/memory/:id/confirm", pin);

  app.post("/memory/:id/unpin", async (c) => {
    const id = parseId(c);
    const body = await optionalBody(c.req.raw, LifecycleRequest, config.maxBodyBytes);
    const now = clock();
    const result = await withTenant(sql, who(c), async (tx) => {
      const m = await lockMemory(tx, id);
      if (!m.pinned) return { changed: false, memory: m };
      // Decay restarts from now: counting the pinned months would prune it the next night.
      const [row] = await tx`
        update public.devai_memories set pinned = false, last_accessed_at = ${now}::timestamptz
         where id = ${id} returning ${memoryColumns(tx)}`;
      return { changed: true, memory: toMemory(row) };
    }, { threadId: body.thread_id });
    return json(result);
  });

  // Rate limits: reads and writes are charged to the tenant's own buckets (rate-limit.ts).
  return handleErrors(limitRequests((req) => (req.method === "GET" ? "read" : "write"), async (req) => {
    const caller = await authenticate(req, config);
    return await app.fetch(normalizePath(req), { caller });
  }));
}

/** The local server and some proxies keep the gateway prefix; route on /memory/... either way. */
function normalizePath(req: Request): Request {
  const url = new URL(req.url);
  if (!url.pathname.startsWith("/functions/v1/")) return req;
  url.pathname = url.pathname.slice("/functions/v1".length);
  return new Request(url, req);
}
