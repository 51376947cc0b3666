// Request and response schemas of memory-retrieve, exported for the SDK and the README's JSON
// Schema. Two modes, chosen by path:
//   POST /memory-retrieve        retrieval before a turn: the `## Relevant Memories` block
//   POST /memory-retrieve/query  memory.query (seed 001 §6): agent-scoped, category allowlists
// Both bodies are strict: an unknown field is a 400, so a typo (`budget` for `budget_tokens`)
// is reported instead of silently ignored.
import { z } from "zod";
import { importance, memoryType, priority, projectName, threadId } from "../_shared/schemas.ts";
import { CONTROL_CHARACTERS } from "../_shared/unsafe-characters.ts";

/** Largest budget a caller may ask for; the block goes into a system prompt. */
export const MAX_BUDGET_TOKENS = 32_000;
export const MAX_TOP_K = 50;
/** memory.query's default top_k: on-demand recall wants a few bullets (seed 001 §11). */
export const QUERY_DEFAULT_TOP_K = 5;

// Free text from the conversation: newlines and tabs are fine, other control characters are not
// (the query is never stored, so right-to-left marks in it are fine).
const text = (max: number) =>
  z.string().trim().min(1).max(max).refine((s) => !CONTROL_CHARACTERS.test(s), "control characters are not allowed");

const budgetTokens = z.number().int().min(1).max(MAX_BUDGET_TOKENS);
const topK = z.number().int().min(1).max(MAX_TOP_K);
const threshold = z.number().min(0).max(1);

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
  })
  .strict();
export type RetrieveRequest = z.infer<typeof RetrieveRequest>;

export const agentName = z.string().regex(/^[a-z][a-z0-9_-]{0,63}$/, "lowercase letters, digits, _ or -");
export const categoryName = z.string().regex(/^[a-z][a-z0-9_]{0,63}$/, "lowercase letters, digits or _");

/**
 * An ISO date or date-time from year 0001 on (Postgres has no year 0: "0000-01-01" was a 500);
 * null means "no bound" (the seed's example sends null).
 */
const instant = z.union([z.iso.datetime({ offset: true }), z.iso.date()])
  .refine((s) => Number(s.slice(0, 4)) >= 1, "dates start at 0001-01-01")
  .nullable();
const metaValue = z.string().min(1).max(200).nullable();

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
  })
  .strict();
export type QueryRequest = z.infer<typeof QueryRequest>;

export const RetrievedMemory = z.object({
  id: z.uuid(),
  content: z.string(),
  memory_type: memoryType,
  namespace: z.string(),
  similarity: z.number(),
  strength: z.number(),
  score: z.number(),
  /** True when the memory is in the block (and was reinforced); false when the budget left it out. */
  injected: z.boolean(),
});
export type RetrievedMemory = z.infer<typeof RetrievedMemory>;

export const RelatedBullet = z.object({ id: z.uuid(), anchor_id: z.uuid(), content: z.string() });

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
});
export type RetrieveResponse = z.infer<typeof RetrieveResponse>;

export const QueryBullet = z.object({ id: z.uuid(), category: z.string(), text: z.string() });

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
});
export type QueryResponse = z.infer<typeof QueryResponse>;
