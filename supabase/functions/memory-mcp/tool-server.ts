// The MCP server of memory-mcp's tools (tools.ts): tools/list shows each tool's input schema, and
// tools/call checks the call's arguments against it once, as the HTTP API checks a body (validate:
// the API's 400, as a tool error), then runs the tool. On the SDK's low-level Server, not its
// McpServer: McpServer checks the arguments itself before a tool runs and answers a bare "Input
// validation error" text, so they were checked twice (messages.ts first, for the API's 400).
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { toJsonSchemaCompat } from "@modelcontextprotocol/sdk/server/zod-json-schema-compat.js";
import {
  type CallToolRequest,
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import type { z } from "zod";
import { HttpError, INVALID_BODY, validate } from "../_shared/http.ts";
import { argumentDescription } from "./arguments.ts";
import { type Answer, answer, type ToolContext } from "./results.ts";

export interface ToolConfig {
  title: string;
  description: string;
  readOnly?: boolean;
  destructive?: boolean;
}

export interface ToolSpec extends ToolConfig {
  input: z.ZodObject;
  /** Runs with the arguments `input` parsed. */
  run: (input: unknown) => Promise<Answer>;
}

/** A tool's JSON Schema with what each argument means (arguments.ts), where its zod schema does not say. */
function described(tool: string, schema: Record<string, unknown>): Tool["inputSchema"] {
  const properties = schema.properties as Record<string, Record<string, unknown>> | undefined;
  for (const [name, property] of Object.entries(properties ?? {})) {
    property.description ??= argumentDescription(tool, name);
  }
  withoutFormatPatterns(schema);
  return schema as Tool["inputSchema"];
}

/**
 * zod writes the regular expression it checks beside a `format` (date-time, date, uuid): 17 of them,
 * 3.9 KB of the tools/list answer a client puts in the model's context, saying no more to a model than
 * the format does. The arguments are still checked by the zod schema itself (tools/call).
 */
function withoutFormatPatterns(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(withoutFormatPatterns);
  if (node === null || typeof node !== "object") return;
  const schema = node as Record<string, unknown>;
  if (typeof schema.format === "string" && typeof schema.pattern === "string") delete schema.pattern;
  Object.values(schema).forEach(withoutFormatPatterns);
}

/** A server answering tools/list and tools/call with `tools`, bound to the request's caller (ctx). */
export function toolServer(
  ctx: ToolContext,
  about: { info: { name: string; version: string }; instructions: string },
  tools: ReadonlyMap<string, ToolSpec>,
): Server {
  const server = new Server(about.info, {
    // No listChanged: a stateless server has no stream to send notifications/tools/list_changed on
    // (GET is 405), and its tools change only with a deploy.
    capabilities: { tools: {} },
    instructions: about.instructions,
  });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [...tools].map(([name, t]): Tool => ({
      name,
      title: t.title,
      description: t.description,
      // As McpServer lists a zod schema.
      inputSchema: described(name, toJsonSchemaCompat(t.input, { strictUnions: true, pipeStrategy: "input" })),
      annotations: { readOnlyHint: t.readOnly ?? false, destructiveHint: t.destructive ?? false, openWorldHint: false },
      execution: { taskSupport: "forbidden" }, // no tool runs as an MCP task
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async ({ params }: CallToolRequest) => {
    const tool = tools.get(params.name); // a call of no tool of ours was answered by messages.ts
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `no tool is named '${params.name}': tools/list names them`);
    // Missing arguments are {}, as the SDK has them.
    const what = `arguments of ${params.name}`;
    return await answer(ctx, async () => {
      try {
        return await tool.run(validate(tool.input, params.arguments ?? {}, what));
      } catch (err) {
        // A value the schema lets through and the operation refuses (an `after` that names no time)
        // is the HTTP API's "invalid request body": here there is no body, only the tool's arguments.
        if (err instanceof HttpError && err.message === INVALID_BODY) {
          throw new HttpError(err.status, err.code, `invalid ${what}`, err.issues, err.headers);
        }
        throw err;
      }
    });
  });
  return server;
}
