// memory-mcp's tools/list states the bounds of every numeric argument (minimum and maximum) and its
// default (what a call without it gets), and
// they are the bounds tools/call enforces: the bound itself is accepted, a value just past it is the
// API's 400 (invalid_request) as a tool error naming the argument. A client (or a model) that reads
// the schema then sends what the server takes. Before, `limit` and `top_namespaces` (the
// query-string integers of memory_history, weak_facts and memory_stats) showed an integer of any
// size or a string: an agent learned their bounds only from a refusal.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  MAX_HISTORY_LIMIT,
  MAX_PAGE_LIMIT,
  MAX_TOP_NAMESPACES,
} from "../supabase/functions/_shared/memories/schemas.ts";
import { TOOL_INPUTS } from "../supabase/functions/memory-mcp/tools.ts";
import { userToken } from "./support/auth.ts";
import { startTestServer } from "./support/http_server.ts";
import { newTenant } from "./support/seed.ts";

interface JsonSchema {
  type?: string;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  anyOf?: JsonSchema[];
  items?: JsonSchema;
}

interface NumericArgument {
  path: string[];
  integer: boolean;
  minimum?: number;
  maximum?: number;
}

/** Every numeric argument a schema shows, nested objects and nullable forms (anyOf) included. */
function numericArguments(schema: JsonSchema, path: string[] = []): NumericArgument[] {
  if (schema.type === "integer" || schema.type === "number") {
    return [{ path, integer: schema.type === "integer", minimum: schema.minimum, maximum: schema.maximum }];
  }
  return [
    ...Object.entries(schema.properties ?? {}).flatMap(([k, s]) => numericArguments(s, [...path, k])),
    ...(schema.anyOf ?? []).flatMap((s) => numericArguments(s, path)),
    ...(schema.items ? numericArguments(schema.items, [...path, "0"]) : []),
  ];
}

/** What each tool needs besides the argument under test (an unknown memory id is a 404, past validation). */
const REQUIRED: Record<string, Record<string, unknown>> = {
  search_memory: { message: "How do the tests run?" },
  query_memory: { query: "How do the tests run?" },
  remember_fact: { content: "The bounds test writes this fact." },
  memory_history: { id: crypto.randomUUID() },
};

const withValue = (base: Record<string, unknown>, path: string[], value: number): Record<string, unknown> => {
  const [key, ...rest] = path;
  if (rest.length === 0) return { ...base, [key!]: value };
  return { ...base, [key!]: withValue((base[key!] ?? {}) as Record<string, unknown>, rest, value) };
};

Deno.test("mcp: tools/list states each numeric argument's bounds, the bounds tools/call enforces", async () => {
  const server = await startTestServer({ worker: false });
  const client = new Client({ name: "devai-memory-tests", version: "0.0.0" });
  try {
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${server.functionsUrl}/memory-mcp`), {
        requestInit: { headers: { authorization: `Bearer ${await userToken(newTenant())}` } },
      }),
    );
    const refusal = async (name: string, args: Record<string, unknown>) => {
      const r = await client.callTool({ name, arguments: args }) as { isError?: boolean; content: { text: string }[] };
      const text = r.content[0]?.text ?? "";
      return r.isError && /\binvalid_request\b/.test(text) ? text : undefined;
    };

    const checked: string[] = [];
    const defaults: string[] = [];
    for (const tool of (await client.listTools()).tools) {
      const schema = tool.inputSchema as JsonSchema;
      for (const arg of numericArguments(schema)) {
        const what = `${tool.name} ${arg.path.join(".")}`;
        assert.ok(arg.minimum !== undefined && arg.maximum !== undefined, `${what} states its bounds`);
        const base = REQUIRED[tool.name] ?? {};
        for (const field of schema.required ?? []) assert.ok(field in base, `${what}: the test gives ${field}`);
        // The value a call without the argument gets is the schema's `default` (tools/list dropped
        // it for limit and top_namespaces: their default sat outside the text-to-integer step).
        if (arg.path.length === 1) {
          const input = TOOL_INPUTS[tool.name as keyof typeof TOOL_INPUTS];
          const parsed = input.safeParse(base);
          const given = parsed.success ? (parsed.data as Record<string, unknown>)[arg.path[0]!] : undefined;
          const listed = schema.properties?.[arg.path[0]!]?.default;
          assert.equal(listed, given, `${what}: tools/list shows the default a call gets`);
          if (given !== undefined) defaults.push(`${what} ${given}`);
        }
        const step = arg.integer ? 1 : 0.001;
        for (const [bound, past] of [[arg.minimum!, arg.minimum! - step], [arg.maximum!, arg.maximum! + step]]) {
          const atBound = await refusal(tool.name, withValue(base, arg.path, bound!));
          assert.equal(atBound, undefined, `${what} = ${bound} is advertised, so accepted`);
          const pastBound = await refusal(tool.name, withValue(base, arg.path, past!));
          assert.ok(
            pastBound?.includes(arg.path.at(-1)!),
            `${what} = ${past} is past the bound: refused, ${pastBound}`,
          );
        }
        checked.push(`${what} ${arg.minimum}..${arg.maximum}`);
      }
    }
    // The query-string integers are among them, with their pages' caps (memories/schemas.ts).
    for (
      const stated of [
        `memory_history limit 1..${MAX_HISTORY_LIMIT}`,
        `weak_facts limit 1..${MAX_PAGE_LIMIT}`,
        `memory_stats top_namespaces 1..${MAX_TOP_NAMESPACES}`,
      ]
    ) assert.ok(checked.includes(stated), `${stated} in ${checked.join(", ")}`);
    for (const stated of ["memory_history limit 50", "weak_facts limit 20", "memory_stats top_namespaces 20"]) {
      assert.ok(defaults.includes(stated), `${stated} in ${defaults.join(", ")}`);
    }
  } finally {
    await client.close();
    await server.close();
  }
});
