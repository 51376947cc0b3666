// Request and response schemas of memory-retrieve, exported for the SDK and the README's JSON
// Schema. Two modes, chosen by path:
//   POST /memory-retrieve        retrieval before a turn: the `## Relevant Memories` block
//   POST /memory-retrieve/query  memory.query (seed 001 §6): agent-scoped, category allowlists
// Both bodies are strict: an unknown field is a 400, so a typo (`budget` for `budget_tokens`)
// is reported instead of silently ignored.
import { z } from "zod";
import {
  agentName,
  asOf,
  categoryName,
  freeText,
  importance,
  intWithin,
  isoInstant,
  priority,
  projectName,
  storedMemoryType,
  threadId,
  uuid,
  withoutControlCharacters,
} from "../schemas.ts";
import { INTENTS } from "../search/intent.ts";
import { SEARCH_MODES } from "../search/hybrid.ts";
import { TIME_FORMS } from "../search/time-window.ts";
import { LineageSignals } from "../context/schemas.ts";

/** Largest budget a caller may ask for; the block goes into a system prompt. */
export const MAX_BUDGET_TOKENS = 32_000;
export const MAX_TOP_K = 50;
/** memory.query's default top_k: on-demand recall wants a few bullets (seed 001 §11). */
export const QUERY_DEFAULT_TOP_K = 5;

// Free text from the conversation (never stored, so right-to-left marks in it are fine).
const text = freeText;

const budgetTokens = intWithin(1, MAX_BUDGET_TOKENS);
const topK = intWithin(1, MAX_TOP_K);
const threshold = z.number().min(0).max(1);

/** A time for after / before, resolved by search/plan.ts; an empty or overlong one names the forms too. */
const timeValue = z.string().min(1, `use ${TIME_FORMS}`).max(40, `use ${TIME_FORMS}`);

/** What both retrieval modes accept to steer the hybrid search (docs/retrieval.md). */
const searchControls = {
  /** hybrid (default): keyword + vector + graph; vector or keyword alone, for debugging and evaluation. */
  mode: z.enum(SEARCH_MODES).optional(),
  /** Time window: ISO date/date-time, today, yesterday, last_week, last_month, last_N_days (resolved against now). */
  after: timeValue.optional(),
  before: timeValue.optional(),
  /** The request's time for relative windows (default: the server's clock); an ISO date-time. */
  now: z.iso.datetime({ offset: true }).optional(),
  /** Overrides the intent the query is classified as. */
  intent: z.enum(INTENTS).optional(),
  /** Hops over memory relations from the best hits (0: no graph signal); default by complexity. */
  graph_depth: intWithin(0, 4).optional(),
  /** Keyword floor: share of the query's best possible keyword score (default the setting keyword_min_coverage). */
  keyword_threshold: z.number().min(0).max(1).optional(),
  /**
   * Answer from what the memory held at this instant (docs/graph.md#as-of). Nothing is reinforced
   * and no related bullets are added: that is for the live turn.
   */
  as_of: asOf.optional(),
  /**
   * Code lineage (docs/context.md#code-lineage): the branch checked out, what is merged into it,
   * files deleted or renamed. Another branch's unmerged notes and memories citing a deleted or
   * renamed file are left out (listed in `excluded`); without it the default branch is assumed.
   */
  signals: LineageSignals.optional(),
};

export const RetrieveRequest = z
  .object({
    /** The new user message. */
    message: text(20_000),
    /** Project whose scope `<root>/project/<project>/` is searched besides global and user. */
    project: projectName.optional(),
    /** Free text about the current project, appended to the query (seed: message + project context). */
    project_context: text(4_000).optional(),
    budget_tokens: budgetTokens.optional(),
    /** The revision the caller last saw for thread_id; with it the block starts with a delta header. */
    since_revision: z.number().int().min(0).optional(),
    thread_id: threadId.optional(),
    top_k: topK.optional(),
    /** Cosine similarity floor; default per embedding model (thresholdsFor). */
    threshold: threshold.optional(),
    ...searchControls,
  })
  .strict();
export type RetrieveRequest = z.infer<typeof RetrieveRequest>;

export { agentName, categoryName };

/** memory.query's updated_after / updated_before: an isoInstant; null means "no bound" (the seed's example sends null). */
const instant = isoInstant.nullable();
// Control characters refused as in the query (U+0000 reached the database, whose error named no
// field); not trimmed: a filter matches the stored value exactly.
const metaValue = withoutControlCharacters(z.string().min(1).max(200)).nullable();

export const QueryFilters = z
  .object({
    user_id: metaValue.optional(),
    agent_id: metaValue.optional(),
    run_id: metaValue.optional(),
    actor_id: metaValue.optional(),
    role: z.enum(["user", "assistant", "system", "tool"]).nullable().optional(),
    category: categoryName.nullable().optional(),
    pinned: z.boolean().nullable().optional(),
    importance_min: importance.nullable().optional(),
    importance_max: importance.nullable().optional(),
    updated_after: instant.optional(),
    updated_before: instant.optional(),
  })
  .strict()
  .refine((f) => f.importance_min == null || f.importance_max == null || f.importance_min <= f.importance_max, {
    message: "importance_min must not exceed importance_max",
    path: ["importance_min"],
  })
  .refine((f) => !f.updated_after || !f.updated_before || Date.parse(f.updated_after) <= Date.parse(f.updated_before), {
    message: "updated_after must not be later than updated_before",
    path: ["updated_after"],
  });
export type QueryFilters = z.infer<typeof QueryFilters>;

export const QueryRequest = z
  .object({
    agent: agentName,
    query: text(8_000),
    /** Categories to search; default: every category the agent is allowed. */
    categories: z.array(categoryName).min(1).max(32).optional(),
    filters: QueryFilters.optional(),
    top_k: topK.optional(),
    return: z.enum(["bullets", "full"]).default("bullets"),
    budget_tokens: budgetTokens.optional(),
    threshold: threshold.optional(),
    project: projectName.optional(),
    thread_id: threadId.optional(),
    ...searchControls,
  })
  .strict();
export type QueryRequest = z.infer<typeof QueryRequest>;

/** Which signals found a memory (docs/retrieval.md#explain). */
export const Signals = z.object({
  keyword: z.object({ rank: z.number().int(), score: z.number(), coverage: z.number() }).optional(),
  vector: z.object({ rank: z.number().int(), similarity: z.number() }).optional(),
  graph: z.object({ rank: z.number().int(), via: uuid, edge: z.string() }).optional(),
});

/** How the search ran: what the query was read as, and the fusion weights used. */
export const SearchInfo = z.object({
  mode: z.enum(SEARCH_MODES),
  intent: z.enum(INTENTS),
  intent_by: z.enum(["keyword", "exemplar", "default", "request"]),
  complexity: z.enum(["simple", "complex"]),
  top_k: z.number().int(),
  budget_tokens: z.number().int(),
  graph_depth: z.number().int(),
  weights: z.object({ keyword: z.number(), vector: z.number(), graph: z.number(), rrf_k: z.number() }),
  time_window: z.object({
    after: z.string().nullable(),
    before: z.string().nullable(),
    from: z.enum(["request", "query_text"]),
  }).nullable(),
});
export type SearchInfo = z.infer<typeof SearchInfo>;

export const RetrievedMemory = z.object({
  id: uuid,
  content: z.string(),
  memory_type: storedMemoryType,
  namespace: z.string(),
  /** Cosine similarity to the query; null when the memory has no vector of the configured model. */
  similarity: z.number().nullable(),
  /** The fused relevance (0..1) of the signals that found it; ranking multiplies it by strength. */
  relevance: z.number(),
  signals: Signals,
  strength: z.number(),
  score: z.number(),
  /** True when the memory is in the block (and was reinforced); false when the budget left it out. */
  injected: z.boolean(),
  /** True when the block shows it cut short at a word boundary (…): the best memory alone did not fit. */
  shortened: z.literal(true).optional(),
});
export type RetrievedMemory = z.infer<typeof RetrievedMemory>;

/** A memory left out because of code lineage (docs/context.md#code-lineage). */
export const ExcludedMemory = z.object({
  id: uuid,
  reason: z.enum(["unmerged_branch", "stale_file"]),
  branch: z.string().optional(),
  stale: z.discriminatedUnion("reason", [
    z.object({ file: z.string(), reason: z.literal("deleted") }),
    z.object({ file: z.string(), reason: z.literal("renamed"), to: z.string() }),
  ]).optional(),
});

export const RelatedBullet = z.object({ id: uuid, anchor_id: uuid, content: z.string() });

export const RetrieveResponse = z.object({
  /** The `## Relevant Memories` block for the system prompt; "" when there is nothing to inject. */
  block: z.string(),
  memories: z.array(RetrievedMemory),
  /** Related memories (seed 001 §2) shown as sub-bullets in the block; not reinforced. */
  related: z.array(RelatedBullet),
  /** Exact tokens of `block` (gpt-tokenizer); never more than budget_tokens. */
  token_count: z.number().int(),
  /** Memories above the threshold that did not fit in the budget. */
  truncated_count: z.number().int(),
  /** The thread's current revision: send it back as since_revision next turn. */
  revision: z.number().int(),
  embedding_model: z.string(),
  search: SearchInfo,
  /** Found, but left out: another branch's unmerged notes, memories citing deleted or renamed files. */
  excluded: z.array(ExcludedMemory),
});
export type RetrieveResponse = z.infer<typeof RetrieveResponse>;

export const QueryBullet = z.object({ id: uuid, category: z.string(), text: z.string() });

/** A memory.query result with return: "full": a retrieved memory's fields plus its category and record. */
export const QueryFullResult = RetrievedMemory.omit({ injected: true }).extend({
  category: z.string(),
  priority: priority,
  importance: z.number().int(),
  pinned: z.boolean(),
  source: z.string().nullable(),
  metadata: z.record(z.string(), z.unknown()),
  session_id: z.string().nullable(),
  access_count: z.number().int(),
  last_accessed_at: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});

export const QueryResponse = z.object({
  agent: z.string(),
  return: z.enum(["bullets", "full"]),
  results: z.union([z.array(QueryBullet), z.array(QueryFullResult)]),
  /** Exact tokens of the returned texts joined by newlines (bullets: text; full: content). */
  token_count: z.number().int(),
  truncated_count: z.number().int(),
  embedding_model: z.string(),
  search: SearchInfo,
  excluded: z.array(ExcludedMemory),
  /** An empty answer only, when memories without a category are in scope: memory.query never serves them. */
  hint: z.string().optional(),
});
export type QueryResponse = z.infer<typeof QueryResponse>;
