// Read routes: list with filters, what decays soon, stats, export, one memory, its history and its
// explanation. Each is one tenant transaction (RLS): another tenant's id is simply not found.
import { withTenant } from "../_shared/db.ts";
import { corsHeaders } from "../_shared/cors.ts";
import { json } from "../_shared/http.ts";
import { projectScope } from "../_shared/schemas.ts";
import { HttpError } from "../_shared/http.ts";
import { asOfColumns, memoryAsOf, recordedBy } from "./as-of.ts";
import { decodeCursor, encodeCursor } from "./cursor.ts";
import { explainMemory } from "./explain.ts";
import { memoriesToMarkdownFiles } from "./export-markdown.ts";
import { tarArchive } from "./tar.ts";
import { isoDates, memoryColumns } from "./memory-row.ts";
import { type MemoryApp, notFound, parseId, parseQuery, type RouteDeps, toMemory, who } from "./routing.ts";
import { ExportQuery, HistoryQuery, ListQuery, MemoryQuery, StatsQuery, WeakQuery } from "./schemas.ts";
import { decaySettings } from "./settings.ts";
import { memoryStats } from "./stats.ts";
import { daysSince, daysUntilPrune, predictStrength } from "./weak.ts";

/** The routes on fixed paths (/memory/weak, …): registered before /memory/:id so they win. */
export function registerCollectionRoutes(app: MemoryApp, deps: RouteDeps): void {
  const { sql, config, clock } = deps;

  // -- list ----------------------------------------------------------------------------------
  app.get("/memory", async (c) => {
    const q = parseQuery(c, ListQuery);
    const after = q.cursor ? decodeCursor(q.cursor) : undefined;
    // The cursor's timestamp is bound as text: bound as a timestamp, postgres.js would pass it
    // through a JS Date and drop the microseconds that order rows of the same millisecond.
    // With as_of: the memories held at that instant, as they were then (as-of.ts).
    const rows = await withTenant(sql, who(c), (tx) =>
      tx`
        select ${memoryColumns(tx, "m")}, ${asOfColumns(tx, q.as_of)},
               to_char(m.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') as cursor_ts
          from public.devai_memories m
          ${recordedBy(tx, q.as_of)}
         where true
           ${q.namespace_prefix ? tx`and (m.namespace || '/') ^@ ${q.namespace_prefix + "/"}` : tx``}
           ${q.project ? tx`and (m.namespace || '/') ^@ ${projectScope(config.namespaceRoot, q.project) + "/"}` : tx``}
           ${q.memory_type ? tx`and m.memory_type = ${q.memory_type}` : tx``}
           ${q.state !== "all" && !q.as_of ? tx`and m.state = ${q.state}` : tx``}
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
      memories: page.map(({ cursor_ts: _, ...m }) => toMemory(memoryAsOf(m))),
      next_cursor,
      ...(q.as_of ? { as_of: q.as_of } : {}),
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
           and m.source is distinct from 'conversation'
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
    const stats = await withTenant(sql, who(c), (tx) => memoryStats(tx, q.top_namespaces, deps.embedder.model));
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
        select id, from_id, to_id, relation_type, strength, confidence, evidence, valid_from, valid_until, created_at
          from public.memory_relations order by created_at, id`;
      const history = await tx`
        select id, memory_id, event, old_ref, new_ref, actor, old_content, new_content, meta, ts
          from public.memory_history order by ts, id`;
      return { memories, relations: relations.map((r) => isoDates(r)), history: history.map((h) => isoDates(h)) };
    });
    const now = clock();
    const base = { tenant_id: tenant.tenantId, exported_at: now.toISOString() };
    if (q.format === "markdown") {
      const files = memoriesToMarkdownFiles(data.memories);
      // The files themselves when the client asks for an archive (`curl … | tar -x`); else JSON.
      if (/\bapplication\/(x-)?tar\b/i.test(c.req.header("accept") ?? "")) {
        return new Response(tarArchive(files, now), {
          headers: {
            ...corsHeaders,
            "content-type": "application/x-tar",
            "content-disposition": `attachment; filename="devai-memories-${now.toISOString().slice(0, 10)}.tar"`,
          },
        });
      }
      return json({ ...base, format: "markdown", files });
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
}

/** The routes of one memory by id. */
export function registerMemoryReadRoutes(app: MemoryApp, deps: RouteDeps): void {
  const { sql, clock } = deps;

  // -- one memory ----------------------------------------------------------------------------
  app.get("/memory/:id", async (c) => {
    const id = parseId(c);
    const q = parseQuery(c, MemoryQuery);
    const [row] = await withTenant(sql, who(c), (tx) =>
      tx`select ${memoryColumns(tx, "m")}, ${asOfColumns(tx, q.as_of)}
           from public.devai_memories m ${recordedBy(tx, q.as_of, { held: false })} where m.id = ${id}`
    );
    if (!row) throw q.as_of ? new HttpError(404, "not_found", `memory ${id} not found, or not recorded yet at ${q.as_of}`) : notFound(id);
    if (!q.as_of) return json({ memory: toMemory(row) });
    return json({ memory: toMemory(memoryAsOf(row)), as_of: q.as_of, held: row.as_of_held === true });
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
}
