// The devai-memory client: one method per endpoint of the edge functions, over the runtime's own
// `fetch` (Node 20+, Deno, Bun, browsers): no supabase-js, no WebSocket, nothing to install beside
// it. It talks to a hosted Supabase project and to the local server (`npm start`) the same way:
// `${supabaseUrl}/functions/v1/<function>[/<path>]`.
import { errorFromBody, errorFromFetch, errorFromResponse, MemoryApiError } from "./errors.ts";
import type {
  AgentConfig,
  AgentToken,
  AgentTokenInput,
  AssembleInput,
  AssembleResponse,
  CategoryConfig,
  ChatMessage,
  Checkpoint,
  CheckpointInfo,
  CheckpointInput,
  CompactInput,
  CompactResponse,
  ConsolidateInput,
  ConsolidationReport,
  Contradiction,
  ContradictionListParams,
  CorrectInput,
  CorrectResponse,
  DedupInput,
  DedupResponse,
  EndSessionResponse,
  EntityListParams,
  EntityListResponse,
  EntityProfile,
  EpisodeBatchResult,
  EpisodesInput,
  Explanation,
  ExtractInput,
  ExtractResponse,
  ForgetInput,
  GetParams,
  GetResponse,
  HistoryParams,
  HistoryResponse,
  JobStatusResponse,
  JsonExport,
  LifecycleInput,
  LifecycleResponse,
  ListParams,
  ListResponse,
  MarkdownExport,
  MemoryStats,
  PredictInput,
  PredictResponse,
  Proposal,
  ProposalDecision,
  ProposalListParams,
  QueryInput,
  QueryResponse,
  ReindexInput,
  ReindexStatus,
  RememberInput,
  RememberResponse,
  ResolveInput,
  RetrieveInput,
  RetrieveResponse,
  StatsParams,
  TranscriptMark,
  UsageInput,
  UsageResponse,
  WeakParams,
  WeakResponse,
  WriteScope,
} from "./types.ts";

/** The header a service_role caller names its tenant in. */
export const TENANT_HEADER = "x-devai-tenant";
export const SDK_VERSION = "0.1.0";

export interface MemoryClientOptions {
  /** Project URL, e.g. https://xyz.supabase.co, or http://127.0.0.1:54321 for `npm start`. */
  supabaseUrl: string;
  /**
   * The caller's JWT (a user's access token, or a service_role key): a string, or a function
   * returning the current one (called before every request, so refreshed tokens are picked up;
   * with supabase-js: `async () => (await supabase.auth.getSession()).data.session?.access_token ?? null`).
   */
  accessToken?: string | (() => Promise<string | null | undefined> | string | null | undefined);
  /** The project's API key (anon / publishable): sent as `apikey`, and as the bearer when there is no accessToken. */
  supabaseKey?: string;
  /** With a service_role token: the tenant (uuid) every call acts for. User tokens are their own tenant. */
  tenantId?: string;
  /** Per-request timeout in ms (default none), reading the answer included. */
  timeoutMs?: number;
  /**
   * Cancels the client's calls when it aborts (a call under way, and every later one): the call
   * fails with MemoryApiError code "aborted". For one call: `createMemoryClient({ ...options, signal })`.
   */
  signal?: AbortSignal;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
  /** A fetch implementation (default: the global one). */
  fetch?: typeof fetch;
}

type Method = "GET" | "POST" | "PUT";

function queryString(params: object | undefined): string {
  if (!params) return "";
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null) continue;
    q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : "";
}

function segment(value: string, what: string): string {
  if (typeof value !== "string" || value.length === 0) {
    throw new MemoryApiError(0, "client_error", `${what} is required`);
  }
  return encodeURIComponent(value);
}

/**
 * The most bytes of JSON one part of extractionSession's transcript holds: half memory-extract's
 * default body limit (MAX_EXTRACT_BODY_BYTES, 8 MiB). The Claude Code hooks cut the same way with
 * their own code (they install nothing): tests/extract_parts_in_step.test.ts keeps the two in step.
 */
export const EXTRACT_PART_BYTES = 4 * 1024 * 1024;
const utf8 = new TextEncoder();

/** How many of `messages` from `from` fit in `maxBytes` of JSON (at least one). */
function partEnd(messages: ChatMessage[], from: number, maxBytes: number): number {
  let end = from;
  let bytes = 0;
  while (end < messages.length) {
    bytes += utf8.encode(JSON.stringify(messages[end])).length + 1;
    if (end > from && bytes > maxBytes) break;
    end++;
  }
  return end;
}

export function createMemoryClient(opts: MemoryClientOptions) {
  if (!opts.supabaseUrl) throw new MemoryApiError(0, "client_error", "createMemoryClient: supabaseUrl is required");
  if (!opts.accessToken && !opts.supabaseKey) {
    throw new MemoryApiError(0, "client_error", "createMemoryClient: give accessToken or supabaseKey");
  }
  const projectUrl = opts.supabaseUrl.replace(/\/+$/, "");
  // What a new user hands over instead: the functions URL npm start's banner prints first (every
  // call then went to a function named "functions"), or a host without its scheme (every call an
  // "Invalid URL" network_error).
  if (!/^https?:\/\//i.test(projectUrl) || /\/functions\/v1$/.test(projectUrl)) {
    throw new MemoryApiError(
      0,
      "client_error",
      `createMemoryClient: supabaseUrl is the project's URL (https://<ref>.supabase.co, or http://127.0.0.1:54321 for npm start), without /functions/v1, which the client adds; got ${opts.supabaseUrl}`,
    );
  }
  const base = `${projectUrl}/functions/v1/`;
  const doFetch = opts.fetch ?? globalThis.fetch;
  if (typeof doFetch !== "function") {
    throw new MemoryApiError(0, "client_error", "no fetch in this runtime: pass options.fetch");
  }

  async function bearer(): Promise<string> {
    const t = opts.accessToken;
    const token = typeof t === "function" ? await t() : t;
    const value = token || opts.supabaseKey;
    if (!value) throw new MemoryApiError(0, "client_error", "no access token (the accessToken function returned none)");
    return value;
  }

  function requestSignal(): AbortSignal | undefined {
    const timeout = opts.timeoutMs ? AbortSignal.timeout(opts.timeoutMs) : undefined;
    if (!timeout || !opts.signal) return timeout ?? opts.signal;
    return AbortSignal.any([opts.signal, timeout]);
  }

  async function send(path: string, method: Method, body: unknown, accept: string): Promise<Response> {
    const headers: Record<string, string> = {
      accept,
      authorization: `Bearer ${await bearer()}`,
      "x-client-info": `devai-memory-sdk/${SDK_VERSION}`,
      ...(opts.supabaseKey ? { apikey: opts.supabaseKey } : {}),
      ...(opts.tenantId ? { [TENANT_HEADER]: opts.tenantId } : {}),
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...opts.headers,
    };
    let res: Response;
    try {
      res = await doFetch(base + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: requestSignal(),
      });
    } catch (err) {
      throw errorFromFetch(err, opts.signal?.aborted);
    }
    if (!res.ok) throw await errorFromResponse(res);
    return res;
  }

  // The answer's body arrives after fetch resolves: a timeout, a cancellation or a body that is not
  // JSON while reading it is a MemoryApiError too, like every other failure of a call.
  async function call<T>(path: string, method: Method, body?: unknown): Promise<T> {
    const res = await send(path, method, body, "application/json");
    let text: string | undefined;
    try {
      text = await res.text();
      return JSON.parse(text) as T;
    } catch (err) {
      throw errorFromBody(err, res, text, opts.signal?.aborted ?? false);
    }
  }

  const client = {
    // -- memory-retrieve ---------------------------------------------------------------------
    /** Before a turn: the `## Relevant Memories` block for the system prompt, within budget_tokens. */
    retrieve: (body: RetrieveInput) => call<RetrieveResponse>("memory-retrieve", "POST", body),
    /** memory.query: agent-scoped search with category allowlists and filters. */
    query: (body: QueryInput) => call<QueryResponse>("memory-retrieve/query", "POST", body),

    // -- context -----------------------------------------------------------------------------
    /** A tiered context of at most `budget` tokens from the coding signals (docs/context.md). */
    assembleContext: (body: AssembleInput = {}) => call<AssembleResponse>("context/assemble", "POST", body),
    /** What a file opened, a branch checked out or an error will need; cached for the session. */
    predictContext: (body: PredictInput) => call<PredictResponse>("context/predict", "POST", body),
    /** Which of the memories the agent was given it used: ranking and memory/stats learn from it. */
    reportUsage: (body: UsageInput) => call<UsageResponse>("memory/usage", "POST", body),

    // -- memory ------------------------------------------------------------------------------
    /** A user-stated fact (priority highest, never decays); an exact duplicate returns created: false. */
    remember: (body: RememberInput) => call<RememberResponse>("memory/remember", "POST", body),
    /** One memory; with as_of, as it was at that instant and whether it held. */
    get: (id: string, params: GetParams = {}) =>
      call<GetResponse>(`memory/${segment(id, "a memory id")}${queryString(params)}`, "GET"),
    /** Newest first; pass next_cursor back as cursor for the next page. */
    list: (params: ListParams = {}) => call<ListResponse>(`memory${queryString(params)}`, "GET"),
    /** Replaces a memory: the new one supersedes it (history MERGE). */
    correct: (id: string, body: CorrectInput) =>
      call<CorrectResponse>(`memory/${segment(id, "a memory id")}/correct`, "POST", body),
    /** Soft delete; purged after the grace period unless restored. */
    forget: (id: string, body: ForgetInput = {}) =>
      call<LifecycleResponse>(`memory/${segment(id, "a memory id")}/forget`, "POST", body),
    restore: (id: string, body: LifecycleInput = {}) =>
      call<LifecycleResponse>(`memory/${segment(id, "a memory id")}/restore`, "POST", body),
    /** Pinned memories never decay (history PIN). */
    pin: (id: string, body: LifecycleInput = {}) =>
      call<LifecycleResponse>(`memory/${segment(id, "a memory id")}/pin`, "POST", body),
    /** The user confirms the fact: pinned, history CONFIRM. */
    confirm: (id: string, body: LifecycleInput = {}) =>
      call<LifecycleResponse>(`memory/${segment(id, "a memory id")}/confirm`, "POST", body),
    unpin: (id: string, body: LifecycleInput = {}) =>
      call<LifecycleResponse>(`memory/${segment(id, "a memory id")}/unpin`, "POST", body),
    history: (id: string, params: HistoryParams = {}) =>
      call<HistoryResponse>(`memory/${segment(id, "a memory id")}/history${queryString(params)}`, "GET"),
    /** Supersede chain, relations, source session, history summary and decay outlook. */
    explain: (id: string) => call<Explanation>(`memory/${segment(id, "a memory id")}/explain`, "GET"),

    // -- graph: episodes, sessions, entities ----------------------------------------------------
    /** Every message as it happens (no LLM): a batch of up to 50, idempotent per (session, message). */
    episodes: (body: EpisodesInput) => call<EpisodeBatchResult>("memory/episodes", "POST", body),
    /** The session is over: its consolidation into facts is queued (once per session). */
    endSession: (sessionId: string) =>
      call<EndSessionResponse>(`memory/sessions/${segment(sessionId, "a session id")}/end`, "POST"),
    /** The tenant's entities, by mentions; q matches names, aliases and summaries as plain text. */
    entities: (params: EntityListParams = {}) =>
      call<EntityListResponse>(`memory/entities${queryString(params)}`, "GET"),
    /** An entity's profile, the facts that mention it (newest first) and its timeline of episodes. */
    entity: (id: string) => call<EntityProfile>(`memory/entities/${segment(id, "an entity id")}`, "GET"),
    /** What will decay soon. */
    weak: (params: WeakParams = {}) => call<WeakResponse>(`memory/weak${queryString(params)}`, "GET"),
    stats: (params: StatsParams = {}) => call<MemoryStats>(`memory/stats${queryString(params)}`, "GET"),
    /** Everything as JSON (with relations and history), or the Markdown files in a JSON object. */
    export: <F extends "json" | "markdown" = "json">(format?: F) =>
      call<F extends "markdown" ? MarkdownExport : JsonExport>(
        `memory/export${queryString({ format: format ?? "json" })}`,
        "GET",
      ),
    /** The Markdown files as a tar archive (write it to disk and `tar -x`). */
    exportArchive: async (): Promise<Uint8Array> => {
      const res = await send("memory/export?format=markdown", "GET", undefined, "application/x-tar");
      try {
        return new Uint8Array(await res.arrayBuffer());
      } catch (err) {
        throw errorFromBody(err, res, undefined, opts.signal?.aborted ?? false);
      }
    },

    // -- background intelligence: consolidation, contradictions, consent, checkpoints ----------
    /** Tonight's consolidation, now, for the caller's tenant (bounded by the same caps); dry_run writes nothing but its run record, and spends the same caps. */
    consolidate: (body: ConsolidateInput = {}) => call<ConsolidationReport>("memory/consolidate", "POST", body),
    /** Re-embedding with the configured embedding model: starts it (a background job) or reports it. */
    reindex: (body: ReindexInput = {}) => call<ReindexStatus>("memory/reindex", "POST", body),
    /** Detected contradictions (default: the open ones). */
    contradictions: async (params: ContradictionListParams = {}) =>
      (await call<{ contradictions: Contradiction[] }>(`memory/contradictions${queryString(params)}`, "GET"))
        .contradictions,
    /** a_wins / b_wins supersede the other, both_valid keeps both, merged stores `content` in place of both. */
    resolveContradiction: async (id: string, body: ResolveInput) =>
      (await call<{ contradiction: Contradiction }>(
        `memory/contradictions/${segment(id, "a contradiction id")}/resolve`,
        "POST",
        body,
      )).contradiction,
    /** Sensitive facts a model proposed, waiting for consent (default: pending). */
    proposals: async (params: ProposalListParams = {}) =>
      (await call<{ proposals: Proposal[] }>(`memory/proposals${queryString(params)}`, "GET")).proposals,
    /** One proposal and its decisions (PROPOSE, ACCEPT, REJECT, LAPSE). */
    proposal: (id: string) =>
      call<{ proposal: Proposal; history: ProposalDecision[] }>(
        `memory/proposals/${segment(id, "a proposal id")}`,
        "GET",
      ),
    /** The user consents: the fact becomes a memory. */
    acceptProposal: (id: string) =>
      call<{ proposal: Proposal; memory_id: string | null }>(
        `memory/proposals/${segment(id, "a proposal id")}/accept`,
        "POST",
      ),
    rejectProposal: (id: string) =>
      call<{ proposal: Proposal; memory_id: string | null }>(
        `memory/proposals/${segment(id, "a proposal id")}/reject`,
        "POST",
      ),
    /** Saves the thread's state; `version` is the one you loaded (0 or none: the first save). A stale version is a 409. */
    saveCheckpoint: (threadId: string, body: CheckpointInput) =>
      call<CheckpointInfo>(`memory/checkpoints/${segment(threadId, "a thread id")}`, "PUT", body),
    loadCheckpoint: (threadId: string) =>
      call<Checkpoint>(`memory/checkpoints/${segment(threadId, "a thread id")}`, "GET"),

    // -- agent tokens (with the user's session or the service role, never with an agent token) --
    /** A long-lived, revocable credential for one agent (docs/auth.md); `token` is in this answer only. */
    issueAgentToken: (body: AgentTokenInput) =>
      call<AgentToken & { token: string }>("memory/agent-tokens", "POST", body),
    listAgentTokens: async () => (await call<{ tokens: AgentToken[] }>("memory/agent-tokens", "GET")).tokens,
    /** Its next request is a 401; revoking it again changes nothing (`changed: false`). */
    revokeAgentToken: (id: string) =>
      call<{ changed: boolean; token: AgentToken }>(
        `memory/agent-tokens/${segment(id, "an agent token id")}/revoke`,
        "POST",
        {},
      ),

    // -- configuration (listing: any caller; changing: the service role) ---------------------
    listCategories: async () => (await call<{ categories: CategoryConfig[] }>("memory/categories", "GET")).categories,
    /** Creates a category, or changes the fields given (service role). */
    setCategory: (name: string, body: { context?: "all" | "rag"; rag_length?: number | null } = {}) =>
      call<{ created: boolean; category: CategoryConfig }>(
        `memory/categories/${segment(name, "a category name")}`,
        "PUT",
        body,
      ),
    listAgents: async () => (await call<{ agents: AgentConfig[] }>("memory/agents", "GET")).agents,
    getAgent: (agent: string) => call<AgentConfig>(`memory/agents/${segment(agent, "an agent name")}`, "GET"),
    /** Sets the categories an agent may read through query() (service role). */
    setAgent: (agent: string, categories: string[]) =>
      call<{ created: boolean; agent: AgentConfig }>(`memory/agents/${segment(agent, "an agent name")}`, "PUT", {
        categories,
      }),

    // -- write path ----------------------------------------------------------------------------
    /**
     * Queue extraction of the session's transcript so far (202 at once; the worker does the rest),
     * or, with `after` (an earlier answer's `transcript`), of the messages that follow it.
     */
    extract: (body: ExtractInput) => call<ExtractResponse>("memory-extract", "POST", body),
    /** Where an extraction job is: queued, running, done (with its result) or dead (with the error). */
    jobStatus: (jobId: string) => call<JobStatusResponse>(`memory-extract${queryString({ job_id: jobId })}`, "GET"),
    /** Context near full: summarise the oldest part of the conversation into a compacted message list. */
    compact: (body: CompactInput) => call<CompactResponse>("memory-compact", "POST", body),
    /** Queue your own candidate memories for dedup against what is stored (202). */
    dedup: (body: DedupInput) => call<DedupResponse>("memory-dedup", "POST", body),

    /**
     * A session whose transcript only grows: each send(messagesSoFar) posts only the messages the
     * server has not acknowledged yet (`after`), and the whole transcript again if the server does
     * not know where it stands (409 transcript_mismatch). What it posts goes in parts of at most
     * EXTRACT_PART_BYTES of JSON (fewer on a 413), each `after` the last: a whole transcript can be
     * past memory-extract's body limit. The answer is the last part's, new_messages summed over
     * the parts. Nothing new since the last send: no request, undefined.
     */
    extractionSession(session: { session_id: string; project?: string; scope?: WriteScope; thread_id?: string }) {
      let mark: TranscriptMark | undefined;
      return {
        get transcript(): TranscriptMark | undefined {
          return mark;
        },
        async send(messagesSoFar: ChatMessage[]): Promise<ExtractResponse | undefined> {
          if (mark && mark.count === messagesSoFar.length) return undefined;
          let known = mark && mark.count < messagesSoFar.length ? mark : undefined;
          let maxBytes = EXTRACT_PART_BYTES;
          let lostTrack = false;
          let last: ExtractResponse | undefined;
          let newMessages = 0;
          while ((known?.count ?? 0) < messagesSoFar.length) {
            const from = known?.count ?? 0;
            const messages = messagesSoFar.slice(from, partEnd(messagesSoFar, from, maxBytes));
            let answer: ExtractResponse;
            try {
              answer = await client.extract({ ...session, messages, ...(known ? { after: known } : {}) });
            } catch (err) {
              if (!(err instanceof MemoryApiError)) throw err;
              if (err.code === "payload_too_large" && messages.length > 1) {
                maxBytes = Math.floor(maxBytes / 2); // a server with a lower MAX_EXTRACT_BODY_BYTES
                continue;
              }
              if (!(known && !lostTrack && err.code === "transcript_mismatch")) throw err;
              lostTrack = true; // the whole transcript again, once
              known = undefined;
              continue;
            }
            mark = known = answer.transcript;
            newMessages += answer.new_messages;
            last = answer;
            if (answer.transcript.count <= from) break; // acknowledged nothing new: never loop on it
          }
          return last && { ...last, new_messages: newMessages };
        },
      };
    },
  };
  return client;
}

export type MemoryClient = ReturnType<typeof createMemoryClient>;
