// Retrieval before a turn (POST memory-retrieve, the MCP tool search_memory): the `## Relevant
// Memories` block.
//   validate → query = message + project context (search/exclusions.ts) → embed → plan (intent, complexity, time window:
//   search/plan.ts) → ONE statement as the tenant (RLS), public.retrieve_for_turn: the hybrid
//   search (keyword + vector + graph, fused) over <root>/global/, <root>/project/<project>/ (when
//   given) and <root>/user/, the related memories, the thread's revision and changes, the fusion
//   weights, the found memories' usage and files (docs/retrieval.md#one-call) → usage and code
//   lineage (context/feedback.ts) → rank (retrieval/rank.ts: relevance × strength × usage +
//   boosts) → pack into the budget exactly (retrieval/pack.ts) → block grouped by type
//   (retrieval/format.ts) with the delta header (retrieval/delta.ts) → answer. The reinforcement
//   of what was injected and the memory_events row (context/search) are written behind the answer
//   (retrieval/write-behind.ts, docs/operations.md#write-behind-reinforcement-and-search-events).
import { readAsTenant, type Sql, type TenantContext } from "../db.ts";
import { embedForCaller, thresholdsFor } from "../embeddings.ts";
import { type FusionWeights, hybridSearchArgs, type HybridSearchInput } from "../search/hybrid.ts";
import { embeddingText, retrievalText } from "../search/exclusions.ts";
import { keywordText, resolvePlan, steeringOf } from "../search/plan.ts";
import { type ChangeRow, deltaHeaderLine, formatDeltaBullets } from "../retrieval/delta.ts";
import type { FormatContext } from "../retrieval/format.ts";
import { packIntoBudget, type RelatedCandidate } from "../retrieval/pack.ts";
import { rankMemories } from "../retrieval/rank.ts";
import { MAX_BUDGET_TOKENS, MAX_TOP_K, type RetrieveRequest, type RetrieveResponse } from "../retrieval/schemas.ts";
import {
  explainRow,
  retrievalScopes,
  rowFromJson,
  searchInfo,
  searchWrite,
  type TurnRow,
} from "../retrieval/search.ts";
import { writeBehind } from "../retrieval/write-behind.ts";
import { applyFeedback, feedbackOf, type FeedbackRow } from "../context/feedback.ts";
import { clockOf, readPoolOf, type SearchDeps, type Timed } from "./deps.ts";

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
  // The exclusions are the message's alone (docs/retrieval.md#exclusions).
  const queryText = retrievalText(body.message, body.project_context);
  const vector = mode === "keyword" ? undefined : await embedForCaller(deps, caller, embeddingText(queryText));
  const resolved = await resolvePlan(
    { ...body, text: body.message },
    embedder,
    vector,
    clockOf(deps),
  );
  const { plan } = resolved;
  const topK = Math.min(body.top_k ?? config.retrieval.topK ?? plan.topK, MAX_TOP_K);
  const budget = Math.min(body.budget_tokens ?? config.retrieval.budgetTokens ?? plan.budgetTokens, MAX_BUDGET_TOKENS);
  const t1 = performance.now();

  const input: HybridSearchInput = {
    queryText: keywordText(queryText, resolved),
    vector,
    embeddingModel: embedder.model,
    scopes,
    ownerId: caller.tenantId,
    limit: topK,
    threshold,
    ...steeringOf(resolved, body),
  };
  const since = body.since_revision;
  const read = (sql: Sql) => readTurn(sql, caller, input, threadId, since);
  let turn = await read(readPoolOf(deps));
  // A replica behind the revision the caller has already seen would hide its own writes: the
  // primary answers instead (docs/operations.md#read-replicas).
  if (since !== undefined && turn.revision < since && readPoolOf(deps) !== deps.sql) turn = await read(deps.sql);

  const rows = turn.memories.map((r) => rowFromJson<TurnRow>(r));
  // Usage feedback and code lineage (docs/context.md), read in the same statement. An as_of answer
  // is about the past: retrieve_for_turn sends no usage counters for it, but lineage (from each
  // memory's own metadata) still keeps another branch's unmerged notes out.
  const judged = applyFeedback(rows, feedbackOf(turn.feedback), body.signals);
  const ranked = rankMemories(judged.kept);
  const packed = packIntoBudget(
    {
      ranked,
      budgetTokens: budget,
      deltaHeader: since !== undefined ? deltaHeaderLine(since) : undefined,
      deltaBullets: formatDeltaBullets(turn.changes),
      // as_of answers from the past: no related bullets, nothing reinforced (that is for the live turn).
      related: relatedInRankOrder(turn.related, ranked.map((m) => m.id)),
    },
    ctx,
  );
  const injectedIds = new Set(packed.injected.map((m) => m.id));
  const search = searchInfo(turn.weights, mode, resolved, topK, budget);
  writeBehind(
    deps.sql,
    caller,
    searchWrite(turn.now, body.as_of ? [] : [...injectedIds], body.thread_id ?? null, rows, null, {
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
    }),
    deps.config.retrieval.writeBehindMs,
  );

  const result: RetrieveResponse = {
    block: packed.block,
    memories: ranked.map((m) => ({
      ...explainRow(m),
      injected: injectedIds.has(m.id),
      ...(packed.shortened.includes(m.id) ? { shortened: true } : {}),
    })),
    related: packed.related,
    token_count: packed.tokenCount,
    truncated_count: packed.truncatedCount,
    revision: turn.revision,
    embedding_model: embedder.model,
    search,
    excluded: judged.excluded,
  };
  return { result, timing: { embed: t1 - t0, db: performance.now() - t1 } };
}

/** What public.retrieve_for_turn answers (docs/retrieval.md#one-call). */
interface Turn {
  memories: Record<string, unknown>[];
  related: (RelatedCandidate & { strength: number })[];
  revision: number;
  changes: ChangeRow[];
  weights: FusionWeights;
  feedback: FeedbackRow[];
  now: string;
}

/** Everything the turn reads, in one statement as the tenant (one round trip). */
async function readTurn(
  sql: Sql,
  caller: TenantContext,
  input: HybridSearchInput,
  threadId: string,
  since?: number,
): Promise<Turn> {
  const [row] = await readAsTenant(sql, caller, (q, tenant) =>
    q<{ turn: Turn }[]>`
      select public.retrieve_for_turn(${hybridSearchArgs(q, input)},
                                      thread_id => ${threadId}, since_revision => ${since ?? null}::bigint) as turn
        from ${tenant}`, { threadId });
  return row!.turn;
}

/**
 * The related memories (strongest edge first, as the search gives them) in the order the pack
 * step walks them: anchors in rank order, strongest edge first.
 */
function relatedInRankOrder(
  related: readonly (RelatedCandidate & { strength: number })[],
  ids: string[],
): RelatedCandidate[] {
  const rank = new Map(ids.map((id, i) => [id, i]));
  return related.filter((r) => rank.has(r.anchor_id)) // not the anchors lineage left out
    .sort((a, b) => (rank.get(a.anchor_id)! - rank.get(b.anchor_id)!) || b.strength - a.strength)
    .map(({ id, anchor_id, content }) => ({ id, anchor_id, content }));
}
