// memory-mcp from the outside: the official MCP SDK client (streamable HTTP) against the real local
// functions server, as a coding agent's MCP client would call it. Tools are listed and each one is
// called; what they answer is what the HTTP API answers (the same operations); another tenant's
// token never sees a memory; no or a bad credential is a 401 with WWW-Authenticate pointing at the
// RFC 9728 metadata; bad input is a tool error that writes nothing; an agent token selects the
// allowlist memory.query applies; the tenant's rate limits apply per tool call (a JSON-RPC batch is
// refused whole).
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { STRUCTURED_CONTENT_HEADER } from "../supabase/functions/memory-mcp/results.ts";
import { userToken } from "./support/auth.ts";
import { functionJson, type RunningServer, startTestServer } from "./support/http_server.ts";
import { overrideSettings } from "./support/lifecycle.ts";
import { flushSearchWrites } from "../supabase/functions/_shared/retrieval/write-behind.ts";
import { newTenant, seedMemory, tenantWrites, testSql } from "./support/seed.ts";
import { assertWaitForNextToken } from "./support/refill.ts";

const TOOLS = [
  "assemble_context",
  "confirm_fact",
  "correct_fact",
  "explain_fact",
  "forget_memory",
  "get_entity_info",
  "memory_history",
  "memory_stats",
  "query_memory",
  "remember_fact",
  "restore_memory",
  "search_memory",
  "weak_facts",
];

interface ToolResult {
  content: { type: string; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

/** A client that asks for each result's HTTP answer as structured content, unless `headers` says otherwise. */
async function connect(server: RunningServer, headers: Record<string, string>): Promise<Client> {
  const client = new Client({ name: "devai-memory-tests", version: "0.0.0" });
  const asked = { [STRUCTURED_CONTENT_HEADER]: "true", ...headers };
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${server.functionsUrl}/memory-mcp`), {
      requestInit: { headers: asked },
    }),
  );
  return client;
}

async function asUser(server: RunningServer, tenant: string, extra: Record<string, string> = {}): Promise<Client> {
  return await connect(server, { authorization: `Bearer ${await userToken(tenant)}`, ...extra });
}

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<ToolResult> {
  return await client.callTool({ name, arguments: args }) as ToolResult;
}

/** A successful tool result: its text and structured content. */
async function ok(
  client: Client,
  name: string,
  args: Record<string, unknown>,
): Promise<{ text: string; data: Record<string, unknown> }> {
  const result = await call(client, name, args);
  assert.ok(!result.isError, `${name} failed: ${result.content[0]?.text}`);
  assert.equal(result.content[0]?.type, "text");
  assert.ok(result.structuredContent, `${name} has structured content`);
  return { text: result.content[0]!.text, data: result.structuredContent };
}

/** A tool error carrying the API's error code. */
async function toolError(client: Client, name: string, args: Record<string, unknown>, code: string): Promise<string> {
  const result = await call(client, name, args);
  assert.equal(result.isError, true, `${name} should fail with ${code}: ${result.content[0]?.text}`);
  const text = result.content[0]?.text ?? "";
  assert.match(text, new RegExp(`\\b${code}\\b`), text);
  return text;
}

const httpJson = (server: RunningServer, path: string, token: string, body?: unknown) =>
  functionJson(server, path, { authorization: `Bearer ${token}` }, body);

async function withServer(fn: (server: RunningServer) => Promise<void>) {
  const server = await startTestServer({ worker: false });
  try {
    await fn(server);
  } finally {
    await server.close();
  }
}

Deno.test("mcp: tools/list names every tool, each with its strict input schema", async () => {
  await withServer(async (server) => {
    const client = await asUser(server, newTenant());
    try {
      const tools: Tool[] = (await client.listTools()).tools;
      assert.deepEqual(tools.map((t) => t.name).sort(), TOOLS);
      for (const t of tools) {
        assert.ok(t.description && t.description.length > 40, `${t.name} is described`);
        assert.equal(t.inputSchema.type, "object");
        assert.equal(
          (t.inputSchema as { additionalProperties?: boolean }).additionalProperties,
          false,
          `${t.name} refuses unknown fields`,
        );
        // A model fills the arguments from tools/list alone: each says what it is for, not only its type.
        const properties = (t.inputSchema.properties ?? {}) as Record<string, { description?: string }>;
        for (const [name, property] of Object.entries(properties)) {
          assert.ok((property.description ?? "").length > 10, `${t.name}'s argument ${name} is described`);
        }
      }
      // A format (date-time, date, uuid) is not repeated as zod's regular expression (3.9 KB of the list).
      const formatPatterns = JSON.stringify(tools).match(/"format":"[a-z-]+","pattern"/g) ?? [];
      assert.deepEqual(formatPatterns, []);
      // get_entity_info answers one entity: it takes no cursor of the entities listing (one was ignored).
      const entity = tools.find((t) => t.name === "get_entity_info")!;
      assert.deepEqual(Object.keys(entity.inputSchema.properties ?? {}).sort(), ["id", "q", "type"]);
      const search = tools.find((t) => t.name === "search_memory")!;
      assert.deepEqual((search.inputSchema as { required?: string[] }).required, ["message"]);
      // Searches reinforce what they return: not read-only; explain, stats, history … are.
      const readOnly = tools.filter((t) => t.annotations?.readOnlyHint).map((t) => t.name).sort();
      assert.deepEqual(readOnly, ["explain_fact", "get_entity_info", "memory_history", "memory_stats", "weak_facts"]);
      assert.equal(tools.find((t) => t.name === "forget_memory")!.annotations?.destructiveHint, true);
    } finally {
      await client.close();
    }
  });
});

Deno.test("mcp: remember_fact then search_memory finds it; another tenant's token never sees it", async () => {
  await withServer(async (server) => {
    const sql = testSql(2);
    const a = newTenant();
    const b = newTenant();
    const clientA = await asUser(server, a);
    const clientB = await asUser(server, b);
    try {
      const project = `mcp-${crypto.randomUUID().slice(0, 8)}`;
      const fact = "The storefront deploys with blue-green releases every Friday afternoon";
      const remembered = await ok(clientA, "remember_fact", { content: fact, project });
      const memory = remembered.data.memory as { id: string; namespace: string; content: string };
      assert.equal(remembered.data.created, true);
      assert.equal(memory.content, fact);
      assert.match(
        remembered.text,
        new RegExp(`Remembered as ${memory.id} in ${memory.namespace} \\(project ${project}\\)`),
      );
      assert.equal(remembered.data.project, project);

      const found = await ok(clientA, "search_memory", {
        message: "When does the storefront deploy its releases?",
        project,
      });
      assert.match(found.text, /## Relevant Memories/);
      assert.ok(found.text.includes(fact), found.text);
      const memories = found.data.memories as { id: string; injected: boolean; signals: Record<string, unknown> }[];
      assert.ok(memories.some((m) => m.id === memory.id && m.injected && Object.keys(m.signals).length > 0));
      assert.ok((found.data.search as { intent: string }).intent, "the search block says how it ran");

      // Tenant B: the same search finds nothing, and A's id is unknown to every tool.
      const other = await ok(clientB, "search_memory", {
        message: "When does the storefront deploy its releases?",
        project,
      });
      assert.ok(!other.text.includes(fact));
      assert.deepEqual((other.data.memories as unknown[]).length, 0);
      const beforeA = await tenantWrites(sql, a);
      await toolError(clientB, "explain_fact", { id: memory.id }, "not_found");
      await toolError(clientB, "confirm_fact", { id: memory.id }, "not_found");
      await toolError(clientB, "forget_memory", { id: memory.id }, "not_found");
      await toolError(clientB, "correct_fact", { id: memory.id, content: "B rewrites A's fact" }, "not_found");
      assert.deepEqual(await tenantWrites(sql, a), beforeA, "B's calls wrote nothing of A's");
    } finally {
      await clientA.close();
      await clientB.close();
      await sql.end();
    }
  });
});

Deno.test("mcp: every tool answers what the HTTP API answers for the same operation", async () => {
  await withServer(async (server) => {
    const tenant = newTenant();
    const token = await userToken(tenant);
    const client = await connect(server, { authorization: `Bearer ${token}`, "x-devai-agent": "coder" });
    try {
      const project = `tools-${crypto.randomUUID().slice(0, 8)}`;
      const first = await ok(client, "remember_fact", {
        content: "Run the test suite with npm test before pushing to main",
        project,
        metadata: { category: "commands" },
      });
      const id = (first.data.memory as { id: string }).id;

      const corrected = await ok(client, "correct_fact", {
        id,
        content: "Run the test suite with npm run test:ci before pushing",
        reason: "CI script",
      });
      const newId = (corrected.data.memory as { id: string }).id;
      assert.equal((corrected.data.superseded as { superseded_by: string }).superseded_by, newId);
      assert.match(corrected.text, new RegExp(`replaces ${id}`));

      const confirmed = await ok(client, "confirm_fact", { id: newId });
      assert.equal((confirmed.data.memory as { pinned: boolean }).pinned, true);
      const history = await ok(client, "memory_history", { id: newId, limit: 10 });
      assert.ok((history.data.history as { event: string }[]).some((e) => e.event === "CONFIRM"));
      assert.deepEqual(
        history.data,
        (await httpJson(server, `memory/${newId}/history?limit=10`, token)).body,
        "same rows as GET memory/{id}/history",
      );

      const forgotten = await ok(client, "forget_memory", { id: newId, reason: "testing forget" });
      assert.equal((forgotten.data.memory as { state: string }).state, "soft_deleted");
      const restored = await ok(client, "restore_memory", { id: newId });
      assert.equal((restored.data.memory as { state: string }).state, "active");
      assert.match((await ok(client, "restore_memory", { id: newId })).text, /active already: nothing changed/);

      const explained = await ok(client, "explain_fact", { id: newId });
      assert.deepEqual((explained.data.supersedes as { memory: { id: string } }[]).map((l) => l.memory.id), [id]);
      assert.match(explained.text, new RegExp(`Replaces \\[${id}\\]`));

      const stats = await ok(client, "memory_stats", { top_namespaces: 5 });
      assert.deepEqual(
        stats.data,
        (await httpJson(server, "memory/stats?top_namespaces=5", token)).body,
        "same numbers as GET memory/stats",
      );
      assert.match(stats.text, /^2 memories/);

      // The user's own facts never decay: a weak one is seeded, and both answers list it alone.
      const seeding = testSql(1);
      const weakOne = await seedMemory(seeding, tenant, {
        content: "The staging cache is flushed every Sunday night.",
        namespace: `devai/project/${project}/notes`,
        priority: "low",
        strength: 0.2,
      }).finally(() => seeding.end());
      const weakIds = (body: unknown) =>
        (body as { memories: { memory: { id: string } }[] }).memories.map((w) => w.memory.id);
      const weak = await ok(client, "weak_facts", { limit: 5 });
      assert.deepEqual(weakIds(weak.data), [weakOne.id]);
      assert.deepEqual(weakIds((await httpJson(server, "memory/weak?limit=5", token)).body), [weakOne.id]);

      // memory.query as the agent the header names (coder may read commands).
      const queried = await ok(client, "query_memory", {
        query: "how do I run the tests before pushing?",
        project,
        categories: ["commands"],
      });
      assert.ok((queried.data.results as { id: string }[]).some((r) => r.id === newId), queried.text);
      assert.equal(queried.data.agent, "coder");
      // The query reinforced what it found behind its answer: written now, so the two reads below
      // see the same access counts.
      await flushSearchWrites(server.sql);

      // The entity rules linked the command the fact mentions; found by name or by id.
      const byName = await ok(client, "get_entity_info", { q: "npm run test:ci" });
      const entity = byName.data.entity as { id: string; canonical_name: string };
      assert.ok((byName.data.facts as { id: string }[]).some((f) => f.id === newId), byName.text);
      const byId = await ok(client, "get_entity_info", { id: entity.id });
      assert.deepEqual(byId.data, (await httpJson(server, `memory/entities/${entity.id}`, token)).body);
      await toolError(client, "get_entity_info", { q: "no-such-entity-anywhere" }, "not_found");

      // Living context for the task: the project's command is in it, within the budget.
      const context = await ok(client, "assemble_context", {
        message: "how do I run the tests before pushing?",
        project,
        budget: 600,
        signals: { activity: "testing" },
      });
      assert.ok((context.data.context as string).includes("npm run test:ci"), context.text);
      assert.ok((context.data.token_count as number) <= 600);
      assert.match(context.text, /of 600 tokens/);
    } finally {
      await client.close();
    }
  });
});

Deno.test("mcp: a result is its text alone unless the client asks for structured content", async () => {
  // Claude Code and VS Code give the model a result's structured content instead of its text when it
  // has one: without the header a result is the text the model is meant to read.
  await withServer(async (server) => {
    const token = await userToken(newTenant());
    const plain = new Client({ name: "plain", version: "0" });
    await plain.connect(
      new StreamableHTTPClientTransport(new URL(`${server.functionsUrl}/memory-mcp`), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    const asking = await asUser(server, newTenant());
    const refusing = await connect(server, { authorization: `Bearer ${token}`, [STRUCTURED_CONTENT_HEADER]: "False" });
    try {
      const args = { content: "The text-only fact of the plain client", project: "p1" };
      const result = await call(plain, "remember_fact", args);
      assert.equal(result.structuredContent, undefined, JSON.stringify(result));
      assert.match(result.content[0]!.text, /^Remembered as [0-9a-f-]{36} in devai\/project\/p1\/notes/);
      assert.equal((await call(refusing, "memory_stats", {})).structuredContent, undefined);
      // Asked for, it is the HTTP answer; a tool error carries its error either way.
      const asked = await ok(asking, "remember_fact", args);
      assert.equal(asked.data.created, true);
      const error = await call(plain, "explain_fact", { id: crypto.randomUUID() });
      assert.equal((error.structuredContent as { error: { code: string } }).error.code, "not_found");
    } finally {
      await plain.close();
      await asking.close();
      await refusing.close();
    }
    // A value that is neither true nor false is refused before anything runs.
    const bad = await fetch(`${server.functionsUrl}/memory-mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        [STRUCTURED_CONTENT_HEADER]: "yes",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
    });
    assert.equal(bad.status, 400);
    const body = await bad.json();
    assert.equal(body.error.code, "invalid_request");
    assert.match(body.error.message, /x-devai-structured-content must be true or false/);
  });
});

Deno.test("mcp: no token or a bad one is a 401 with WWW-Authenticate naming the RFC 9728 metadata", async () => {
  await withServer(async (server) => {
    const url = `${server.functionsUrl}/memory-mcp`;
    const initialize = {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "curl", version: "0" } },
    };
    const post = (headers: Record<string, string>) =>
      fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
        body: JSON.stringify(initialize),
      });

    const none = await post({ origin: "http://localhost:3000" });
    assert.equal(none.status, 401);
    assert.equal((await none.json()).error.code, "missing_token");
    // A browser client may read the challenge (CORS exposes it).
    assert.match(none.headers.get("access-control-expose-headers") ?? "", /\bwww-authenticate\b/);
    const challenge = none.headers.get("www-authenticate") ?? "";
    const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1];
    assert.equal(metadataUrl, `${url}/.well-known/oauth-protected-resource`, challenge);

    const bad = await post({ authorization: "Bearer not-a-token" });
    assert.equal(bad.status, 401);
    await bad.body?.cancel();
    assert.match(bad.headers.get("www-authenticate") ?? "", /error="invalid_token"/);
    // The description is the 401's message in RFC 6750's characters: "dvm_…" became "dvm_...", not a 500.
    assert.match(
      bad.headers.get("www-authenticate") ?? "",
      /error_description="the token is not a valid JWT: .*dvm_\.\.\./,
    );
    const revoked = await post({ authorization: "Bearer dvm_not-an-issued-token" });
    assert.equal(revoked.status, 401);
    await revoked.body?.cancel();
    assert.match(revoked.headers.get("www-authenticate") ?? "", /error_description="the agent token is unknown/);

    const metadata = await fetch(metadataUrl!);
    assert.equal(metadata.status, 200);
    const doc = await metadata.json();
    assert.equal(doc.resource, url);
    assert.deepEqual(doc.bearer_methods_supported, ["header"]);

    // The SDK client cannot connect without a credential.
    const client = new Client({ name: "no-token", version: "0" });
    await assert.rejects(
      client.connect(new StreamableHTTPClientTransport(new URL(url))),
      (err: { code?: number; message?: string }) => err.code === 401 && /missing_token/.test(err.message ?? ""),
    );

    // A stateless server has no stream to open.
    const get = await fetch(url, {
      headers: { authorization: `Bearer ${await userToken(newTenant())}`, accept: "text/event-stream" },
    });
    assert.equal(get.status, 405);
    await get.body?.cancel();
  });
});

Deno.test("mcp: a browser client's preflight allows the MCP headers and the agent header", async () => {
  await withServer(async (server) => {
    const res = await fetch(`${server.functionsUrl}/memory-mcp`, {
      method: "OPTIONS",
      headers: {
        origin: "http://localhost:3000",
        "access-control-request-method": "POST",
        "access-control-request-headers":
          "authorization, content-type, mcp-protocol-version, mcp-session-id, x-devai-agent, x-devai-structured-content",
      },
    });
    await res.body?.cancel();
    assert.equal(res.status, 204);
    const allowed = (res.headers.get("access-control-allow-headers") ?? "").split(/,\s*/);
    const asked = ["authorization", "content-type", "mcp-protocol-version", "mcp-session-id", "x-devai-agent"];
    for (const header of [...asked, STRUCTURED_CONTENT_HEADER]) {
      assert.ok(allowed.includes(header), `${header} in ${allowed.join(", ")}`);
    }
    const exposed = (res.headers.get("access-control-expose-headers") ?? "").split(/,\s*/);
    for (const header of ["www-authenticate", "mcp-session-id"]) {
      assert.ok(exposed.includes(header), exposed.join(", "));
    }
  });
});

Deno.test("mcp: bad input is a tool error that writes nothing", async () => {
  await withServer(async (server) => {
    const sql = testSql(2);
    const tenant = newTenant();
    const client = await asUser(server, tenant);
    try {
      const before = await tenantWrites(sql, tenant);
      for (
        const args of [
          { content: "" },
          { content: "ok", colour: "red" },
          { content: "hidden\u202Etext" },
          { content: "ok", scope: "project" },
        ]
      ) {
        const result = await call(client, "remember_fact", args);
        assert.equal(result.isError, true, JSON.stringify(args));
      }
      await toolError(
        client,
        "remember_fact",
        { content: "A fact", metadata: { category: "no_such_category" } },
        "unknown_category",
      );
      await toolError(client, "explain_fact", { id: crypto.randomUUID() }, "not_found");
      await toolError(client, "get_entity_info", { q: "pnpm", cursor: "abc" }, "invalid_request");
      // A value the operation refuses after the schema names the tool's arguments, as the schema's refusals do.
      const notATime = await toolError(
        client,
        "search_memory",
        { message: "x", after: "yesterday-ish" },
        "invalid_request",
      );
      assert.match(
        notATime,
        /^invalid_request: invalid arguments of search_memory: after: 'yesterday-ish' is not a time/,
      );
      const notUuid = await call(client, "explain_fact", { id: "not-a-uuid" });
      assert.equal(notUuid.isError, true);
      // No agent: query_memory says how to name one.
      await toolError(client, "query_memory", { query: "anything" }, "agent_required");
      assert.deepEqual(await tenantWrites(sql, tenant), before);
    } finally {
      await client.close();
      await sql.end();
    }
  });
});

Deno.test("mcp: a memory the agent asked for itself is whole in the text a plain client gets", async () => {
  // Without structured content the text is all the model reads: query_memory's return "full" and
  // explain_fact's subject must not be the clipped line other lists show.
  await withServer(async (server) => {
    const tenant = newTenant();
    const issued = await httpJson(server, "memory/agent-tokens", await userToken(tenant), {
      agent: "coder",
      label: "long",
    });
    assert.equal(issued.status, 201, JSON.stringify(issued.body));
    const plain = new Client({ name: "plain", version: "0" });
    await plain.connect(
      new StreamableHTTPClientTransport(new URL(`${server.functionsUrl}/memory-mcp`), {
        requestInit: { headers: { authorization: `Bearer ${issued.body.token}` } },
      }),
    );
    try {
      const project = `long-${crypto.randomUUID().slice(0, 8)}`;
      const steps = Array.from({ length: 12 }, (_, i) => `step ${i + 1} runs pnpm --filter pkg${i} build`).join("; ");
      const content = `Release the monorepo in this order: ${steps}; the tail of the procedure is here.`;
      assert.ok(content.length > 400, "longer than any clipped line");
      const remembered = await call(plain, "remember_fact", { content, project, metadata: { category: "commands" } });
      assert.ok(!remembered.isError, remembered.content[0]?.text);
      const id = remembered.content[0]!.text.match(/[0-9a-f-]{36}/)![0];
      const full = await call(plain, "query_memory", {
        query: "how do we release the monorepo?",
        project,
        categories: ["commands"],
        return: "full",
      });
      assert.ok(!full.isError, full.content[0]?.text);
      assert.ok(full.content[0]!.text.includes(content), full.content[0]!.text);
      const explained = await call(plain, "explain_fact", { id });
      assert.ok(explained.content[0]!.text.includes(content), explained.content[0]!.text);
    } finally {
      await plain.close();
    }
  });
});

Deno.test("mcp: an agent token acts for its user as its agent, whose allowlist query_memory applies", async () => {
  await withServer(async (server) => {
    const tenant = newTenant();
    const session = await userToken(tenant);
    const issue = async (agent: string) => {
      const res = await httpJson(server, "memory/agent-tokens", session, { agent, label: `${agent} in the tests` });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body.token as string;
    };
    const reviewer = await connect(server, { authorization: `Bearer ${await issue("reviewer")}` });
    const coder = await connect(server, { authorization: `Bearer ${await issue("coder")}` });
    try {
      const project = `agents-${crypto.randomUUID().slice(0, 8)}`;
      await ok(coder, "remember_fact", {
        content: "Deploy previews with vercel deploy --prebuilt",
        project,
        metadata: { category: "commands" },
      });
      // The reviewer's allowlist has no commands; the coder's has.
      await toolError(reviewer, "query_memory", {
        query: "how do we deploy previews?",
        project,
        categories: ["commands"],
      }, "category_not_allowed");
      const found = await ok(coder, "query_memory", {
        query: "how do we deploy previews?",
        project,
        categories: ["commands"],
      });
      assert.equal((found.data.results as unknown[]).length, 1, found.text);
      // Writes by an agent token are the user's memories, with the agent as the actor.
      const sql = testSql(1);
      const rows = await sql<{ actor: string }[]>`
        select h.actor from public.memory_history h join public.devai_memories m on m.id = h.memory_id
         where m.owner_id = ${tenant} and h.event = 'ADD'`;
      await sql.end();
      assert.deepEqual(rows.map((r) => r.actor), [`agent:coder@user:${tenant}`]);
    } finally {
      await reviewer.close();
      await coder.close();
    }
  });
});

Deno.test("mcp: writing tools are charged to the tenant's write budget, reading tools to its read budget", async () => {
  await withServer(async (server) => {
    const sql = testSql(2);
    const limits = await overrideSettings(sql, { rate_limit_write_burst: 2, rate_limit_write_per_minute: 6 });
    const tenant = newTenant();
    const client = await asUser(server, tenant);
    try {
      // A JSON-RPC batch would run all its calls for one token: it is refused whole, nothing runs.
      const batch = [1, 2, 3].map((n) => ({
        jsonrpc: "2.0",
        id: n,
        method: "tools/call",
        params: { name: "remember_fact", arguments: { content: `Batched fact number ${n}` } },
      }));
      const res = await fetch(`${server.functionsUrl}/memory-mcp`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${await userToken(tenant)}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        body: JSON.stringify(batch),
      });
      const refusedBatch = await res.json();
      assert.equal(res.status, 400, JSON.stringify(refusedBatch));
      assert.equal(refusedBatch.error.code, -32600);
      assert.match(refusedBatch.error.message, /batches are not accepted/);
      const [none] = await sql<{ n: number }[]>`
        select count(*)::int as n from public.devai_memories where owner_id = ${tenant}`;
      assert.equal(none!.n, 0, "no call of the batch ran");
      const started = performance.now();
      for (const n of [1, 2]) await ok(client, "remember_fact", { content: `Rate limited fact number ${n}` });
      const refused = await toolError(client, "remember_fact", { content: "One fact too many" }, "rate_limited");
      const wait = refused.match(/retry after (\d+) s/);
      assert.ok(wait, refused);
      assertWaitForNextToken(Number(wait[1]), 10, started); // 6 a minute
      const [row] = await sql<
        { n: number }[]
      >`select count(*)::int as n from public.devai_memories where owner_id = ${tenant}`;
      assert.equal(row!.n, 2, "the refused call wrote nothing");
      await ok(client, "search_memory", { message: "which facts are rate limited?" });
    } finally {
      await client.close();
      await limits.restore();
      await sql.end();
    }
  });
});
