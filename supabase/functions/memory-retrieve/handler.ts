// memory-retrieve. Two modes, chosen by path (documented in schemas.ts):
//
// POST /memory-retrieve: the seed's retrieval flow, step by step
//   auth → validate → query = message + project context → embed → ONE match_memories call over
//   <root>/global/, <root>/project/<project>/ (when given) and <root>/user/, as the tenant (RLS),
//   same embedding model, threshold per model → rank (rank.ts) → pack into budget_tokens exactly
//   (pack.ts) → block grouped by type (format.ts) with the delta header (delta.ts) → reinforce
//   what was injected (reinforce.ts) → one memory_events row (context/search, best similarity).
//
// POST /memory-retrieve/query: memory.query (seed 001 §6): the agent's allowlist (database) is
//   checked before anything else (403 naming a disallowed category, 403 for an unknown agent),
//   then query_memories applies categories and filters in SQL; bullets or full rows within the
//   budget; returned memories are reinforced and the search is recorded.
//
// Everything a request writes happens in its one tenant transaction, after validation, so a 4xx
// writes nothing.
import { authenticate, type Caller } from "../_shared/auth.ts";
import { createSql, type Sql, toVectorLiteral, type Tx, withTenant } from "../_shared/db.ts";
import { createEmbedder, type Embedder, thresholdsFor } from "../_shared/embeddings.ts";
import { type Config, loadConfig } from "../_shared/env.ts";
import { handleErrors, HttpError, json, methodNotAllowed, parseJsonBody } from "../_shared/http.ts";
import { routeOf } from "../_shared/routes.ts";
import { limitRequests } from "../_shared/rate-limit.ts";
import { deltaHeaderLine, formatDeltaBullets, loadThreadDelta } from "./delta.ts";
import { bulletText, type FormatContext } from "./format.ts";
import { packIntoBudget, packTexts, type RelatedCandidate } from "./pack.ts";
import { rankMemories } from "./rank.ts";
import { reinforceMemories } from "./reinforce.ts";
import {
  MAX_BUDGET_TOKENS,
  MAX_TOP_K,
  QUERY_DEFAULT_TOP_K,
  QueryRequest,
  type QueryResponse,
  RetrieveRequest,
  type RetrieveResponse,
} from "./schemas.ts";

export interface RetrieveDeps {
  sql: Sql;
  config: Config;
  embedder: Embedder;
  /** Accepted for the handlers' common dependency shape; retrieval reads time from the database. */
  clock?: () => Date;
}

export function defaultDeps(): RetrieveDeps {
  const config = loadConfig();
  return {
    config,
    sql: createSql(config.databaseUrl, { max: config.dbPoolMax, applicationName: "memory-retrieve", statementTimeoutMs: config.dbStatementTimeoutMs }),
    embedder: createEmbedder(config),
  };
}

/** A row of match_memories / query_memories as postgres.js returns it. */
interface MatchRow {
  id: string;
  content: string;
  similarity: number;
  memory_type: "semantic" | "episodic" | "procedural";
  namespace: string;
  strength: number;
  priority: "highest" | "high" | "medium" | "low";
  importance: number;
  pinned: boolean;
  source: string | null;
  metadata: Record<string, unknown>;
  session_id: string | null;
  access_count: number;
  last_accessed_at: Date;
  created_at: Date;
  updated_at: Date;
  max_relation_strength: number | null;
}

interface QueryRow extends MatchRow {
  category: string;
  category_context: "all" | "rag";
}

export function createHandler(deps: RetrieveDeps): (req: Request) => Promise<Response> {
  return handleErrors(limitRequests(() => "read", async (req) => {
    const route = routeOf(req, "memory-retrieve", ["", "query"]);
    if (req.method !== "POST") throw methodNotAllowed(["POST"]);
    const caller = await authenticate(req, deps.config);
    return route === "query" ? await runQuery(deps, caller, req) : await runRetrieve(deps, caller, req);
  }));
}

/** The scopes one retrieval searches (seed 000 Namespace Hierarchy). */
export function retrievalScopes(root: string, project?: string): string[] {
  return [`${root}/global`, ...(project !== undefined ? [`${root}/project/${project}`] : []), `${root}/user`];
}

function serverTiming(parts: Record<string, number>): Record<string, string> {
  return { "server-timing": Object.entries(parts).map(([k, v]) => `${k};dur=${v.toFixed(1)}`).join(", ") };
}

async function embedQuery(embedder: Embedder, text: string): Promise<number[]> {
  const [vector] = await embedder.embed([text]);
  if (!vector) throw new Error("embedder returned no vector");
  return vector;
}

// ---------------------------------------------------------------------------------------------
// Retrieval mode

async function runRetrieve(deps: RetrieveDeps, caller: Caller, req: Request): Promise<Response> {
  const { config, embedder } = deps;
  const body = await parseJsonBody(req, RetrieveRequest, config.maxBodyBytes);
  const root = config.namespaceRoot;
  const ctx: FormatContext = { root, project: body.project };
  const scopes = retrievalScopes(root, body.project);
  const topK = Math.min(body.top_k ?? config.retrieval.topK, MAX_TOP_K);
  const budget = Math.min(body.budget_tokens ?? config.retrieval.budgetTokens, MAX_BUDGET_TOKENS);
  const threshold = body.threshold ?? thresholdsFor(embedder.model, config).retrieve;
  const threadId = body.thread_id ?? "default";

  const t0 = performance.now();
  const queryText = body.project_context ? `${body.message}\n\n${body.project_context}` : body.message;
  const vector = toVectorLiteral(await embedQuery(embedder, queryText));
  const t1 = performance.now();

  const result = await withTenant(deps.sql, caller, async (tx): Promise<RetrieveResponse> => {
    const rows = await tx<MatchRow[]>`
      select * from public.match_memories(
        ${vector}::extensions.vector, ${scopes[0]!}, ${topK}, ${threshold},
        ${caller.tenantId}::uuid, ${embedder.model}, ${scopes.slice(1)}::text[])`;
    const ranked = rankMemories(rows);
    const related = ranked.some((m) => m.max_relation_strength != null) ? await loadRelated(tx, ranked.map((m) => m.id), scopes) : [];
    const delta = await loadThreadDelta(tx, threadId, body.since_revision);

    const packed = packIntoBudget(
      {
        ranked,
        budgetTokens: budget,
        deltaHeader: body.since_revision !== undefined ? deltaHeaderLine(body.since_revision) : undefined,
        deltaBullets: formatDeltaBullets(delta.changes),
        related,
      },
      ctx,
    );
    const injectedIds = new Set(packed.injected.map((m) => m.id));
    await reinforceMemories(tx, [...injectedIds]);
    await recordSearch(tx, caller, body.thread_id ?? null, rows, null, {
      mode: "retrieve",
      project: body.project ?? null,
      candidates: rows.length,
      injected: injectedIds.size,
      truncated: packed.truncatedCount,
      budget_tokens: budget,
      token_count: packed.tokenCount,
    });

    return {
      block: packed.block,
      memories: ranked.map((m) => ({
        id: m.id,
        content: m.content,
        memory_type: m.memory_type,
        namespace: m.namespace,
        similarity: m.similarity,
        strength: m.strength,
        score: m.score,
        injected: injectedIds.has(m.id),
      })),
      related: packed.related,
      token_count: packed.tokenCount,
      truncated_count: packed.truncatedCount,
      revision: delta.revision,
      embedding_model: embedder.model,
    };
  }, { threadId });
  return json(result, 200, serverTiming({ embed: t1 - t0, db: performance.now() - t1 }));
}

/**
 * Up to 8 memories linked to the candidates (seed 001 §2), strongest edge first, for the block's
 * related bullets. Same scopes as the search, so a relation can never pull in another project's
 * memory; contradicting edges are not "related"; invalid/forgotten memories are skipped.
 */
async function loadRelated(tx: Tx, ids: string[], scopes: string[]): Promise<RelatedCandidate[]> {
  const prefixes = scopes.map((s) => `${s}/`);
  const rows = await tx<(RelatedCandidate & { strength: number })[]>`
    select m.id, e.anchor_id, m.content, e.strength
      from (select r.to_id as id, r.from_id as anchor_id, r.strength
              from public.memory_relations r
             where r.from_id = any (${ids}::uuid[]) and r.relation_type <> 'contradicts'
            union all
            select r.from_id, r.to_id, r.strength
              from public.memory_relations r
             where r.to_id = any (${ids}::uuid[]) and r.relation_type <> 'contradicts') e
      join public.devai_memories m on m.id = e.id
     where m.is_valid and m.state = 'active'
       and not (m.id = any (${ids}::uuid[]))
       and (m.namespace || '/') ^@ any (${prefixes}::text[])
     order by e.strength desc, m.id
     limit 8`;
  // The pack step walks these in order: anchors in rank order, strongest edge first.
  const rank = new Map(ids.map((id, i) => [id, i]));
  return rows
    .map((r) => ({ id: r.id, anchor_id: r.anchor_id, content: r.content, strength: r.strength }))
    .sort((a, b) => (rank.get(a.anchor_id)! - rank.get(b.anchor_id)!) || b.strength - a.strength)
    .map(({ id, anchor_id, content }) => ({ id, anchor_id, content }));
}

/** One memory_events row per search (seed 001 §14): node context, op search, best similarity. */
async function recordSearch(
  tx: Tx,
  caller: Caller,
  threadId: string | null,
  rows: readonly { similarity: number }[],
  category: string | null,
  meta: Record<string, unknown>,
): Promise<void> {
  const best = rows.length > 0 ? Math.max(...rows.map((r) => r.similarity)) : null;
  await tx`
    insert into public.memory_events (owner_id, thread_id, node, op, status, category, sim, meta)
    values (${caller.tenantId}::uuid, ${threadId}, 'context', 'search', 'ok', ${category}, ${best},
            ${tx.json(meta as never)})`;
}

// ---------------------------------------------------------------------------------------------
// memory.query mode

async function runQuery(deps: RetrieveDeps, caller: Caller, req: Request): Promise<Response> {
  const { config, embedder } = deps;
  const body = await parseJsonBody(req, QueryRequest, config.maxBodyBytes);
  const filters = body.filters ?? {};

  // The allowlist first, in its own short read-only transaction: a refused request costs no
  // embedding call and writes nothing.
  const allowed = await withTenant(deps.sql, caller, async (tx) =>
    (await tx<{ category: string }[]>`
      select category from public.memory_agent_allowlists where agent = ${body.agent} order by category`).map((r) => r.category));
  if (allowed.length === 0) throw new HttpError(403, "unknown_agent", `agent '${body.agent}' has no memory allowlist`);
  const asked = [...new Set([...(body.categories ?? []), ...(filters.category ? [filters.category] : [])])];
  const refused = asked.filter((c) => !allowed.includes(c));
  if (refused.length > 0) {
    throw new HttpError(403, "category_not_allowed", `agent '${body.agent}' may not read categor${refused.length === 1 ? "y" : "ies"}: ${refused.join(", ")}`, [
      { path: ["categories"], message: `not in the allowlist of '${body.agent}': ${refused.join(", ")}`, code: "category_not_allowed" },
    ]);
  }
  // Categories requested (default: all the agent may read), narrowed by filters.category.
  let categories = body.categories ?? allowed;
  if (filters.category) categories = categories.filter((c) => c === filters.category);

  const topK = Math.min(body.top_k ?? QUERY_DEFAULT_TOP_K, MAX_TOP_K);
  const budget = Math.min(body.budget_tokens ?? config.retrieval.budgetTokens, MAX_BUDGET_TOKENS);
  const threshold = body.threshold ?? thresholdsFor(embedder.model, config).retrieve;
  const scopes = retrievalScopes(config.namespaceRoot, body.project);

  const t0 = performance.now();
  const vector = toVectorLiteral(await embedQuery(embedder, body.query));
  const t1 = performance.now();

  const result = await withTenant(deps.sql, caller, async (tx): Promise<QueryResponse> => {
    const rows = categories.length === 0 ? [] : await tx<QueryRow[]>`
      select * from public.query_memories(
        query_embedding => ${vector}::extensions.vector,
        match_namespaces => ${scopes}::text[],
        match_agent => ${body.agent},
        match_categories => ${categories}::text[],
        match_count => ${topK},
        similarity_threshold => ${threshold},
        match_embedding_model => ${embedder.model},
        match_owner => ${caller.tenantId}::uuid,
        filter_user_id => ${filters.user_id ?? null},
        filter_agent_id => ${filters.agent_id ?? null},
        filter_run_id => ${filters.run_id ?? null},
        filter_actor_id => ${filters.actor_id ?? null},
        filter_role => ${filters.role ?? null},
        filter_pinned => ${filters.pinned ?? null}::boolean,
        filter_importance_min => ${filters.importance_min ?? null}::integer,
        filter_importance_max => ${filters.importance_max ?? null}::integer,
        filter_updated_after => ${filters.updated_after ?? null}::timestamptz,
        filter_updated_before => ${filters.updated_before ?? null}::timestamptz)`;
    const ranked = rankMemories(rows);
    const bulletOf = (m: QueryRow) => `[${m.category}] ${bulletText(m.content)}`;
    const packed = body.return === "bullets"
      ? packTexts(ranked, bulletOf, budget)
      : packTexts(ranked, (m) => m.content, budget);
    await reinforceMemories(tx, packed.kept.map((m) => m.id));
    await recordSearch(tx, caller, body.thread_id ?? null, rows, categories.length === 1 ? categories[0]! : null, {
      mode: "query",
      agent: body.agent,
      categories,
      return: body.return,
      candidates: rows.length,
      returned: packed.kept.length,
      truncated: packed.truncatedCount,
    });
    const results = body.return === "bullets"
      ? packed.kept.map((m) => ({ id: m.id, category: m.category, text: bulletOf(m) }))
      : packed.kept.map((m) => ({
        id: m.id,
        category: m.category,
        content: m.content,
        memory_type: m.memory_type,
        namespace: m.namespace,
        similarity: m.similarity,
        strength: m.strength,
        score: m.score,
        priority: m.priority,
        importance: m.importance,
        pinned: m.pinned,
        source: m.source,
        metadata: m.metadata,
        session_id: m.session_id,
        access_count: m.access_count,
        last_accessed_at: m.last_accessed_at.toISOString(),
        created_at: m.created_at.toISOString(),
        updated_at: m.updated_at.toISOString(),
      }));
    return {
      agent: body.agent,
      return: body.return,
      results,
      token_count: packed.tokenCount,
      truncated_count: packed.truncatedCount,
      embedding_model: embedder.model,
    };
  });
  return json(result, 200, serverTiming({ embed: t1 - t0, db: performance.now() - t1 }));
}
