// Request and response types of the devai-memory edge functions, written out as plain TypeScript
// so the package needs nothing at run time or for its types. They follow the functions' zod
// schemas and response interfaces; a test in the repository (tests/sdk_types.test.ts) fails the
// build when either side changes without the other.

// ---------------------------------------------------------------------------------------------
// Shared shapes

export type MemoryType = "semantic" | "episodic" | "procedural";
/** What a stored memory may be: a writer's type, or an insight (written by the nightly insight job). */
export type StoredMemoryType = MemoryType | "insight";
export type Priority = "highest" | "high" | "medium" | "low";
export type Source =
  | "user_stated"
  | "error_resolution"
  | "pattern"
  | "discovery"
  | "correction"
  | "compaction"
  | "import"
  /** A raw episode (POST memory/episodes). */
  | "conversation";
/** Where a memory goes without a namespace of its own (README "Scopes"); global only when asked. */
export type WriteScope = "project" | "user" | "global";

/** Metadata a memory carries; `category` must be a configured category (listCategories). */
export interface MemoryMetadata {
  agent_id?: string;
  run_id?: string;
  actor_id?: string;
  user_id?: string;
  role?: "user" | "assistant" | "system" | "tool";
  category?: string;
  keywords?: string[];
  /** Code lineage: where the memory came from (docs/context.md#code-lineage). */
  repo?: string;
  branch?: string;
  commit?: string;
  /** Files it is about; context assembly finds it when one of them is open. */
  files?: string[];
}

/** Repository, branch and commit a request's memories come from (memory-extract, memory-dedup). */
export interface CodeOrigin {
  repo?: string;
  branch?: string;
  commit?: string;
}

/** What the client knows about the repository: whose notes are facts on its branch (docs/context.md#code-lineage). */
export interface LineageSignals {
  repo?: string;
  /** The branch checked out; default: the default branch. */
  branch?: string;
  commit?: string;
  /** Default "main" (and "master"). */
  default_branch?: string;
  /** Branches merged into the current one: their memories are project knowledge here. */
  merged_branches?: string[];
  /** Commits in the current branch's history: memories recorded at them are merged. */
  ancestor_commits?: string[];
  /** A memory citing one of these is flagged stale, not injected. */
  deleted_files?: string[];
  renamed_files?: { from: string; to: string }[];
}

/** A memory left out because of code lineage. */
export interface ExcludedMemory {
  id: string;
  reason: "unmerged_branch" | "stale_file";
  branch?: string;
  stale?: { file: string; reason: "deleted" } | { file: string; reason: "renamed"; to: string };
}

/** A memory as every route returns it (no embedding). */
export interface Memory {
  id: string;
  content: string;
  memory_type: StoredMemoryType;
  namespace: string;
  priority: Priority;
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

export type HistoryEvent =
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

export interface HistoryEntry {
  id: string;
  memory_id: string;
  event: HistoryEvent;
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

// ---------------------------------------------------------------------------------------------
// memory-retrieve

export interface RetrieveInput extends SearchControls {
  /** The new user message. */
  message: string;
  /** Its scope `<root>/project/<project>/` is searched besides global and user (`acme/web` works). */
  project?: string;
  /** Free text about the current project, appended to the query. */
  project_context?: string;
  /** Default by the query's complexity (1000 simple, 3000 complex); the block never exceeds it. */
  budget_tokens?: number;
  /** The revision you last saw for thread_id: the block then starts with what changed since. */
  since_revision?: number;
  thread_id?: string;
  top_k?: number;
  threshold?: number;
}

/** What both retrieval modes accept to steer the hybrid search (docs/retrieval.md). */
export interface SearchControls {
  /** hybrid (default): keyword + vector + graph; vector or keyword alone, for debugging and evaluation. */
  mode?: SearchMode;
  /** ISO date/date-time, today, yesterday, last_week, last_month or last_N_days. */
  after?: string;
  before?: string;
  /** The request's time for relative windows (ISO date-time); default the server's clock. */
  now?: string;
  intent?: Intent;
  /** Hops over memory relations from the best hits (0-4; 0: no graph signal). */
  graph_depth?: number;
  /** Keyword floor: share of the query's best possible keyword score (0-1). */
  keyword_threshold?: number;
  /** ISO date-time with offset, or a date (its midnight UTC): answer from what memory held then. */
  as_of?: string;
  /** Code lineage: another branch's unmerged notes and memories citing deleted files are left out (`excluded`). */
  signals?: LineageSignals;
}

export type SearchMode = "hybrid" | "vector" | "keyword";
export type Intent = "why" | "when" | "who" | "what" | "how" | "general";

/** Which signals found a memory. */
export interface Signals {
  keyword?: { rank: number; score: number; coverage: number };
  vector?: { rank: number; similarity: number };
  graph?: { rank: number; via: string; edge: string };
}

/** How the search ran: what the query was read as, and the fusion weights used. */
export interface SearchInfo {
  mode: SearchMode;
  intent: Intent;
  intent_by: "keyword" | "exemplar" | "default" | "request";
  complexity: "simple" | "complex";
  top_k: number;
  budget_tokens: number;
  graph_depth: number;
  weights: { keyword: number; vector: number; graph: number; rrf_k: number };
  time_window: { after: string | null; before: string | null; from: "request" | "query_text" } | null;
}

export interface RetrievedMemory {
  id: string;
  content: string;
  memory_type: StoredMemoryType;
  namespace: string;
  /** Cosine similarity to the query; null when the memory has no vector of the configured model. */
  similarity: number | null;
  /** Fused relevance (0..1) of the signals that found it; ranking multiplies it by strength. */
  relevance: number;
  signals: Signals;
  strength: number;
  score: number;
  /** In the block (and reinforced); false when the budget left it out. */
  injected: boolean;
  /** The block shows it cut short at a word boundary (…): the best memory alone did not fit. */
  shortened?: true;
}

export interface RetrieveResponse {
  /** The `## Relevant Memories` block for the system prompt; "" when there is nothing to inject. */
  block: string;
  memories: RetrievedMemory[];
  related: { id: string; anchor_id: string; content: string }[];
  token_count: number;
  truncated_count: number;
  /** The thread's current revision: send it back as since_revision next turn. */
  revision: number;
  embedding_model: string;
  search: SearchInfo;
  /** Found but left out: another branch's unmerged notes, memories citing deleted or renamed files. */
  excluded: ExcludedMemory[];
}

export interface QueryFilters {
  user_id?: string | null;
  agent_id?: string | null;
  run_id?: string | null;
  actor_id?: string | null;
  role?: "user" | "assistant" | "system" | "tool" | null;
  category?: string | null;
  pinned?: boolean | null;
  importance_min?: number | null;
  importance_max?: number | null;
  /** ISO date or date-time. */
  updated_after?: string | null;
  updated_before?: string | null;
}

export interface QueryInput extends SearchControls {
  /** An agent with an allowlist (listAgents; coder, reviewer, planner, tester, ops by default). */
  agent: string;
  query: string;
  /** Default: every category the agent may read. */
  categories?: string[];
  filters?: QueryFilters;
  top_k?: number;
  /** Default "bullets". */
  return?: "bullets" | "full";
  budget_tokens?: number;
  threshold?: number;
  project?: string;
  thread_id?: string;
}

export interface QueryBullet {
  id: string;
  category: string;
  text: string;
}

export interface QueryFullResult extends Omit<RetrievedMemory, "injected" | "shortened"> {
  category: string;
  priority: Priority;
  importance: number;
  pinned: boolean;
  source: string | null;
  metadata: Record<string, unknown>;
  session_id: string | null;
  access_count: number;
  last_accessed_at: string;
  created_at: string;
  updated_at: string;
}

export interface QueryResponse {
  agent: string;
  return: "bullets" | "full";
  results: QueryBullet[] | QueryFullResult[];
  token_count: number;
  truncated_count: number;
  embedding_model: string;
  search: SearchInfo;
  excluded: ExcludedMemory[];
  /** An empty answer only, when memories without a category are in scope: memory.query never serves them. */
  hint?: string;
}

// ---------------------------------------------------------------------------------------------
// memory

export interface RememberInput {
  content: string;
  /** A namespace in the global, user or project scope; or give project / scope instead. */
  namespace?: string;
  project?: string;
  scope?: WriteScope;
  memory_type?: MemoryType;
  importance?: number;
  metadata?: MemoryMetadata;
  session_id?: string;
  thread_id?: string;
}

export interface RememberResponse {
  created: boolean;
  memory: Memory;
  /** The project whose scope holds it (`devai/project/acme~web/…` is `acme/web`), null in the user or global scope. */
  project: string | null;
}

export interface CorrectInput {
  content: string;
  reason?: string;
  session_id?: string;
  thread_id?: string;
}

export interface CorrectResponse {
  /** false (HTTP 200): a live memory in its scope already said the text; it is `memory` and replaces the corrected one. */
  created: boolean;
  memory: Memory;
  superseded: Memory;
}

export interface ForgetInput {
  reason?: string;
  thread_id?: string;
}

export interface LifecycleInput {
  thread_id?: string;
}

export interface LifecycleResponse {
  /** false when the memory was already in the requested state (the call is idempotent). */
  changed: boolean;
  memory: Memory;
}

export interface GetParams {
  /** ISO date-time, or a date (its midnight UTC): the memory as it was then (content, validity, supersede from its history). */
  as_of?: string;
}

export interface GetResponse {
  /** With as_of: the memory as it was then. */
  memory: Memory;
  as_of?: string;
  /** With as_of: whether the memory held then (recorded, not superseded, contradicted or forgotten). */
  held?: boolean;
}

export interface ListParams {
  namespace_prefix?: string;
  project?: string;
  memory_type?: StoredMemoryType;
  state?: "active" | "soft_deleted" | "all";
  is_valid?: boolean | "true" | "false";
  pinned?: boolean | "true" | "false";
  importance_min?: number | string;
  priority?: Priority;
  source?: Source;
  category?: string;
  /** An integer 1-100, default 20 (a value outside: 400 invalid_request, the issue naming the field). */
  limit?: number | string;
  cursor?: string;
  /** ISO date-time, or a date (its midnight UTC): the memories held then, as they were (state and is_valid do not apply). */
  as_of?: string;
}

export interface ListResponse {
  memories: Memory[];
  next_cursor: string | null;
  as_of?: string;
}

export interface HistoryParams {
  /** An integer 1-200, default 50 (a value outside: 400 invalid_request, the issue naming the field). */
  limit?: number | string;
  /** The previous page's next_cursor (opaque). */
  cursor?: string;
}

export interface HistoryResponse {
  memory_id: string;
  /** The memory itself is gone (purged) and only its audit rows remain. */
  purged: boolean;
  history: HistoryEntry[];
  /** Pass as `cursor` for the next (older) page; null on the last page. */
  next_cursor: string | null;
}

export interface ChainLink {
  depth: number;
  memory: Memory;
}

export interface Explanation {
  memory: Memory;
  supersedes: ChainLink[];
  superseded_by: ChainLink[];
  current_id: string;
  relations: {
    id: string;
    relation_type: string;
    direction: "outgoing" | "incoming";
    strength: number;
    confidence: number;
    valid_from: string;
    valid_until: string | null;
    evidence: Record<string, unknown>[];
    created_at: string;
    other: Pick<Memory, "id" | "content" | "namespace" | "memory_type" | "is_valid" | "state">;
  }[];
  source: {
    source: string | null;
    session_id: string | null;
    created_at: string;
    actor: string | null;
    derived_from: string[];
    /** The episodes behind derived_from, in the order they were said. */
    episodes: SourceEpisode[];
  };
  entities: LinkedEntity[];
  history: {
    total: number;
    by_event: Record<string, number>;
    first_at: string | null;
    last_at: string | null;
    recent: { event: string; actor: string | null; ts: string }[];
  };
  decay: {
    protected: boolean;
    reason: "pinned" | "highest_priority" | "episode" | null;
    predicted_strength: number;
    days_until_prune: number | null;
  };
}

export interface SourceEpisode {
  id: string;
  session_id: string | null;
  seq: number | null;
  role: string | null;
  /** When the message was sent. */
  at: string;
  content: string;
  state: "active" | "soft_deleted";
  /** Confidence of the derived_from edge (rules 1, a model 0.8). */
  confidence: number;
}

export interface LinkedEntity {
  id: string;
  canonical_name: string;
  entity_type: string;
  mention: string;
  confidence: number;
  source: string;
}

// ---------------------------------------------------------------------------------------------
// graph: episodes, sessions, entities

export interface EpisodesInput {
  session_id: string;
  /** The project whose scope the session's episodes are filed under (default: the user scope). */
  project?: string;
  /** A new session id on a thread ends the thread's previous open session. */
  thread_id?: string;
  /** 1-50 messages; `at`: when it was sent (ISO date-time; default: when it arrives). */
  messages: { role: "user" | "assistant" | "system" | "tool"; content: string; at?: string }[];
}

export interface EpisodeBatchResult {
  session_id: string;
  stored: number;
  duplicates: number;
  /** id and seq null, dropped true: the message was nothing but a secret and was not stored. */
  episodes: { id: string | null; seq: number | null; role: string; duplicate: boolean; dropped?: true }[];
  /** inline: embedded in the request; queued: an embed job will (remote embedder); none: nothing new. */
  embedding: "inline" | "queued" | "none";
  embed_job_id: string | null;
  /** Sessions of the same thread this batch ended (their consolidation is queued). */
  ended_sessions: string[];
  /** Secrets replaced by [REDACTED:<kind>] in the stored messages; messages dropped as nothing but a secret. */
  redacted: number;
  dropped: number;
}

/** 202 from endSession: the session's consolidation job (one per session). */
export interface EndSessionResponse {
  session_id: string;
  /** False when the session had ended before (explicitly, by a new session on its thread, or idle). */
  ended_now: boolean;
  job_id: string | null;
  job_status: JobStatus | null;
  deduplicated: boolean;
}

export interface Entity {
  id: string;
  canonical_name: string;
  entity_type: string;
  aliases: string[];
  summary: string | null;
  mention_count: number;
  first_seen_at: string;
  last_seen_at: string;
  attributes: Record<string, unknown>;
  embedding_model: string | null;
  created_at: string;
  updated_at: string;
}

export interface EntityListParams {
  /** Name, alias, name prefix or summary words; plain text, never a pattern. */
  q?: string;
  type?: string;
  /** An integer 1-100, default 20 (a value outside: 400 invalid_request, the issue naming the field). */
  limit?: number | string;
  /** The listing by mentions only (without q): the next_cursor of its previous page. */
  cursor?: string;
}

export interface EntityListResponse {
  entities: (Entity & { matched: "name" | "alias" | "prefix" | "contains" | "summary" | null })[];
  /** Pass as `cursor` for the next page; null on the last page, and for a search (q). */
  next_cursor: string | null;
}

export interface EntityProfile {
  entity: Entity;
  facts: (Memory & { mention: string; link_confidence: number; link_source: string })[];
  timeline: {
    id: string;
    session_id: string | null;
    seq: number | null;
    role: string | null;
    at: string;
    content: string;
    mention: string;
  }[];
}

export interface WeakParams {
  /** An integer 1-100, default 20 (a value outside: 400 invalid_request, the issue naming the field). */
  limit?: number | string;
}

export interface WeakResponse {
  decay_per_day: number;
  prune_threshold: number;
  as_of: string;
  memories: {
    memory: Memory;
    predicted_strength: number;
    days_since_access: number;
    days_until_prune: number | null;
  }[];
}

export interface StatsParams {
  /** An integer 1-100, default 20 (a value outside: 400 invalid_request, the issue naming the field). */
  top_namespaces?: number | string;
}

export interface MemoryStats {
  total: number;
  by_memory_type: Record<string, number>;
  by_state: Record<string, number>;
  by_priority: Record<string, number>;
  by_source: Record<string, number>;
  by_embedding_model: Record<string, number>;
  validity: { valid: number; invalid: number; superseded: number };
  pinned: { pinned: number; unpinned: number };
  namespaces: { distinct: number; top: { namespace: string; count: number }[] };
  relations: { total: number; by_type: Record<string, number> };
  history: { total: number; by_event: Record<string, number> };
  /** Usage feedback (reportUsage); shares are null until there is something to divide by. */
  usage: {
    reports: number;
    retrieved: number;
    cited: number;
    memories_reported: number;
    never_cited: number;
    /** Cited memories context/predict had predicted (its answer), over those cited in sessions with predictions. */
    prediction_accuracy: number | null;
    /** Tokens of cited memories over tokens of all reported ones. */
    cited_token_share: number | null;
    injected_tokens: number;
    cited_tokens: number;
  };
  /** Valid, active memories (raw episodes aside) whose vector is not of the configured model: reindex(). */
  embeddings: { configured_model: string; to_reindex: number };
  redactions: { total: number; dropped: number; by_kind: Record<string, number>; by_writer: Record<string, number> };
  contradictions: { open: number; resolved: number };
  proposals: { pending: number };
}

export interface JsonExport {
  tenant_id: string;
  exported_at: string;
  format: "json";
  counts: { memories: number; soft_deleted: number; relations: number; history: number };
  memories: (Memory & { soft_deleted: boolean })[];
  relations: Relation[];
  history: HistoryEntry[];
}

export interface MarkdownFile {
  path: string;
  content: string;
}

export interface MarkdownExport {
  tenant_id: string;
  exported_at: string;
  format: "markdown";
  /** One Markdown file with YAML front matter per memory; write them to disk as they are. */
  files: MarkdownFile[];
}

export interface CategoryConfig {
  name: string;
  context: "all" | "rag";
  rag_length: number | null;
  kind: "system" | "custom";
  agents: string[];
}

export interface AgentConfig {
  agent: string;
  categories: string[];
}

// ---------------------------------------------------------------------------------------------
// Write path: memory-extract, memory-compact, memory-dedup

export interface ToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string; [k: string]: unknown };
  [k: string]: unknown;
}

type Content =
  | string
  | ({ type: "text"; text: string; [k: string]: unknown } | { type: string; [k: string]: unknown })[];

/** A chat message in OpenAI's format (unknown fields are kept). */
export type ChatMessage =
  | { role: "system" | "developer" | "user"; content: Content; name?: string; [k: string]: unknown }
  | { role: "assistant"; content?: Content | null; name?: string; tool_calls?: ToolCall[]; [k: string]: unknown }
  | { role: "tool"; content: Content; tool_call_id: string; [k: string]: unknown };

/** Where a session's transcript stands on the server: pass it as `after` to send only what follows. */
export interface TranscriptMark {
  count: number;
  digest: string;
}

export interface ExtractInput {
  session_id: string;
  /** The transcript so far, or (with `after`) only the messages that follow it. */
  messages: ChatMessage[];
  after?: TranscriptMark;
  project?: string;
  scope?: WriteScope;
  thread_id?: string;
  lineage?: CodeOrigin;
}

export type JobStatus = "queued" | "running" | "done" | "dead";

export interface QueuedJobResponse {
  job_id: string;
  status: JobStatus;
  /** Nothing new was enqueued; job_id is an existing job. */
  deduplicated: boolean;
}

export interface ExtractResponse extends QueuedJobResponse {
  new_messages: number;
  transcript: TranscriptMark;
  /** Messages dead jobs of the session held, queued again apart: a job per dead job (given up after max_tries jobs died). */
  retried?: { job_id: string; status: JobStatus; messages: number; tries: number; max_tries: number }[];
  /** job_id covers the transcript's end given up (its third job died): nothing of it is queued again. */
  given_up?: true;
}

export interface JobStatusResponse {
  job_id: string;
  kind: "extract" | "dedup";
  status: JobStatus;
  attempts: number;
  max_attempts: number;
  last_error: string | null;
  result: unknown;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
  /** An extract job's messages [start, end) of its session, how many jobs held them, and whether they were given up. */
  part?: { start: number; end: number; tries: number; given_up: boolean } | null;
}

export interface CompactInput {
  session_id: string;
  messages: ChatMessage[];
  context_window?: number;
  trigger_tokens?: number;
  target_chunk_tokens?: number;
  project?: string;
  scope?: WriteScope;
  thread_id?: string;
}

interface CompactResultBase {
  messages: ChatMessage[];
  tokens_before: number;
  tokens_after: number;
  trigger_tokens: number;
}

export type CompactResponse =
  | (CompactResultBase & { compacted: false })
  | (CompactResultBase & {
    compacted: true;
    summary: string;
    /** "llm", or "extractive" when no LLM is configured or it failed (llm_error says why). */
    summary_mode: string;
    llm_error?: string;
    compacted_messages: number;
    candidates_queued: number;
    /**
     * At the tenant's queue bound (job_queue_tenant_max) the compaction is answered and its candidates
     * are not queued: how many, why (queue_full), and when to try again (seconds).
     */
    candidates_refused?: { count: number; code: "queue_full"; message: string; retry_after: number };
    /** The first dedup job (null without candidates). */
    dedup_job_id: string | null;
    /** Every dedup job queued, 100 candidates each. */
    dedup_job_ids: string[];
  });

export interface Candidate {
  content: string;
  type: MemoryType;
  /** Kept when valid for the request; without one, the request's scope. */
  namespace?: string;
  source: "user_stated" | "correction" | "error_resolution" | "pattern" | "discovery" | "compaction";
  priority: Priority;
  importance: number;
  category?: string | null;
  /** Files it is about (code lineage). */
  files?: string[];
  /** Its compression levels (docs/context.md#compression-levels); made offline when absent. */
  summary?: string;
  compressed?: string;
  index_key?: string;
}

export interface DedupInput {
  candidates: Candidate[];
  session_id?: string;
  thread_id?: string;
  project?: string;
  scope?: WriteScope;
  lineage?: CodeOrigin;
}

export interface DedupResponse extends QueuedJobResponse {
  stats: {
    accepted: number;
    trimmed: number;
    rejected: number;
    reasons: Record<string, number>;
    over_cap: number;
    namespace_rewritten: number;
    duplicates_in_batch: number;
    demoted: number;
    category_dropped: number;
    /** Candidates that had characters stored text may not hold (control, bidi, invisible), removed. */
    unsafe_characters_removed: number;
    /** Secrets replaced by [REDACTED:<kind>], by kind; texts dropped as nothing but a secret (candidates, and a kept candidate's file paths and fields). */
    redacted: number;
    secrets_dropped: number;
    redacted_kinds: Record<string, number>;
  };
}

// ---------------------------------------------------------------------------------------------
// context (docs/context.md)

export type Activity = "debugging" | "feature" | "review" | "refactor" | "testing" | "docs" | "ops";
export type ContextTier = "critical" | "relevant" | "background" | "index";
export type CompressionLevel = "full" | "summary" | "compressed" | "index";

/** What is on the developer's screen, plus the lineage. */
export interface ContextSignals extends LineageSignals {
  current_file?: string;
  open_files?: string[];
  /** Errors on screen, newest first (at most 10). */
  recent_errors?: string[];
  activity?: Activity;
}

export interface AssembleInput {
  /** 200-32,000 tokens; default 8,000. */
  budget?: number;
  message?: string;
  project?: string;
  /** A fresh predictContext for this session is served; injections are recorded for reportUsage. */
  session_id?: string;
  thread_id?: string;
  signals?: ContextSignals;
}

export interface AssembledMemory {
  id: string;
  tier: ContextTier;
  level: CompressionLevel;
  tokens: number;
  tag?: string;
  index_key: string;
  score: number;
  kinds: string[];
  lineage: "project" | "current_branch" | "merged" | "unmerged";
  compression: "llm" | "rules" | "mixed";
  shortened?: true;
  stale?: { file: string; reason: "deleted" } | { file: string; reason: "renamed"; to: string };
}

export interface TierReport {
  budget: number;
  token_count: number;
  memories: number;
}

export type PrefetchStatus = "fresh" | "stale" | "expired";

export interface AssembleResponse {
  /** The context for the system prompt; never more than budget tokens. */
  context: string;
  token_count: number;
  budget: number;
  activity: string | null;
  tiers: Record<ContextTier, TierReport>;
  memories: AssembledMemory[];
  excluded: ExcludedMemory[];
  /** Other memories found and left out (fit nowhere, or the other side of a contradiction not shown). */
  omitted: number;
  prefetch: { status: "none" | "miss" | "partial" | PrefetchStatus; signals: Record<string, PrefetchStatus | "miss"> };
}

export interface PredictInput {
  file_opened?: string;
  branch?: string;
  error?: string;
  project?: string;
  /** Cache the prediction for the session's next assembleContext. */
  session_id?: string;
  /** An integer 1-50, default 20 (a value outside: 400 invalid_request, the issue naming the field). */
  limit?: number;
  signals?: LineageSignals;
}

export interface PredictedMemory {
  id: string;
  tier: "critical" | "relevant";
  tag?: string;
  index_key: string;
  summary: string;
  score: number;
  kinds: string[];
}

export interface PredictResponse {
  predicted_memories: PredictedMemory[];
  confidence: number;
  signals: string[];
  cached: boolean;
}

export interface UsageInput {
  session_id: string;
  /** The memories the agent was given. */
  retrieved?: string[];
  /** The ones it used (they count as retrieved too). */
  cited?: string[];
}

export interface UsageResponse {
  session_id: string;
  recorded: number;
  cited: number;
  unknown: string[];
  cited_prefetched: number;
  predicted_session: boolean;
  /** Reported memories this session had reported before: not counted again. */
  already_recorded: string[];
  /** Reported memories that were corrected or forgotten: not counted. */
  inactive: string[];
}

// ---------------------------------------------------------------------------------------------
// background intelligence (docs/consolidation.md)

export interface ConsolidateInput {
  /** Answer what the run would do, writing nothing. */
  dry_run?: boolean;
}

export interface ConsolidationReport {
  dry_run: boolean;
  /** The run's record (a dry run has one too: it spends the day's caps). */
  run_id: string;
  /** Near-verbatim duplicates merged without a model. */
  deduped: number;
  /** Pairs the model called the same (merged) or a refinement (the older superseded). */
  merged: number;
  /** Sessions summarised or compressed to one line. */
  compressed: number;
  /** Memories superseded long ago and never retrieved, soft-deleted (purged after the grace period). */
  forgotten: number;
  contradictions_found: number;
  pairs_checked: number;
  tokens_used: number;
  llm: string;
  stopped: "pairs" | "tokens" | null;
  caps: { pairs_per_night: number; tokens_per_night: number; pairs_left: number; tokens_left: number };
  pool: number;
  pairs_found: number;
  pairs_skipped: number;
  protected_kept: number;
}

export interface ReindexInput {
  dry_run?: boolean;
}

export interface ReindexStatus {
  configured_model: string;
  by_model: Record<string, number>;
  to_reindex: number;
  job: JobStatusResponse | null;
  started: boolean;
  dry_run: boolean;
}

export type ContradictionResolution = "a_wins" | "b_wins" | "both_valid" | "merged";

export interface ContradictionMemory {
  id: string;
  content: string;
  namespace: string;
  memory_type: string;
  source: string | null;
  is_valid: boolean;
  state: string;
  created_at: string;
}

export interface Contradiction {
  id: string;
  /** open: unresolved with both memories valid; moot: one was superseded or forgotten since. */
  status: "open" | "resolved" | "moot";
  /** The older memory. */
  memory_a: ContradictionMemory;
  /** The newer memory. */
  memory_b: ContradictionMemory;
  detected_at: string;
  detected_by: "consolidation" | "write";
  reason: string | null;
  resolution: ContradictionResolution | null;
  resolved_at: string | null;
  resolved_by: string | null;
  note: string | null;
  merged_id: string | null;
}

export interface ContradictionListParams {
  status?: "open" | "resolved" | "all";
  /** An integer 1-100, default 50 (a value outside: 400 invalid_request, the issue naming the field). */
  limit?: number | string;
}

export interface ResolveInput {
  resolution: ContradictionResolution;
  note?: string;
  /** With resolution merged only: the statement that replaces both. */
  content?: string;
  thread_id?: string;
}

export type SensitiveField = "preferred_name" | "pronouns" | "city" | "language" | "employer";

export interface Proposal {
  id: string;
  field: SensitiveField;
  content: string;
  memory_type: string;
  namespace: string;
  importance: number;
  category: string | null;
  status: "pending" | "accepted" | "rejected" | "lapsed";
  origin: Record<string, unknown>;
  created_at: string;
  expires_at: string;
  decided_at: string | null;
  decided_by: string | null;
  memory_id: string | null;
}

export interface ProposalListParams {
  status?: "pending" | "accepted" | "rejected" | "lapsed" | "all";
  /** An integer 1-100, default 50 (a value outside: 400 invalid_request, the issue naming the field). */
  limit?: number | string;
}

export interface ProposalDecision {
  id: string;
  event: "PROPOSE" | "ACCEPT" | "REJECT" | "LAPSE";
  actor: string | null;
  new_ref: string | null;
  ts: string;
}

export interface CheckpointInput {
  /** The whole state: a JSON object. */
  state: Record<string, unknown>;
  /** The version this state was derived from: 0 (or none) creates the thread's checkpoint. */
  version?: number;
}

export interface CheckpointInfo {
  thread_id: string;
  version: number;
  size_bytes: number;
  created_at: string;
  updated_at: string;
}

export interface Checkpoint extends CheckpointInfo {
  state: Record<string, unknown>;
}

export interface AgentTokenInput {
  /** The agent it acts as (a configured agent): its memory.query allowlist applies. */
  agent: string;
  /** What it is for, to tell tokens apart ("Claude Code on my laptop"). */
  label?: string;
  /** Days until it stops working (1-3650); none: until revoked. */
  expires_in_days?: number;
}

/** An agent token as listed: never the token itself, only its first characters. */
export interface AgentToken {
  id: string;
  agent: string;
  label: string | null;
  token_prefix: string;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
}
