// What memory-mcp answers itself, before the SDK's transport and server see a POST's message: the
// cases the SDK (1.32.2) gets wrong, answered as JSON-RPC 2.0 and docs/mcp.md#errors say.
//
//   - a batch (an array): refused whole, -32600; a request is charged one rate-limit token.
//   - JSON that is no JSON-RPC message ({}, 42, "id": null, "params": null): -32600 Invalid
//     Request (the SDK says -32700 Parse error, which is for text that is not JSON); a request whose
//     params fail the schema all requests share (_meta.progressToken an object): -32602 to its id.
//   - a request method (tools/call, initialize, ping …) without an id: -32600. The SDK takes it as
//     a notification, answers 202 Accepted and runs nothing, so a client would think it had written.
//   - params the SDK's request schema refuses (tools/call without params, arguments null or a
//     string): -32602 Invalid params with what to send (the SDK says -32603 with a zod dump); so is
//     a tools/call naming no tool, as MCP says (the SDK made it a tool error), and a tools/list
//     with a cursor, which this server never issues (the SDK ignored it), and arguments holding a
//     "__proto__" key (the SDK dropped it and ran the tool; the HTTP API refuses it, 400).
//   - a request augmented with a task (params.task, MCP 2025-11-25): run as a plain request, the
//     task ignored, as MCP says of a server without the tasks capability (the SDK answered -32603
//     "Server does not support task creation" to any request carrying one, ping included).
// A refused message is never run. What passes goes to the SDK, whose own checks then pass too. A
// tool's arguments are checked once, when the call runs (tool-server.ts): the HTTP API's 400 as a tool error.
import {
  CallToolRequestSchema,
  ClientRequestSchema,
  ErrorCode,
  InitializeRequestSchema,
  JSONRPCMessageSchema,
  JSONRPCRequestSchema,
  ListToolsRequestSchema,
  PingRequestSchema,
  RequestIdSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { json } from "../_shared/http.ts";
import { issuesText } from "../_shared/issue-text.ts";
import { TOOL_INPUTS } from "./tools.ts";

type RequestId = string | number;

/** What this file needs of the SDK's request schemas (zod, of the SDK's own zod). */
interface RequestSchema {
  safeParse(value: unknown): { success: boolean; error?: { issues: { path: PropertyKey[]; message: string }[] } };
}

/** Every request MCP defines for a client: each is answered, so each needs an id. */
const REQUEST_METHODS = new Set<string>(
  ClientRequestSchema.options.map((s: { shape: { method: { value: string } } }) => s.shape.method.value),
);

/**
 * The requests this server answers, with the schema the SDK parses each with: initialize and ping
 * (the SDK's Server), tools/list and tools/call (tools.ts). Any other method is the SDK's
 * -32601 Method not found, whatever its params.
 */
const ANSWERED = new Map<string, RequestSchema>(
  [InitializeRequestSchema, PingRequestSchema, ListToolsRequestSchema, CallToolRequestSchema]
    .map((s) => [s.shape.method.value, s]),
);

const NOT_JSON_RPC = "Invalid Request: the body is JSON but no JSON-RPC 2.0 message: an object with jsonrpc " +
  '"2.0", a method, params (an object) if any, and an id (a string or an integer) if it is a request';

/**
 * A JSON-RPC error response. To a request with an id it is the request's answer, HTTP 200 as the SDK
 * answers its own (-32601 …): the client reads it as the request's error. To a message with no id
 * to answer it is id null (JSON-RPC 2.0 §5) and a 400: MCP's streamable HTTP refuses input it does
 * not accept with an HTTP error status.
 */
export function rpcError(id: RequestId | null, code: ErrorCode, message: string): Response {
  return json({ jsonrpc: "2.0", id, error: { code, message } }, id === null ? 400 : 200);
}

/** The answer memory-mcp gives a message itself, or undefined: the SDK answers it. */
export function screenMessage(message: unknown): Response | undefined {
  if (Array.isArray(message)) {
    return rpcError(
      null,
      ErrorCode.InvalidRequest,
      "JSON-RPC batches are not accepted: send one message per POST (MCP 2025-06-18 has no batching)",
    );
  }
  if (!JSONRPCMessageSchema.safeParse(message).success) {
    // A request whose envelope is right (jsonrpc, a method, an id) but whose params fail the
    // schema every request shares (`_meta.progressToken` an object) is answered to its id, -32602.
    const id = requestIdOf(message);
    if (id === undefined) return rpcError(null, ErrorCode.InvalidRequest, NOT_JSON_RPC);
    const method = (message as { method: string }).method;
    const problems = schemaProblems(JSONRPCRequestSchema, message) ?? "params do not match the request's schema";
    return rpcError(id, ErrorCode.InvalidParams, `Invalid params of ${method}: ${problems}`);
  }
  const m = message as { id?: RequestId; method?: string; params?: Record<string, unknown> };
  if (m.method === undefined) return undefined; // a response to a server request: the SDK's
  if (m.id === undefined) {
    if (!REQUEST_METHODS.has(m.method)) return undefined; // a notification: 202
    return rpcError(
      null,
      ErrorCode.InvalidRequest,
      `Invalid Request: ${m.method} is a request and needs an id (a string or an integer); without one it ` +
        "would be a notification, which is never answered: nothing was run",
    );
  }
  const schema = ANSWERED.get(m.method);
  if (!schema) return undefined;
  const invalid = (m.method === "tools/call" ? invalidToolCall(m.params) : undefined) ??
    schemaProblems(schema, message) ?? (m.method === "tools/list" ? cursorProblem(m.params) : undefined);
  if (invalid) return rpcError(m.id, ErrorCode.InvalidParams, `Invalid params of ${m.method}: ${invalid}`);
  return undefined;
}

/**
 * The id of a message that is a JSON-RPC request but for its params (an object with jsonrpc "2.0", a
 * string method, params an object if any, and an id the SDK takes), else undefined.
 */
function requestIdOf(message: unknown): RequestId | undefined {
  if (typeof message !== "object" || message === null || Array.isArray(message)) return undefined;
  const m = message as Record<string, unknown>;
  if (m.jsonrpc !== "2.0" || typeof m.method !== "string") return undefined;
  if (m.params !== undefined && (typeof m.params !== "object" || m.params === null || Array.isArray(m.params))) {
    return undefined;
  }
  const id = RequestIdSchema.safeParse(m.id);
  return id.success ? id.data : undefined;
}

/** Where a message misses its method's schema, one "path: problem" per issue (not the SDK's zod dump). */
function schemaProblems(schema: RequestSchema, message: unknown): string | undefined {
  const { success, error } = schema.safeParse(message);
  if (success || !error) return undefined;
  return issuesText(error.issues, "(message)");
}

/**
 * tools/list answers every tool in one page and never issues a cursor, so any cursor is one it did
 * not issue: MCP's pagination asks for -32602 (it was ignored, the whole list answered).
 */
function cursorProblem(params: Record<string, unknown> | undefined): string | undefined {
  if (params?.cursor === undefined) return undefined;
  return "params.cursor: tools/list answers every tool in one page and issues no cursor; send it without one";
}

/** What is wrong with a tools/call's params, in words a client's author can act on. */
function invalidToolCall(params: Record<string, unknown> | undefined): string | undefined {
  if (params === undefined) return "tools/call needs params: {name: the tool's name, arguments: an object}";
  const { name, arguments: args } = params;
  if (typeof name !== "string") return "params.name must be the tool's name, a string";
  if (!Object.hasOwn(TOOL_INPUTS, name)) return `no tool is named '${name}': tools/list names them`;
  if (args !== undefined && (typeof args !== "object" || args === null || Array.isArray(args))) {
    const kind = args === null ? "null" : Array.isArray(args) ? "an array" : `a ${typeof args}`;
    return `params.arguments must be an object of ${name}'s arguments (or left out), not ${kind}`;
  }
  // JSON.parse keeps a "__proto__" key as a key, and the HTTP API refuses it as an unknown field;
  // the SDK's request schema rebuilds the arguments by assignment, which drops it without a word.
  if (args !== undefined && Object.hasOwn(args, "__proto__")) {
    return `params.arguments.__proto__: ${name} has no argument named __proto__`;
  }
  return undefined;
}

/**
 * The message as the SDK is given it: a request's task augmentation (params.task) left out. This
 * server declares no tasks capability, and MCP 2025-11-25 says such a server MUST run the request
 * normally, ignoring the task; the SDK refused it as an internal error (-32603). A message that
 * passed screenMessage, so params is an object if there.
 */
export function withoutTask(message: unknown): unknown {
  const m = message as { method?: unknown; params?: Record<string, unknown> };
  if (m.method === undefined || m.params === undefined || !Object.hasOwn(m.params, "task")) return message;
  const { task: _task, ...params } = m.params;
  return { ...m, params };
}
