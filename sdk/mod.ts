// Client SDK for the devai-memory edge functions, on @supabase/supabase-js (functions.invoke), so
// it talks to a hosted project and to the local server (`npm start`) the same way.
//
//   import { createMemoryClient } from "./sdk/mod.ts";
//   const memory = createMemoryClient({ supabaseUrl: "http://127.0.0.1:54321", accessToken: userJwt });
//   await memory.remember({ content: "We deploy on Fridays", project: "shop" });
//   const { block } = await memory.retrieve({ message: "when do we deploy?", project: "shop" });
//
// Request types are the functions' own zod schemas (z.input: what you may send, defaults optional),
// so the SDK cannot drift from what the server validates. Every non-2xx answer throws a
// MemoryApiError carrying the one error shape: { error: { code, message, issues? } }.
import { createClient, FunctionsFetchError, FunctionsHttpError, FunctionsRelayError, type SupabaseClient } from "@supabase/supabase-js";
import type { z } from "zod";
import type {
  CorrectRequest,
  CorrectResponse,
  ExportQuery,
  ForgetRequest,
  HistoryEntry,
  HistoryQuery,
  LifecycleRequest,
  LifecycleResponse,
  EntityListQuery,
  ListQuery,
  ListResponse,
  MarkdownFile,
  Memory,
  MemoryQuery,
  Relation,
  RememberRequest,
  RememberResponse,
  StatsQuery,
  WeakQuery,
} from "../supabase/functions/memory/schemas.ts";
import type { MemoryStats } from "../supabase/functions/memory/stats.ts";
import type { Explanation } from "../supabase/functions/memory/explain.ts";
import type { EntityListItem, EntityProfile } from "../supabase/functions/memory/entities.ts";
import type { EpisodeBatchRequest, EpisodeBatchResult } from "../supabase/functions/_shared/episodes.ts";
import type {
  QueryRequest,
  QueryResponse,
  RetrieveRequest,
  RetrieveResponse,
} from "../supabase/functions/memory-retrieve/schemas.ts";
import type { ExtractRequestSchema } from "../supabase/functions/memory-extract/handler.ts";
import type { PreparedCandidates } from "../supabase/functions/_shared/candidates.ts";
import type { CompactRequestSchema } from "../supabase/functions/memory-compact/handler.ts";
import type { DedupRequestSchema } from "../supabase/functions/memory-dedup/handler.ts";
import type { JobStatus, jobView } from "../supabase/functions/_shared/jobs.ts";

export type { Explanation, HistoryEntry, MarkdownFile, Memory, MemoryStats, QueryResponse, Relation, RetrieveResponse };
export type { CorrectResponse, LifecycleResponse, ListResponse, RememberResponse };
export type { EntityListItem, EntityProfile, EpisodeBatchResult };

/** The header a service_role caller names its tenant in (supabase/functions/_shared/auth.ts). */
export const TENANT_HEADER = "x-devai-tenant";

// ---------------------------------------------------------------------------------------------
// Request types, from the functions' schemas

export type RetrieveInput = z.input<typeof RetrieveRequest>;
export type QueryInput = z.input<typeof QueryRequest>;
export type RememberInput = z.input<typeof RememberRequest>;
export type CorrectInput = z.input<typeof CorrectRequest>;
export type ForgetInput = z.input<typeof ForgetRequest>;
export type LifecycleInput = z.input<typeof LifecycleRequest>;
export type ExtractInput = z.input<typeof ExtractRequestSchema>;
export type CompactInput = z.input<typeof CompactRequestSchema>;
export type DedupInput = z.input<typeof DedupRequestSchema>;
export type EpisodesInput = z.input<typeof EpisodeBatchRequest>;

/**
 * Query-string schemas take text ("true", "20"); the SDK also accepts the natural JS values
 * (booleans, numbers) and turns them into that text.
 */
type Loose<V> = V extends "true" | "false" ? boolean : string extends V ? number : never;
export type QueryParams<T> = { [K in keyof T]?: Exclude<T[K], undefined> | Loose<Exclude<T[K], undefined>> };

export type ListParams = QueryParams<z.input<typeof ListQuery>>;
export type HistoryParams = QueryParams<z.input<typeof HistoryQuery>>;
export type WeakParams = QueryParams<z.input<typeof WeakQuery>>;
export type StatsParams = QueryParams<z.input<typeof StatsQuery>>;
export type GetParams = QueryParams<z.input<typeof MemoryQuery>>;
export type EntityListParams = QueryParams<z.input<typeof EntityListQuery>>;
export type ExportFormat = NonNullable<z.input<typeof ExportQuery>["format"]>;

// ---------------------------------------------------------------------------------------------
// Response types the functions do not export as interfaces (kept in step with their handlers)

export interface GetResponse {
  /** With as_of: the memory as it was then (content, validity, supersede from its history). */
  memory: Memory;
  as_of?: string;
  /** With as_of: whether the memory held then (recorded, not superseded, contradicted or forgotten). */
  held?: boolean;
}

/** 202 from POST memory/sessions/{id}/end: the session's consolidation job (one per session). */
export interface EndSessionResponse {
  session_id: string;
  /** False when the session had ended before (explicitly, by a new session on its thread, or idle). */
  ended_now: boolean;
  job_id: string | null;
  job_status: JobStatus | null;
  deduplicated: boolean;
}

export interface EntityListResponse {
  entities: EntityListItem[];
}

export interface HistoryResponse {
  memory_id: string;
  /** True when the memory itself is gone (purged) and only its audit rows remain. */
  purged: boolean;
  history: HistoryEntry[];
}

export interface WeakMemory {
  memory: Memory;
  predicted_strength: number;
  days_since_access: number;
  days_until_prune: number | null;
}

export interface WeakResponse {
  decay_per_day: number;
  prune_threshold: number;
  as_of: string;
  memories: WeakMemory[];
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

export interface MarkdownExport {
  tenant_id: string;
  exported_at: string;
  format: "markdown";
  /** One Markdown file with YAML front matter per memory; write them to disk as they are. */
  files: MarkdownFile[];
}

/** 202 from a function that queues a job: the job is durable in memory_jobs before this answer is sent. */
export interface QueuedJobResponse {
  job_id: string;
  status: JobStatus;
  /** True when nothing new was enqueued and job_id is an existing job. */
  deduplicated: boolean;
}

/**
 * 202 from memory-extract. Extraction is incremental per session: post the transcript so far, and
 * only the messages no earlier job of the session covers are queued, `new_messages` of them.
 * The same transcript again, or one an earlier job already covers: the existing job,
 * `deduplicated: true`, `new_messages: 0`.
 */
export interface ExtractResponse extends QueuedJobResponse {
  new_messages: number;
}

/** Dates as they arrive over JSON. */
type Jsonified<T> = { [K in keyof T]: T[K] extends Date ? string : T[K] extends Date | null ? string | null : T[K] };

/** GET memory-extract?job_id=: the job as its owner sees it (no lease bookkeeping). */
export type JobStatusResponse = Jsonified<ReturnType<typeof jobView>>;

/** A chat message as the write path takes it (OpenAI format, tool calls included). */
export type ChatMessage = CompactInput["messages"][number];

interface CompactResultBase {
  messages: ChatMessage[];
  tokens_before: number;
  tokens_after: number;
  trigger_tokens: number;
}

/** memory-compact: unchanged under the trigger, else the compacted message list and its summary. */
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
    dedup_job_id: string | null;
  });

/** 202 from memory-dedup: candidates validated, capped and queued for phase 2. */
export interface DedupResponse extends QueuedJobResponse {
  stats: PreparedCandidates["stats"];
}

// ---------------------------------------------------------------------------------------------
// Errors

export interface MemoryApiIssue {
  path: (string | number)[];
  message: string;
  code?: string;
}

/** Every failure of a call: the server's { error: { code, message, issues? } }, or a network error (status 0). */
export class MemoryApiError extends Error {
  override name = "MemoryApiError";
  constructor(
    /** HTTP status; 0 when the server could not be reached. */
    readonly status: number,
    /** Machine-readable: invalid_request, missing_token, not_found, payload_too_large, ... */
    readonly code: string,
    message: string,
    /** zod issues for 400 invalid_request. */
    readonly issues: MemoryApiIssue[] = [],
    /** Quote it when reporting a 500: the server logged the details under it. */
    readonly requestId?: string,
  ) {
    super(message);
  }
}

function isErrorBody(v: unknown): v is { error: { code: string; message: string; issues?: MemoryApiIssue[]; request_id?: string } } {
  const e = (v as { error?: unknown } | null)?.error as { code?: unknown; message?: unknown } | undefined;
  return typeof e === "object" && e !== null && typeof e.code === "string" && typeof e.message === "string";
}

/** Turns what functions.invoke returns as `error` into a MemoryApiError. */
export async function toMemoryApiError(error: unknown, response?: Response): Promise<MemoryApiError> {
  if (error instanceof FunctionsHttpError || error instanceof FunctionsRelayError) {
    const res = (response ?? error.context) as Response;
    const status = res?.status ?? 0;
    const requestId = res?.headers?.get("x-request-id") ?? undefined;
    let text = "";
    try {
      text = await res.text();
    } catch {
      // body already consumed or unreadable: fall through to the status line
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (isErrorBody(body)) {
      return new MemoryApiError(status, body.error.code, body.error.message, body.error.issues ?? [], body.error.request_id ?? requestId);
    }
    const code = error instanceof FunctionsRelayError ? "relay_error" : "http_error";
    return new MemoryApiError(status, code, text.slice(0, 500) || `HTTP ${status}`, [], requestId);
  }
  if (error instanceof FunctionsFetchError) {
    const cause = (error.context as { message?: string } | undefined)?.message;
    return new MemoryApiError(0, "network_error", `could not reach the functions server${cause ? `: ${cause}` : ""}`);
  }
  if (error instanceof MemoryApiError) return error;
  return new MemoryApiError(0, "client_error", (error as Error)?.message ?? String(error));
}

// ---------------------------------------------------------------------------------------------
// Client

export interface MemoryClientOptions {
  /** Project URL, e.g. https://xyz.supabase.co, or http://127.0.0.1:54321 for `npm start`. */
  supabaseUrl: string;
  /**
   * The caller's JWT (a user's access token, or a service_role key): a string, or a function
   * returning the current one (called before every request, so refreshed tokens are picked up).
   */
  accessToken?: string | (() => Promise<string | null> | string | null);
  /** The project's API key (anon / publishable). Used as the bearer token when there is no accessToken. */
  supabaseKey?: string;
  /** With a service_role token: the tenant (uuid) every call acts for. User tokens are their own tenant. */
  tenantId?: string;
  /** Use an existing client (its session / accessToken decides who calls) instead of creating one. */
  client?: SupabaseClient;
  /** Per-request timeout in ms (default none). */
  timeoutMs?: number;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
}

type Method = "GET" | "POST" | "PATCH" | "DELETE";

function queryString(params: Record<string, unknown> | undefined): string {
  if (!params) return "";
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null) continue;
    q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : "";
}

function idPath(id: string): string {
  if (typeof id !== "string" || id.length === 0) throw new MemoryApiError(0, "client_error", "a memory id is required");
  return encodeURIComponent(id);
}

export function createMemoryClient(opts: MemoryClientOptions) {
  const token = opts.accessToken;
  let client: SupabaseClient;
  if (opts.client) {
    client = opts.client;
  } else {
    const key = opts.supabaseKey ?? (typeof token === "string" ? token : undefined);
    if (!key && !token) throw new Error("createMemoryClient: give accessToken or supabaseKey");
    client = createClient(opts.supabaseUrl, key ?? "unused-with-accessToken", {
      // With accessToken, supabase-js sends it as the bearer and starts no auth machinery (no
      // session storage, no refresh timers): right for agents and servers.
      accessToken: token === undefined
        ? undefined
        : async () => (typeof token === "function" ? await token() : token),
      auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
    });
  }
  const baseHeaders: Record<string, string> = { ...opts.headers };
  if (opts.tenantId) baseHeaders[TENANT_HEADER] = opts.tenantId;

  /**
   * One call. functions.invoke builds `${functionsUrl}/${name}`, so a path and a query string can
   * ride in the name (`memory/<id>/history?limit=5`).
   */
  async function call<T>(path: string, method: Method, body?: unknown): Promise<T> {
    const { data, error, response } = await client.functions.invoke(path, {
      method,
      // invoke serialises objects as JSON with content-type application/json.
      body: body === undefined ? undefined : (body as Record<string, unknown>),
      headers: { ...baseHeaders },
      timeout: opts.timeoutMs,
    });
    if (error) throw await toMemoryApiError(error, response);
    return data as T;
  }

  return {
    /** The underlying supabase-js client. */
    supabase: client,

    // -- memory-retrieve ---------------------------------------------------------------------
    /** Before a turn: the `## Relevant Memories` block for the system prompt, within budget_tokens. */
    retrieve: (body: RetrieveInput) => call<RetrieveResponse>("memory-retrieve", "POST", body),
    /** memory.query (seed 001 §6): agent-scoped search with category allowlists and filters. */
    query: (body: QueryInput) => call<QueryResponse>("memory-retrieve/query", "POST", body),

    // -- memory (CRUD) -----------------------------------------------------------------------
    /** A user-stated fact (priority highest, never decays); an exact duplicate returns created: false. */
    remember: (body: RememberInput) => call<RememberResponse>("memory/remember", "POST", body),
    /** One memory; with as_of, as it was at that instant. */
    get: (id: string, params: GetParams = {}) => call<GetResponse>(`memory/${idPath(id)}${queryString(params)}`, "GET"),
    /** Newest first; pass next_cursor back as cursor for the next page. */
    list: (params: ListParams = {}) => call<ListResponse>(`memory${queryString(params)}`, "GET"),
    /** Replaces a memory: the new one supersedes it (history MERGE). */
    correct: (id: string, body: CorrectInput) => call<CorrectResponse>(`memory/${idPath(id)}/correct`, "POST", body),
    /** Soft delete; purged after the grace period unless restored. */
    forget: (id: string, body?: ForgetInput) => call<LifecycleResponse>(`memory/${idPath(id)}/forget`, "POST", body),
    restore: (id: string, body?: LifecycleInput) => call<LifecycleResponse>(`memory/${idPath(id)}/restore`, "POST", body),
    /** Pinned memories never decay (also: confirm). */
    pin: (id: string, body?: LifecycleInput) => call<LifecycleResponse>(`memory/${idPath(id)}/pin`, "POST", body),
    confirm: (id: string, body?: LifecycleInput) => call<LifecycleResponse>(`memory/${idPath(id)}/confirm`, "POST", body),
    unpin: (id: string, body?: LifecycleInput) => call<LifecycleResponse>(`memory/${idPath(id)}/unpin`, "POST", body),
    history: (id: string, params: HistoryParams = {}) =>
      call<HistoryResponse>(`memory/${idPath(id)}/history${queryString(params)}`, "GET"),
    /** Supersede chain (with validity), typed edges, source episodes, entities, history summary and decay outlook. */
    explain: (id: string) => call<Explanation>(`memory/${idPath(id)}/explain`, "GET"),
    /** What will decay soon. */
    weak: (params: WeakParams = {}) => call<WeakResponse>(`memory/weak${queryString(params)}`, "GET"),
    stats: (params: StatsParams = {}) => call<MemoryStats>(`memory/stats${queryString(params)}`, "GET"),
    /** The tenant's memories as JSON (with relations and history) or as Markdown files. */
    export: (<F extends ExportFormat = "json">(format?: F) =>
      call<F extends "markdown" ? MarkdownExport : JsonExport>(`memory/export${queryString({ format: format ?? "json" })}`, "GET")),

    // -- graph: episodes, sessions, entities ----------------------------------------------------
    /** Every message as it happens (no LLM): a batch of up to 50, idempotent per (session, message). */
    episodes: (body: EpisodesInput) => call<EpisodeBatchResult>("memory/episodes", "POST", body),
    /** The session is over: its consolidation into facts is queued (once per session). */
    endSession: (sessionId: string) => call<EndSessionResponse>(`memory/sessions/${idPath(sessionId)}/end`, "POST"),
    /** The tenant's entities, by mentions; q matches names, aliases and summaries as plain text. */
    entities: (params: EntityListParams = {}) => call<EntityListResponse>(`memory/entities${queryString(params)}`, "GET"),
    /** An entity's profile, the facts that mention it (newest first) and its timeline of episodes. */
    entity: (id: string) => call<EntityProfile>(`memory/entities/${idPath(id)}`, "GET"),

    // -- write path ----------------------------------------------------------------------------
    /**
     * Enqueue extraction of the session's transcript so far (202 at once; the worker does the rest).
     * Call it at session end, or as the session grows: only messages not extracted yet are queued.
     */
    extract: (body: ExtractInput) => call<ExtractResponse>("memory-extract", "POST", body),
    /** Where an extraction job is: queued, running, done (with its result) or dead (with the error). */
    jobStatus: (jobId: string) => call<JobStatusResponse>(`memory-extract${queryString({ job_id: jobId })}`, "GET"),
    /** Context near full: summarise the oldest part of the conversation into a compacted message list. */
    compact: (body: CompactInput) => call<CompactResponse>("memory-compact", "POST", body),
    /** Queue your own candidate memories for dedup against what is stored (202; seed 002 flush). */
    dedup: (body: DedupInput) => call<DedupResponse>("memory-dedup", "POST", body),
  };
}

export type MemoryClient = ReturnType<typeof createMemoryClient>;
