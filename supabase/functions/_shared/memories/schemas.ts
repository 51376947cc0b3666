// Request schemas of the `memory` function. They are the API's documentation and the SDK's types
// (exported as-is), so every object is .strict(): an unknown field is a 400, never silently ignored.
// Query strings arrive as text; the *Query schemas coerce them.
import { z } from "zod";
import {
  agentName,
  asOf,
  categoryName,
  content,
  importance,
  intWithin,
  memoryType,
  metadata,
  namespace,
  priority,
  projectName,
  queryInt,
  segment,
  sessionId,
  source,
  storableText,
  storedMemoryType,
  threadId,
  withoutControlCharacters,
} from "../schemas.ts";
import { SCOPE_NEEDS_PROJECT, scopeHasProject, writeScope } from "../scopes.ts";
import { entityType } from "../entities.ts";
import { nameText } from "../name-form.ts";

/** Hard caps on list/history/weak pages and stats' namespaces: one request's work and response bounded. */
export const MAX_PAGE_LIMIT = 100;
export const MAX_HISTORY_LIMIT = 200;
export const MAX_TOP_NAMESPACES = 100;

/** POST /memory/remember: a fact the user stated ("remember that …"). */
export const RememberRequest = z
  .object({
    content,
    /**
     * Full namespace, in the global, user or project scope. Without it: `<root>/project/<project>/notes`
     * with `project`, `<root>/global/notes` with `scope: "global"`, else `<root>/user/preferences`.
     */
    namespace: namespace.optional(),
    project: projectName.optional(),
    /** Where the memory goes without a namespace: "project" (needs project), "user" or "global". */
    scope: writeScope.optional(),
    memory_type: memoryType.default("semantic"),
    importance: importance.optional(),
    metadata: metadata.optional(),
    session_id: sessionId.optional(),
    /** Revision thread whose delta header shows this change; default 'default'. */
    thread_id: threadId.optional(),
  })
  .strict()
  .refine((b) => !(b.namespace && b.project), {
    message: "give either namespace or project, not both",
    path: ["project"],
  })
  .refine((b) => !(b.namespace && b.scope), { message: "give either namespace or scope, not both", path: ["scope"] })
  .refine(scopeHasProject, SCOPE_NEEDS_PROJECT);
export type RememberRequest = z.infer<typeof RememberRequest>;

/** POST /memory/{id}/correct: the user corrects a memory; the new one supersedes it. */
export const CorrectRequest = z
  .object({
    content,
    reason: storableText(z.string().trim().min(1).max(500)).optional(),
    session_id: sessionId.optional(),
    thread_id: threadId.optional(),
  })
  .strict();
export type CorrectRequest = z.infer<typeof CorrectRequest>;

/** POST /memory/{id}/forget: soft delete (purged after the grace period unless restored). */
export const ForgetRequest = z
  .object({
    reason: storableText(z.string().trim().min(1).max(500)).optional(),
    thread_id: threadId.optional(),
  })
  .strict();
export type ForgetRequest = z.infer<typeof ForgetRequest>;

/** POST /memory/{id}/restore, /pin, /unpin, /confirm: the body is optional. */
export const LifecycleRequest = z.object({ thread_id: threadId.optional() }).strict();
export type LifecycleRequest = z.infer<typeof LifecycleRequest>;

const booleanText = z.enum(["true", "false"]).transform((v) => v === "true");
/**
 * Opaque: the next_cursor of the previous page. Any text is read by cursor.ts, which answers
 * `invalid_cursor` for what is not one, empty or too long included (they were `invalid_request`
 * where "abc" was `invalid_cursor`).
 */
const pageCursor = z.string().optional();
/** A namespace or a leading part of one (in NFC), matched segment by segment (`devai/project/a` never matches `devai/project/ab`). */
export const namespacePrefix = nameText()
  .max(256)
  .transform((s) => s.replace(/\/+$/, ""))
  .refine((s) => {
    const parts = s.split("/");
    return parts.length >= 1 && parts.length <= 8 && parts.every((p) => segment.safeParse(p).success);
  }, "namespace_prefix must be 1-8 '/'-separated segments of letters, digits and . _ % + @ ~ -");

/** GET /memory: filters and keyset pagination (created_at desc, id desc). */
export const ListQuery = z
  .object({
    namespace_prefix: namespacePrefix.optional(),
    /** The project's scope (`<root>/project/<project>/`); with namespace_prefix, both apply. */
    project: projectName.optional(),
    memory_type: storedMemoryType.optional(),
    /** Default 'active': forgotten memories are listed only when asked for ('soft_deleted' or 'all'). */
    state: z.enum(["active", "soft_deleted", "all"]).default("active"),
    is_valid: booleanText.optional(),
    pinned: booleanText.optional(),
    importance_min: queryInt(1, 5).optional(),
    priority: priority.optional(),
    source: source.optional(),
    category: categoryName.optional(),
    limit: queryInt(1, MAX_PAGE_LIMIT, 20),
    cursor: pageCursor,
    /** The memories held at this instant, as they were then (docs/graph.md#as-of). */
    as_of: asOf.optional(),
  })
  .strict()
  .refine((q) => !q.as_of || (q.is_valid === undefined && q.state === "active"), {
    message: "as_of lists what was held at that instant: state and is_valid do not apply",
    path: ["as_of"],
  });
export type ListQuery = z.infer<typeof ListQuery>;

/** GET /memory/entities: the tenant's entities, optionally matching `q` (plain text, never a pattern). */
export const EntityListQuery = z
  .object({
    /** Matched by name or alias key (case and punctuation ignored: exact, then prefix, then contained) or in the summary's words. */
    q: withoutControlCharacters(nameText().trim().min(1).max(200)).optional(),
    type: entityType.optional(),
    limit: queryInt(1, MAX_PAGE_LIMIT, 20),
    cursor: pageCursor, // the listing by mentions only (without q): the next_cursor of its previous page
  })
  .strict();
export type EntityListQuery = z.infer<typeof EntityListQuery>;

/** POST /memory/sessions/{session_id}/end: the body is optional and has no fields. */
export const EndSessionRequest = z.object({}).strict();

/** GET /memory/{id}: the memory now, or as it was at as_of. */
export const MemoryQuery = z.object({ as_of: asOf.optional() }).strict();
export type MemoryQuery = z.infer<typeof MemoryQuery>;

/** For GET routes without parameters: a parameter there (an explain `as_of`) would be silently ignored. */
export const NoQuery = z.object({}).strict();
/** GET /memory/{id}/history: a page of its audit rows, newest first; cursor as ListQuery's. */
export const HistoryQuery = z.object({ limit: queryInt(1, MAX_HISTORY_LIMIT, 50), cursor: pageCursor }).strict();
export type HistoryQuery = z.infer<typeof HistoryQuery>;

/** GET /memory/weak */
export const WeakQuery = z.object({ limit: queryInt(1, MAX_PAGE_LIMIT, 20) }).strict();
export type WeakQuery = z.infer<typeof WeakQuery>;

/** GET /memory/stats */
export const StatsQuery = z.object({ top_namespaces: queryInt(1, MAX_TOP_NAMESPACES, 20) }).strict();
export type StatsQuery = z.infer<typeof StatsQuery>;

/**
 * GET /memory/export. json: memories (no embeddings) + relations + history. markdown: one Markdown
 * file with YAML front matter per memory, as a JSON object { files: [{ path, content }] } (write
 * them to disk as they are), or, with `Accept: application/x-tar`, as a tar archive of the files.
 */
export const ExportQuery = z
  .object({
    format: z.enum(["json", "markdown"]).default("json"),
  })
  .strict();
export type ExportQuery = z.infer<typeof ExportQuery>;

/** PUT /memory/categories/{name}: create a category, or change the fields given (service role). */
export const CategoryUpsert = z
  .object({
    /** all: memory.query returns its memories without the similarity threshold; rag: by similarity (default). */
    context: z.enum(["all", "rag"]).optional(),
    /** At most this many memories of the category per query; null: no cap beyond top_k. */
    rag_length: intWithin(1, 1000).nullable().optional(),
  })
  .strict();
export type CategoryUpsert = z.infer<typeof CategoryUpsert>;

/** PUT /memory/agents/{agent}: the categories the agent may read through memory.query (replaces its list). */
export const AgentUpsert = z
  .object({ categories: z.array(categoryName).min(1).max(64) })
  .strict();
export type AgentUpsert = z.infer<typeof AgentUpsert>;

export const AGENT_TOKEN_LABEL_MAX = 200; // a label's characters, as the column's check (…_label_length)
/** POST /memory/agent-tokens: a long-lived token for one coding agent (docs/auth.md#agent-tokens). */
export const AgentTokenRequest = z
  .object({
    /** The agent it acts as: its memory.query allowlist applies (a configured agent). */
    agent: agentName,
    /** What it is for, to tell tokens apart ("Claude Code on my laptop"). */
    label: storableText(z.string().trim().min(1).max(AGENT_TOKEN_LABEL_MAX)).optional(),
    /** Days until it stops working; none: until revoked. */
    expires_in_days: intWithin(1, 3650).optional(),
  })
  .strict();
export type AgentTokenRequest = z.infer<typeof AgentTokenRequest>;

/** A memory as every route returns it (no embedding, no tsvector). */
export interface Memory {
  id: string;
  content: string;
  memory_type: "semantic" | "episodic" | "procedural" | "insight";
  namespace: string;
  priority: "highest" | "high" | "medium" | "low";
  source: string | null;
  strength: number;
  base_strength: number;
  access_count: number;
  last_accessed_at: string;
  session_id: string | null;
  is_valid: boolean;
  superseded_by: string | null;
  created_at: string;
  updated_at: string;
  /** When the fact started to hold (an episode: when the message was sent). */
  valid_from: string;
  /** When it stopped holding (superseded or contradicted); null while it holds. */
  valid_until: string | null;
  importance: number;
  pinned: boolean;
  state: "active" | "soft_deleted";
  purge_at: string | null;
  embedding_model: string | null;
  metadata: Record<string, unknown>;
  content_hash: string;
}

export interface HistoryEntry {
  id: string;
  memory_id: string;
  event:
    | "ADD"
    | "UPDATE"
    | "DELETE"
    | "MERGE"
    | "LINK"
    | "DECAY"
    | "TTL"
    | "RESTORE"
    | "PURGE"
    | "PIN"
    | "UNPIN"
    | "CONFIRM"
    | "PROPOSE"
    | "ACCEPT"
    | "REJECT"
    | "LAPSE";
  old_ref: string | null;
  new_ref: string | null;
  actor: string | null;
  old_content: string | null;
  new_content: string | null;
  meta: Record<string, unknown>;
  ts: string;
}

export interface Relation {
  id: string;
  from_id: string;
  to_id: string;
  relation_type: "related_to" | "supersedes" | "derived_from" | "contradicts" | "temporal" | "causal" | "entity";
  strength: number;
  confidence: number;
  evidence: Record<string, unknown>[];
  valid_from: string;
  valid_until: string | null;
  created_at: string;
}

export interface RememberResponse {
  created: boolean;
  memory: Memory;
  /** The project whose scope holds it (`devai/project/acme~web/…` is `acme/web`), null in the user or global scope. */
  project: string | null;
}
export interface ListResponse {
  memories: Memory[];
  next_cursor: string | null;
}
/** created false: a live memory said the corrected text already; it is `memory` and supersedes the old one. */
export type CorrectResponse = { created: boolean; memory: Memory; superseded: Memory };
export interface LifecycleResponse {
  /** false when the memory was already in the requested state (the call is idempotent). */
  changed: boolean;
  memory: Memory;
}
export interface MarkdownFile {
  path: string;
  content: string;
}
