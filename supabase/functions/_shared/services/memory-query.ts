// memory.query (POST memory-retrieve/query, the MCP tool query_memory): the agent's allowlist
// (database) is checked before anything else (403 naming a disallowed category, 403 for an unknown
// agent, naming the configured ones), then query_memories runs the hybrid search with the
// categories as a filter of every signal and applies the other filters in SQL; bullets or full
// rows within the budget; returned memories are reinforced and the search is recorded, behind the
// answer (retrieval/write-behind.ts).
import type { Caller } from "../auth.ts";
import { readAsTenant, type Sql, type TenantContext, type TenantSettings, toVectorLiteral, withTenant } from "../db.ts";
import { embeddingText } from "../search/exclusions.ts";
import { keywordText, resolvePlan, steeringOf } from "../search/plan.ts";
import { embedForCaller, thresholdsFor } from "../embeddings.ts";
import { HttpError } from "../http.ts";
import { loadCategoryNames, unknownCategory } from "../categories.ts";
import { requireAllowlist } from "../memory-config.ts";
import { bulletText } from "../retrieval/format.ts";
import { packTexts } from "../retrieval/pack.ts";
import { rankMemories } from "../retrieval/rank.ts";
import {
  MAX_BUDGET_TOKENS,
  MAX_TOP_K,
  QUERY_DEFAULT_TOP_K,
  type QueryRequest,
  type QueryResponse,
} from "../retrieval/schemas.ts";
import {
  explainRow,
  type QueryRow,
  retrievalScopes,
  rowFromJson,
  searchInfo,
  searchWrite,
} from "../retrieval/search.ts";
import { writeBehind } from "../retrieval/write-behind.ts";
import { applyFeedback, feedbackOf, type FeedbackRow } from "../context/feedback.ts";
import { type FusionWeights, steeringArgs } from "../search/hybrid.ts";
import { clockOf, readPoolOf, type SearchDeps, type Timed } from "./deps.ts";
import { asOfValue } from "../memories/as-of.ts";
import { emptyQueryHint } from "../retrieval/query-hint.ts";

/** What the agent may read that answers the query, as bullets or full rows; `timing` as for retrieve. */
export async function queryMemories(
  deps: SearchDeps,
  caller: TenantContext & Pick<Caller, "agent" | "agentBound">,
  body: QueryRequest,
): Promise<Timed<QueryResponse>> {
  const { config, embedder } = deps;
  const filters = body.filters ?? {};

  // An agent token reads as its own agent only (docs/auth.md#agent-tokens).
  if (caller.agentBound && caller.agent !== body.agent) {
    throw new HttpError(
      403,
      "forbidden_agent",
      `this agent token is ${caller.agent}'s; it cannot query as '${body.agent}'`,
    );
  }
  // The allowlist first, in its own short read-only transaction: a refused request costs no
  // embedding call and writes nothing. Read on the primary, never a replica: a category taken
  // away from an agent is refused from the moment the change commits, not once a replica has
  // replayed it (the search on the replica can only narrow what this allows).
  const asked = [...new Set([...(body.categories ?? []), ...(filters.category ? [filters.category] : [])])];
  // A name no category has is a typo, not a permission: the 400 naming the configured ones, as remember's.
  const { allowed, known } = await withTenant(deps.sql, caller, async (tx) => {
    const allowed = await requireAllowlist(tx, body.agent);
    return { allowed, known: asked.every((c) => allowed.includes(c)) ? allowed : await loadCategoryNames(tx) };
  });
  const unknown = asked.find((c) => !known.includes(c));
  if (unknown !== undefined) {
    const at = body.categories?.indexOf(unknown) ?? -1;
    throw unknownCategory(unknown, known, at >= 0 ? ["categories", at] : ["filters", "category"]);
  }
  const refused = asked.filter((c) => !allowed.includes(c));
  if (refused.length > 0) {
    throw new HttpError(
      403,
      "category_not_allowed",
      `agent '${body.agent}' may not read categor${refused.length === 1 ? "y" : "ies"}: ${refused.join(", ")}`,
      [
        {
          path: ["categories"],
          message: `not in the allowlist of '${body.agent}': ${refused.join(", ")}`,
          code: "category_not_allowed",
        },
      ],
    );
  }
  // Categories requested (default: all the agent may read), narrowed by filters.category.
  let categories = body.categories ?? allowed;
  if (filters.category) categories = categories.filter((c) => c === filters.category);

  const topK = Math.min(body.top_k ?? config.retrieval.topK ?? QUERY_DEFAULT_TOP_K, MAX_TOP_K);
  const threshold = body.threshold ?? thresholdsFor(embedder.model, config).retrieve;
  const scopes = retrievalScopes(config.namespaceRoot, body.project);
  const mode = body.mode ?? "hybrid";

  const t0 = performance.now();
  const vector = mode === "keyword" ? undefined : await embedForCaller(deps, caller, embeddingText(body.query));
  const resolved = await resolvePlan({ ...body, text: body.query }, embedder, vector, clockOf(deps));
  const budget = Math.min(
    body.budget_tokens ?? config.retrieval.budgetTokens ?? resolved.plan.budgetTokens,
    MAX_BUDGET_TOKENS,
  );
  const t1 = performance.now();

  // The intent steers memory.query as it steers memory-retrieve (search/intent.ts planSearch).
  const steering = steeringOf(resolved, body);
  const read = (q: Sql, tenant: TenantSettings) =>
    // The search's rows, then (offset 0: computed once) their usage feedback, as the tenant.
    q<
      { rows: Record<string, unknown>[] | null; feedback: FeedbackRow[]; weights: FusionWeights; now: Date }[]
    >`
      select found.rows,
             case when ${asOfValue(q, body.as_of)} is null
                  then public.memory_feedback(array(select (x ->> 'id')::uuid from jsonb_array_elements(found.rows) x),
                                              ${scopes}::text[], ${caller.tenantId}::uuid)
                  else '[]'::jsonb end as feedback,
             public.memory_search_weights_for(${embedder.model}) as weights,
             now() as now
        from (select (select jsonb_agg(to_jsonb(r) - 'ordinality' order by r.ordinality)
                from public.query_memories(
                       query_text => ${keywordText(body.query, resolved)},
                       query_embedding => ${vector ? toVectorLiteral(vector) : null}::extensions.vector,
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
                       filter_updated_before => ${filters.updated_before ?? null}::timestamptz,
                       ${steeringArgs(q, steering)}) with ordinality as r
               where ${categories.length > 0}) as rows
                from ${tenant}
              offset 0) as found`;
  // One statement, as the tenant; what it writes waits behind the answer (write-behind.ts).
  const found = (await readAsTenant(readPoolOf(deps), caller, read))[0]!;
  const rows = (found.rows ?? []).map((r) => rowFromJson<QueryRow>(r));
  // Usage feedback and code lineage (docs/context.md). An as_of answer is about the past: no usage
  // counters (none are read), but lineage from each memory's metadata still applies.
  const judged = applyFeedback(rows, feedbackOf(found.feedback), body.signals);
  const ranked = rankMemories(judged.kept);
  const bulletOf = (m: QueryRow) => `[${m.category}] ${bulletText(m.content)}`;
  const packed = body.return === "bullets"
    ? packTexts(ranked, bulletOf, budget, { shortenFirst: true })
    : packTexts(ranked, (m) => m.content, budget);
  const search = searchInfo(found.weights, mode, resolved, topK, budget);
  const category = categories.length === 1 ? categories[0]! : null;
  const reinforce = body.as_of ? [] : packed.kept.map((m) => m.id);
  writeBehind(
    deps.sql,
    caller,
    searchWrite(found.now.toISOString(), reinforce, body.thread_id ?? null, rows, category, {
      mode: "query",
      search_mode: mode,
      intent: search.intent,
      agent: body.agent,
      categories,
      return: body.return,
      candidates: rows.length,
      returned: packed.kept.length,
      truncated: packed.truncatedCount,
      as_of: body.as_of ?? null,
    }),
    deps.config.retrieval.writeBehindMs,
  );
  const results = body.return === "bullets"
    ? packed.kept.map((m, i) => ({ id: m.id, category: m.category, text: packed.texts[i]! }))
    : packed.kept.map((m) => ({
      ...explainRow(m),
      category: m.category,
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
  const result: QueryResponse = {
    agent: body.agent,
    return: body.return,
    results,
    token_count: packed.tokenCount,
    truncated_count: packed.truncatedCount,
    embedding_model: embedder.model,
    search,
    excluded: judged.excluded,
  };
  // An empty answer says when memories without a category are in scope: memory.query never serves them.
  if (results.length === 0) {
    const hint = await emptyQueryHint(deps, caller, body.agent, scopes);
    if (hint) result.hint = hint;
  }
  return { result, timing: { embed: t1 - t0, db: performance.now() - t1 } };
}
