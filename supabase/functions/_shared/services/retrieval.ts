// Retrieval before a turn (POST memory-retrieve, the MCP tool search_memory): the `## Relevant
// Memories` block.
//   validate → query = message + project context → embed → plan (intent, complexity, time window:
//   search/plan.ts) → ONE hybrid_search call (keyword + vector + graph, fused) over
//   <root>/global/, <root>/project/<project>/ (when given) and <root>/user/, as the tenant (RLS)
//   → usage and code lineage (context/feedback.ts) → rank (retrieval/rank.ts: relevance ×
//   strength × usage + boosts) → pack into the budget exactly (retrieval/pack.ts) → block grouped by type (retrieval/format.ts) with the delta header
//   (retrieval/delta.ts) → reinforce what was injected (retrieval/reinforce.ts) → one
//   memory_events row (context/search).
import { type TenantContext, type Tx, withTenant } from "../db.ts";
import { embedForRequest, thresholdsFor } from "../embeddings.ts";
import { hybridSearch } from "../search/hybrid.ts";
import { keywordText, resolvePlan } from "../search/plan.ts";
import { entityTermsOf } from "../search/intent.ts";
import { deltaHeaderLine, formatDeltaBullets, loadThreadDelta } from "../retrieval/delta.ts";
import type { FormatContext } from "../retrieval/format.ts";
import { packIntoBudget, type RelatedCandidate } from "../retrieval/pack.ts";
import { rankMemories } from "../retrieval/rank.ts";
import { reinforceMemories } from "../retrieval/reinforce.ts";
import { applyFeedback, loadFeedback } from "../context/feedback.ts";
import { MAX_BUDGET_TOKENS, MAX_TOP_K, type RetrieveRequest, type RetrieveResponse } from "../retrieval/schemas.ts";
import { explainRow, recordSearch, retrievalScopes, searchInfo } from "../retrieval/search.ts";
import type { SearchDeps, Timed } from "./deps.ts";

/** The block and the memories for a turn; `timing` says how long embedding and the database took. */
export async function retrieve(
  deps: SearchDeps,
  caller: TenantContext,
  body: RetrieveRequest,
): Promise<Timed<RetrieveResponse>> {
  const { config, embedder } = deps;
  const root = config.namespaceRoot;
  const ctx: FormatContext = { root, project: body.project };
  const scopes = retrievalScopes(root, body.project);
  const threshold = body.threshold ?? thresholdsFor(embedder.model, config).retrieve;
  const threadId = body.thread_id ?? "default";
  const mode = body.mode ?? "hybrid";

  const t0 = performance.now();
  const queryText = body.project_context ? `${body.message}\n\n${body.project_context}` : body.message;
  const vector = mode === "keyword" ? undefined : await embedForRequest(embedder, queryText);
  const resolved = await resolvePlan(
    { ...body, text: body.message },
    embedder,
    vector,
    deps.clock ?? (() => new Date()),
  );
  const { plan } = resolved;
  const topK = Math.min(body.top_k ?? config.retrieval.topK ?? plan.topK, MAX_TOP_K);
  const budget = Math.min(body.budget_tokens ?? config.retrieval.budgetTokens ?? plan.budgetTokens, MAX_BUDGET_TOKENS);
  const t1 = performance.now();

  const result = await withTenant(deps.sql, caller, async (tx): Promise<RetrieveResponse> => {
    const rows = await hybridSearch(tx, {
      queryText: keywordText(queryText, resolved),
      vector,
      embeddingModel: embedder.model,
      scopes,
      ownerId: caller.tenantId,
      limit: topK,
      threshold,
      mode,
      graphDepth: plan.graphDepth,
      graphEdgeTypes: plan.graphEdgeTypes,
      after: resolved.window?.after,
      before: resolved.window?.before,
      preferMemoryTypes: plan.preferMemoryTypes,
      recencyWeight: plan.recencyWeight,
      keywordThreshold: body.keyword_threshold,
      asOf: body.as_of,
      entityTerms: plan.entityLookup ? entityTermsOf(body.message) : undefined,
      graphEpisodes: plan.graphEpisodes,
    });
    // Usage feedback and code lineage (docs/context.md); an as_of answer is about the past: neither applies.
    const feedback = body.as_of ? new Map() : await loadFeedback(tx, rows.map((r) => r.id), scopes, caller.tenantId);
    const judged = body.as_of ? { kept: rows, excluded: [] } : applyFeedback(rows, feedback, body.signals);
    const ranked = rankMemories(judged.kept);
    // as_of answers from the past: no related bullets, nothing reinforced (that is for the live turn).
    const related = !body.as_of && ranked.some((m) => m.max_relation_strength != null)
      ? await loadRelated(tx, ranked.map((m) => m.id), scopes)
      : [];
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
    if (!body.as_of) await reinforceMemories(tx, [...injectedIds]);
    const search = await searchInfo(tx, embedder.model, mode, resolved, topK, budget);
    await recordSearch(tx, caller, body.thread_id ?? null, rows, null, {
      mode: "retrieve",
      search_mode: mode,
      intent: search.intent,
      project: body.project ?? null,
      candidates: rows.length,
      injected: injectedIds.size,
      truncated: packed.truncatedCount,
      budget_tokens: budget,
      token_count: packed.tokenCount,
      as_of: body.as_of ?? null,
    });

    return {
      block: packed.block,
      memories: ranked.map((m) => ({
        ...explainRow(m),
        injected: injectedIds.has(m.id),
        ...(packed.shortened.includes(m.id) ? { shortened: true } : {}),
      })),
      related: packed.related,
      token_count: packed.tokenCount,
      truncated_count: packed.truncatedCount,
      revision: delta.revision,
      embedding_model: embedder.model,
      search,
      excluded: judged.excluded,
    };
  }, { threadId });
  return { result, timing: { embed: t1 - t0, db: performance.now() - t1 } };
}

/**
 * Up to 8 memories linked to the candidates, strongest edge first, for the block's
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
     where m.is_valid and m.state = 'active' and m.source is distinct from 'conversation'
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
