// The one search every reader uses: public.hybrid_search (keyword + vector + graph, fused), called
// in the caller's tenant transaction so RLS applies. docs/retrieval.md explains the signals.
import type { Sql, Tx } from "../db.ts";
import { toVectorLiteral } from "../db.ts";
import { asOfValue } from "../memories/as-of.ts";
import type { Complexity } from "./intent.ts";
import { literalText } from "./exclusions.ts";

export type SearchMode = "hybrid" | "vector" | "keyword";
export const SEARCH_MODES: readonly SearchMode[] = ["hybrid", "vector", "keyword"];

export interface HybridSearchInput {
  queryText: string;
  /** The query's embedding; undefined searches without the vector signal. */
  vector?: readonly number[];
  embeddingModel: string;
  /** Scopes: namespace bases, matched by '/'-bounded prefix. */
  scopes: readonly string[];
  ownerId: string;
  limit: number;
  /** Cosine floor for the vector signal. */
  threshold: number;
  mode?: SearchMode;
  graphDepth?: number;
  graphEdgeTypes?: readonly string[];
  after?: Date;
  before?: Date;
  memoryTypes?: readonly string[];
  categories?: readonly string[];
  preferMemoryTypes?: readonly string[];
  recencyWeight?: number;
  /** Keyword floor (share of the best possible score); default the setting keyword_min_coverage. */
  keywordThreshold?: number;
  /** Answer from what the memory held at this instant (docs/graph.md#as-of). */
  asOf?: string;
  /** Names to look up as entities (who/what questions). */
  entityTerms?: readonly string[];
  /** Let the graph bring raw episodes in, at half a fact's weight (when/why questions). */
  graphEpisodes?: boolean;
  /** How the planner read the question: a complex (multi-part) one is fused by scores (docs/retrieval.md#fusion). */
  complexity?: Complexity;
}

/** A row of public.hybrid_search as postgres.js returns it. */
export interface HybridRow {
  id: string;
  content: string;
  memory_type: "semantic" | "episodic" | "procedural" | "insight";
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
  category: string | null;
  /** Cosine similarity to the query (null without a vector of the same model). */
  similarity: number | null;
  keyword_rank: number | null;
  keyword_score: number | null;
  keyword_coverage: number | null;
  vector_rank: number | null;
  graph_rank: number | null;
  graph_via: string | null;
  graph_edge: string | null;
  /** Fused relevance, 0..1 (what ranking multiplies by strength). */
  relevance: number;
}

/** Which signals found a memory, with their ranks: what each returned memory explains itself with. */
export interface Signals {
  keyword?: { rank: number; score: number; coverage: number };
  vector?: { rank: number; similarity: number };
  graph?: { rank: number; via: string; edge: string };
}

export function signalsOf(
  row: Pick<
    HybridRow,
    | "keyword_rank"
    | "keyword_score"
    | "keyword_coverage"
    | "vector_rank"
    | "similarity"
    | "graph_rank"
    | "graph_via"
    | "graph_edge"
  >,
): Signals {
  const out: Signals = {};
  if (row.keyword_rank != null) {
    out.keyword = {
      rank: row.keyword_rank,
      score: round(row.keyword_score ?? 0),
      coverage: round(row.keyword_coverage ?? 0),
    };
  }
  if (row.vector_rank != null) out.vector = { rank: row.vector_rank, similarity: round(row.similarity ?? 0) };
  if (row.graph_rank != null && row.graph_via) {
    out.graph = { rank: row.graph_rank, via: row.graph_via, edge: row.graph_edge ?? "related_to" };
  }
  return out;
}

const round = (x: number) => Math.round(x * 10_000) / 10_000;

/** What the search plan and the request steer: the same for every search (search/plan.ts steeringOf). */
export type SearchSteering = Pick<
  HybridSearchInput,
  | "mode"
  | "graphDepth"
  | "graphEdgeTypes"
  | "after"
  | "before"
  | "preferMemoryTypes"
  | "recencyWeight"
  | "keywordThreshold"
  | "asOf"
  | "entityTerms"
  | "graphEpisodes"
  | "complexity"
>;

/** The steering's named arguments, which public.hybrid_search and public.query_memories both take. */
export function steeringArgs(q: Sql, s: SearchSteering) {
  return q`
      search_mode => ${s.mode ?? "hybrid"},
      graph_depth => ${s.graphDepth ?? 1},
      graph_edge_types => ${s.graphEdgeTypes ? [...s.graphEdgeTypes] : null}::text[],
      filter_after => ${s.after ?? null}::timestamptz,
      filter_before => ${s.before ?? null}::timestamptz,
      prefer_memory_types => ${s.preferMemoryTypes ? [...s.preferMemoryTypes] : null}::text[],
      recency_weight => ${s.recencyWeight ?? 0},
      keyword_threshold => ${s.keywordThreshold ?? null}::float8,
      as_of => ${asOfValue(q, s.asOf)},
      entity_terms => ${s.entityTerms && s.entityTerms.length > 0 ? [...s.entityTerms] : null}::text[],
      graph_episodes => ${s.graphEpisodes ?? false},
      query_complexity => ${s.complexity ?? null}::text`;
}

/** public.hybrid_search's named arguments for this input (public.retrieve_for_turn takes the same). */
export function hybridSearchArgs(q: Sql, input: HybridSearchInput) {
  const vector = input.vector ? toVectorLiteral(input.vector) : null;
  return q`
      query_text => ${input.queryText},
      query_embedding => ${vector}::extensions.vector,
      match_namespaces => ${[...input.scopes]}::text[],
      match_count => ${input.limit},
      similarity_threshold => ${input.threshold},
      match_embedding_model => ${input.embeddingModel},
      match_owner => ${input.ownerId}::uuid,
      filter_memory_types => ${input.memoryTypes ? [...input.memoryTypes] : null}::text[],
      filter_categories => ${input.categories ? [...input.categories] : null}::text[],
      ${steeringArgs(q, input)}`;
}

/**
 * The service's own searches (dedup's neighbours, the contradiction check, consolidation's pairs,
 * living context): the text is searched for what it says (search/exclusions.ts literalText, `java
 * -jar` finds `jar`) unless it is a person's message, whose `-exclusions` the search honours.
 */
export async function hybridSearch(
  tx: Tx,
  input: HybridSearchInput & { readsExclusions?: boolean },
): Promise<HybridRow[]> {
  const queryText = input.readsExclusions ? input.queryText : literalText(input.queryText);
  return await tx<HybridRow[]>`select * from public.hybrid_search(${
    hybridSearchArgs(tx as unknown as Sql, { ...input, queryText })
  })`;
}

export interface FusionWeights {
  keyword: number;
  vector: number;
  graph: number;
  rrf_k: number;
}
