// The MCP tools (docs/mcp.md), named as the graph memory design names them. Each is an adapter over
// the operation in _shared/services/ the HTTP routes use, with the HTTP API's own zod schema as its
// input (an id added where the route takes one in its path): the same validation, RLS, allowlists
// and history. A result is text an agent reads plus the HTTP answer as structured content; what
// the caller must fix (400, 404, 409, 403 …) is a tool error with the API's error code.
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { z } from "zod";
import { HttpError } from "../_shared/http.ts";
import {
  CorrectRequest,
  EntityListQuery,
  ForgetRequest,
  HistoryQuery,
  LifecycleRequest,
  RememberRequest,
  StatsQuery,
  WeakQuery,
} from "../_shared/memories/schemas.ts";
import type { RouteClass } from "../_shared/rate-limit.ts";
import { QueryRequest, RetrieveRequest } from "../_shared/retrieval/schemas.ts";
import { uuid } from "../_shared/schemas.ts";
import { entities, entityInfo } from "../_shared/services/graph.ts";
import { confirm, forget, restore } from "../_shared/services/memory-lifecycle.ts";
import { queryMemories } from "../_shared/services/memory-query.ts";
import { explainFact, memoryHistory, stats, weakFacts } from "../_shared/services/memory-reads.ts";
import { correct, remember } from "../_shared/services/memory-writes.ts";
import { retrieve } from "../_shared/services/retrieval.ts";
import { assembleContext } from "../_shared/context/assemble.ts";
import { AssembleRequest } from "../_shared/context/schemas.ts";
import { runInBackground } from "../_shared/jobs.ts";
import type { Answer, ToolContext } from "./results.ts";
import * as text from "./text.ts";
import { type ToolConfig, toolServer, type ToolSpec } from "./tool-server.ts";

export const SERVER_INFO = { name: "devai-memory", version: "0.1.0" };

const INSTRUCTIONS = "Long-term memory for this user's coding work. Call search_memory before answering questions " +
  "about the project, its conventions, commands, decisions or past fixes; remember_fact when the user states something " +
  "to keep; correct_fact when a memory is wrong; confirm_fact when the user confirms one. Ids in results are memory ids.";

/** The tools that change memories: charged to the tenant's write budget (the others: read). */
export const WRITE_TOOLS = new Set([
  "remember_fact",
  "correct_fact",
  "confirm_fact",
  "forget_memory",
  "restore_memory",
]);

/** The rate-limit class of an MCP request (one message, never a batch): write when it calls a tool that writes. */
export function routeClassOf(message: unknown): RouteClass {
  const call = message as { method?: unknown; params?: { name?: unknown } } | null;
  const writes = call?.method === "tools/call" && typeof call.params?.name === "string" &&
    WRITE_TOOLS.has(call.params.name);
  return writes ? "write" : "read";
}

/**
 * A request that runs no tool (initialize, ping, tools/list, a method not found): it reads no table,
 * so handler.ts charges it before the SDK runs it. A notification or a response runs nothing.
 */
export function runsNoTool(message: unknown): boolean {
  const m = message as { id?: unknown; method?: unknown };
  return m.id !== undefined && typeof m.method === "string" && m.method !== "tools/call";
}

const memoryId = { id: uuid.describe("the memory's id, as search_memory and remember_fact show it") };
const EntityInput = EntityListQuery.omit({ limit: true, cursor: true }).extend({
  id: uuid.optional().describe("the entity's id"),
})
  .refine((e) => (e.id === undefined) !== (e.q === undefined), {
    message: "give the entity's id or its name (q), one of them",
  });

/**
 * Each tool's input: the HTTP API's schema for the operation, the id added where its route takes
 * one in the path. tools/list shows it; a call's arguments are checked against it once
 * (tool-server.ts), as the API checks a body: a bad argument is the API's 400 as a tool error.
 */
export const TOOL_INPUTS = {
  search_memory: RetrieveRequest,
  query_memory: QueryRequest.omit({ agent: true }),
  remember_fact: RememberRequest,
  correct_fact: CorrectRequest.extend(memoryId),
  confirm_fact: LifecycleRequest.extend(memoryId),
  forget_memory: ForgetRequest.extend(memoryId),
  restore_memory: LifecycleRequest.extend(memoryId),
  explain_fact: z.object(memoryId).strict(),
  memory_stats: StatsQuery,
  weak_facts: WeakQuery,
  memory_history: HistoryQuery.extend(memoryId),
  get_entity_info: EntityInput,
  assemble_context: AssembleRequest,
} satisfies Record<string, z.ZodType>;

type ToolName = keyof typeof TOOL_INPUTS;

/** One MCP server per request (stateless streamable HTTP), its tools bound to the request's caller. */
export function createMcpServer(ctx: ToolContext): Server {
  const { deps, caller } = ctx;
  const tools = new Map<string, ToolSpec>();

  const tool = <N extends ToolName>(
    name: N,
    config: ToolConfig,
    run: (input: z.infer<(typeof TOOL_INPUTS)[N]>) => Promise<Answer>,
  ) => {
    // McpServer refused a second tool of one name; a Map would silently keep the last.
    if (tools.has(name)) throw new Error(`memory-mcp: two tools named '${name}'`);
    tools.set(name, { ...config, input: TOOL_INPUTS[name], run: run as (input: unknown) => Promise<Answer> });
  };

  tool("search_memory", {
    title: "Search memory",
    description:
      "Hybrid search (keyword + vector + graph) of the user's memories for a message or question, scoped to " +
      "global, user and the project's memories. Returns the `## Relevant Memories` block packed into budget_tokens and " +
      "every memory found with the signals that found it. Filters: after/before (ISO date or last_week, last_N_days …), " +
      "mode, intent, graph_depth, as_of. Memories it injects are reinforced.",
    // Not read-only: what it returns is reinforced (strength, access count).
    readOnly: false,
  }, async (input) => {
    const { result } = await retrieve(deps, caller, input);
    return { text: text.searchText(result), structured: result };
  });

  tool("query_memory", {
    title: "Query memory as this agent",
    description:
      "memory.query: the memories this agent's allowlist lets it read (categories such as conventions, commands, " +
      "errors_and_fixes), as bullets or full rows, with metadata filters. The agent is the token's (an agent token) or " +
      "the x-devai-agent header's.",
    // Not read-only: what it returns is reinforced (strength, access count).
    readOnly: false,
  }, async (input) => {
    if (!caller.agent) {
      throw new HttpError(
        400,
        "agent_required",
        "query_memory needs the agent: use an agent token, or send the x-devai-agent header",
      );
    }
    const { result } = await queryMemories(deps, caller, { ...input, agent: caller.agent });
    return { text: text.queryText(result), structured: result };
  });

  tool("remember_fact", {
    title: "Remember a fact",
    description:
      "Stores what the user states as a memory (highest priority, never decays). With project it goes to that " +
      "project's scope; scope 'global' for every project; else the user's scope. An exact duplicate writes nothing.",
  }, async (input) => {
    const result = await remember(deps, caller, input);
    return { text: text.rememberText(result), structured: result };
  });

  tool("correct_fact", {
    title: "Correct a fact",
    description:
      "Replaces memory `id` with the corrected content: a new memory supersedes it (the old one stays in the " +
      "history, its validity closed).",
  }, async ({ id, ...body }) => {
    const result = await correct(deps, caller, id, body);
    return { text: text.correctText(result), structured: result };
  });

  tool("confirm_fact", {
    title: "Confirm a fact",
    description: "The user confirms memory `id` is true: it is pinned at full strength and never decays.",
  }, async ({ id, ...body }) => {
    const result = await confirm(deps, caller, id, body);
    return { text: text.confirmText(result), structured: result };
  });

  tool("forget_memory", {
    title: "Forget a memory",
    description: "Soft-deletes memory `id`: it leaves retrieval at once and is purged after the grace period unless " +
      "restore_memory brings it back.",
    destructive: true,
  }, async ({ id, ...body }) => {
    const result = await forget(deps, caller, id, body);
    return { text: text.forgetText(result), structured: result };
  });

  tool("restore_memory", {
    title: "Restore a memory",
    description: "Brings back memory `id` after forget_memory (or after it decayed away), at restored strength.",
  }, async ({ id, ...body }) => {
    const result = await restore(deps, caller, id, body);
    return { text: text.restoreText(result), structured: result };
  });

  tool("explain_fact", {
    title: "Explain a fact",
    description:
      "Why memory `id` is what it is: the messages it was derived from, what it replaced and what replaced it, " +
      "the entities it mentions, its edges, history and decay outlook.",
    readOnly: true,
  }, async ({ id }) => {
    const result = await explainFact(deps, caller, id);
    return { text: text.explainText(result), structured: result };
  });

  tool("memory_stats", {
    title: "Memory statistics",
    description:
      "Counts of the user's memories by type, state, validity, priority, source and namespace; relations and history.",
    readOnly: true,
  }, async (input) => {
    const result = await stats(deps, caller, input);
    return { text: text.statsText(result), structured: result };
  });

  tool("weak_facts", {
    title: "Weak facts",
    description:
      "The memories that decay soonest (not pinned, not user-stated), weakest first, with when each will be " +
      "pruned: candidates to confirm_fact or to let go.",
    readOnly: true,
  }, async (input) => {
    const result = await weakFacts(deps, caller, input);
    return { text: text.weakText(result), structured: result };
  });

  tool("memory_history", {
    title: "Memory history",
    description:
      "The audit trail of memory `id`, newest first: every change with its event and actor (it outlives a purge). " +
      "A page at a time: pass the answer's next_cursor as `cursor` for older events.",
    readOnly: true,
  }, async ({ id, ...query }) => {
    const result = await memoryHistory(deps, caller, id, query);
    return { text: text.historyText(result), structured: result };
  });

  tool("get_entity_info", {
    title: "Entity profile",
    description:
      "What memory knows of an entity (a file, package, service, command, error, person …) by id or by name " +
      "(q: name, alias or prefix; type narrows it): its summary, the facts that mention it, the messages that named it.",
    readOnly: true,
  }, async (input) => {
    let id = input.id;
    if (id === undefined) {
      const [best] = (await entities(deps, caller, { q: input.q!, type: input.type, limit: 1 })).entities;
      if (!best) throw new HttpError(404, "not_found", `no entity matches '${input.q}'`);
      id = best.id;
    }
    const result = await entityInfo(deps, caller, id);
    return { text: text.entityText(result), structured: result };
  });

  tool("assemble_context", {
    title: "Assemble the working context",
    description:
      "Living context for the task at hand: at most `budget` tokens (default 8,000) in four tiers (critical, " +
      "relevant, background, index) from the message, the coding signals (current_file, open_files, recent_errors, " +
      "activity) and the repository's lineage (branch, merged branches, deleted files): another branch's unmerged notes " +
      "are never injected as fact. Each memory at the compression its tier can afford.",
    // Not read-only: what it returns is reinforced (strength, access count).
    readOnly: false,
  }, async (input) => {
    // The assembly's record (reinforcement, injections) is written after the answer, as the context function does.
    const after = {
      ...deps,
      defer: (work: Promise<unknown>) => runInBackground(() => work, "assemble_context record"),
    };
    const result = await assembleContext(after, caller, input);
    return { text: text.contextText(result), structured: result };
  });

  // messages.ts admits a call by TOOL_INPUTS' names: each must be a tool, and each tool one of them.
  const missing = Object.keys(TOOL_INPUTS).filter((name) => !tools.has(name));
  if (missing.length > 0) throw new Error(`memory-mcp: no tool for ${missing.join(", ")}`);
  return toolServer(ctx, { info: SERVER_INFO, instructions: INSTRUCTIONS }, tools);
}
