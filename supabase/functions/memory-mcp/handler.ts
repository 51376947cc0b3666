// memory-mcp: the memory as an MCP server for coding agents (docs/mcp.md), over streamable HTTP in
// stateless mode (the official SDK's web-standard transport; every POST carries one JSON-RPC message
// and is answered on its own, with JSON), at /functions/v1/memory-mcp:
//
//   POST /memory-mcp                                          JSON-RPC: initialize, ping, tools/list, tools/call
//   GET  /memory-mcp/.well-known/oauth-protected-resource     RFC 9728 metadata (no credential needed)
//   GET, DELETE /memory-mcp                                   405: no server-sent stream, no session
//
// The same credentials as the HTTP API (docs/auth.md); none or a bad one is a 401 with a
// WWW-Authenticate header pointing at the metadata. The tools (tools.ts) run the operations of
// _shared/services/, so RLS, allowlists and history are the HTTP API's.
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { ErrorCode } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { createFunctionApp, fetchHandler } from "../_shared/app.ts";
import { authenticate, type Caller } from "../_shared/auth.ts";
import { chargeRequest } from "../_shared/db.ts";
import { HttpError, json, methodNotAllowed, parseJsonBody } from "../_shared/http.ts";
import { chargedAs } from "../_shared/rate-limit.ts";
import { type MemoryDeps, withClock } from "../_shared/services/deps.ts";
import { memoryDepsFromEnv } from "../_shared/worker-deps.ts";
import { notAcceptable, withMcpAccept } from "./accept.ts";
import { rpcError, screenMessage, withoutTask } from "./messages.ts";
import { FUNCTION_NAME, METADATA_PATH, protectedResourceMetadata, wwwAuthenticate } from "./protected-resource.ts";
import { wantsStructuredContent } from "./results.ts";
import { createMcpServer, routeClassOf, runsNoTool } from "./tools.ts";

/** Production dependencies from the environment (index.ts; the local functions server brings its own). */
export const defaultDeps = (): MemoryDeps => memoryDepsFromEnv("devai-memory:memory-mcp");

export function createHandler(deps: MemoryDeps): (req: Request) => Promise<Response> {
  const services = withClock(deps);
  const app = createFunctionApp<{ caller: Caller }>();

  app.get(METADATA_PATH, (c) => json(protectedResourceMetadata(deps.config, c.req.raw)));

  app.post(`/${FUNCTION_NAME}`, async (c) => {
    let caller: Caller;
    try {
      caller = await authenticate(c.req.raw, deps.config, deps.sql);
    } catch (err) {
      // A client that can sign in learns where from the header (MCP authorization, RFC 9728).
      if (err instanceof HttpError && err.status === 401) {
        const header = wwwAuthenticate(deps.config, c.req.raw, err.code, err.message);
        throw new HttpError(401, err.code, err.message, err.issues, { ...err.headers, "www-authenticate": header });
      }
      throw err;
    }
    const structured = wantsStructuredContent(c.req.raw);
    let message: unknown;
    try {
      message = await parseJsonBody(c.req.raw, z.unknown(), deps.config.maxBodyBytes, { ignoreQuery: true });
    } catch (err) {
      // Text that is no JSON is JSON-RPC's Parse error (-32700); 413 and 415 stay HTTP's.
      if (err instanceof HttpError && err.code === "malformed_json") {
        return rpcError(null, ErrorCode.ParseError, `Parse error: ${err.message}`);
      }
      throw err;
    }
    // What the SDK would answer wrongly (a batch, a request without an id, bad params: messages.ts;
    // an Accept header read as text, not as HTTP: accept.ts) is answered here, and nothing runs.
    const screened = screenMessage(message) ?? notAcceptable(c.req.raw);
    if (screened) return screened;
    return await chargedAs(routeClassOf(message), async () => {
      // A request no tool answers (initialize, ping, tools/list, a method not found) sends no tenant
      // statement to take the request's token with: it is taken here. They ran unlimited.
      if (runsNoTool(message)) await chargeRequest(deps.sql, caller);
      const server = createMcpServer({ deps: services, caller, requestId: c.get("requestId"), structured });
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      await server.connect(transport);
      try {
        return await transport.handleRequest(withMcpAccept(c.req.raw), { parsedBody: withoutTask(message) });
      } finally {
        await server.close();
      }
    });
  });

  app.all(`/${FUNCTION_NAME}`, () => {
    throw methodNotAllowed(["POST"]);
  });
  return fetchHandler(app);
}
