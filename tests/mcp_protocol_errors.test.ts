// memory-mcp's answers to messages it cannot run, over HTTP to the real local functions server
// (docs/mcp.md#errors): a request without an id is refused (-32600) and runs nothing, where a
// notification is still 202; JSON that is no JSON-RPC message is -32600, text that is no JSON
// -32700; bad params are -32602 with a message a client's author can act on; a tool's bad arguments
// are the HTTP API's 400 as a tool error, with the request id; a task-augmented request runs as a
// plain one; the Accept header is read as HTTP reads it; the requests that run no tool are charged.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { userToken } from "./support/auth.ts";
import { functionJson, type RunningServer, startTestServer } from "./support/http_server.ts";
import { overrideSettings } from "./support/lifecycle.ts";
import { newTenant, tenantWrites, testSql } from "./support/seed.ts";

interface Posted {
  status: number;
  // deno-lint-ignore no-explicit-any -- JSON-RPC answers of several shapes; each test asserts what it reads
  body: any;
  requestId: string | null;
  headers: Headers;
}

/** One POST to memory-mcp as an MCP client sends it; body as JSON text (a string is sent as it is). */
async function post(server: RunningServer, token: string, body: unknown): Promise<Posted> {
  const res = await fetch(`${server.functionsUrl}/memory-mcp`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return {
    status: res.status,
    body: text ? JSON.parse(text) : null,
    requestId: res.headers.get("x-request-id"),
    headers: res.headers,
  };
}

const call = (id: number | undefined, params?: unknown) => ({
  jsonrpc: "2.0",
  ...(id === undefined ? {} : { id }),
  method: "tools/call",
  ...(params === undefined ? {} : { params }),
});

async function withServer(fn: (server: RunningServer, tenant: string, token: string) => Promise<void>) {
  const server = await startTestServer({ worker: false });
  const tenant = newTenant();
  try {
    await fn(server, tenant, await userToken(tenant));
  } finally {
    await server.close();
  }
}

Deno.test("mcp: a request without an id is refused with -32600 and runs nothing", async () => {
  await withServer(async (server, tenant, token) => {
    const sql = testSql(1);
    try {
      const remember = { name: "remember_fact", arguments: { content: "Notification write test 77", project: "p1" } };
      const before = await tenantWrites(sql, tenant);
      const refused = await post(server, token, call(undefined, remember));
      assert.equal(refused.status, 400, JSON.stringify(refused.body));
      assert.equal(refused.body.id, null);
      assert.equal(refused.body.error.code, -32600);
      assert.match(refused.body.error.message, /tools\/call is a request and needs an id/);
      assert.deepEqual(await tenantWrites(sql, tenant), before, "the id-less call wrote nothing");
      // Every request method, not only tools/call.
      for (const method of ["initialize", "tools/list", "ping"]) {
        const res = await post(server, token, { jsonrpc: "2.0", method });
        assert.equal(res.status, 400, method);
        assert.equal(res.body.error.code, -32600, method);
      }
      // The same call with an id writes: the count above would have seen it.
      const ran = await post(server, token, call(1, remember));
      assert.equal(ran.status, 200);
      assert.match(ran.body.result.content[0].text, /^Remembered as /, JSON.stringify(ran.body));
      assert.equal((await tenantWrites(sql, tenant)).memories, before.memories + 1);
    } finally {
      await sql.end();
    }
  });
});

Deno.test("mcp: a notification is still accepted with 202 and no body", async () => {
  await withServer(async (server, _tenant, token) => {
    for (
      const notification of [
        { jsonrpc: "2.0", method: "notifications/initialized" },
        { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 7, reason: "user stopped it" } },
      ]
    ) {
      const res = await post(server, token, notification);
      assert.equal(res.status, 202, notification.method);
      assert.equal(res.body, null, notification.method);
    }
  });
});

Deno.test("mcp: JSON that is no JSON-RPC message is -32600 Invalid Request; text that is no JSON is -32700", async () => {
  await withServer(async (server, _tenant, token) => {
    for (
      const body of [
        {},
        42,
        { jsonrpc: "2.0", id: null, method: "ping" },
        { jsonrpc: "2.0", id: 1, method: "ping", params: null },
        { jsonrpc: "1.0", id: 1, method: "ping" },
      ]
    ) {
      const res = await post(server, token, body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.deepEqual([res.body.id, res.body.error.code], [null, -32600], JSON.stringify(res.body));
    }
    const notJson = await post(server, token, '{"jsonrpc": "2.0", "id": 1, "method": ');
    assert.equal(notJson.status, 400);
    assert.equal(notJson.body.jsonrpc, "2.0");
    assert.deepEqual([notJson.body.id, notJson.body.error.code], [null, -32700], JSON.stringify(notJson.body));
  });
});

Deno.test("mcp: bad params are -32602 Invalid params, answered to the request's id with what to send", async () => {
  await withServer(async (server, _tenant, token) => {
    const cases: [unknown, RegExp][] = [
      [call(1), /tools\/call needs params: \{name/],
      [call(2, { name: "remember_fact", arguments: null }), /params\.arguments must be an object .* not null/],
      [call(3, { name: "remember_fact", arguments: "content" }), /params\.arguments must be an object .* not a string/],
      [call(4, { name: "no_such_tool", arguments: {} }), /no tool is named 'no_such_tool'/],
      [{ jsonrpc: "2.0", id: 5, method: "initialize", params: {} }, /params\.protocolVersion: .*expected string/],
      [
        { jsonrpc: "2.0", id: 6, method: "tools/list", params: { cursor: "bogus" } },
        /params\.cursor: .*issues no cursor/,
      ],
      // JSON.parse keeps "__proto__" as a key; the SDK's schema rebuilt the arguments without it,
      // and the memory was written with the argument dropped (the HTTP API refuses it: 400).
      [
        '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"remember_fact",' +
        '"arguments":{"content":"a fact","__proto__":{"memory_type":"procedural"}}}}',
        /params\.arguments\.__proto__: remember_fact has no argument named __proto__/,
      ],
      // Params failing the schema every request shares were -32600 to id null, as if no request.
      [
        call(8, { name: "remember_fact", arguments: { content: "a fact" }, _meta: { progressToken: {} } }),
        /Invalid params of tools\/call: params\._meta\.progressToken/,
      ],
    ];
    for (const [message, expected] of cases) {
      const res = await post(server, token, message);
      const id = (typeof message === "string" ? JSON.parse(message) : message as { id: number }).id;
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.id, id);
      assert.equal(res.body.error?.code, -32602, JSON.stringify(res.body));
      assert.match(res.body.error.message, expected);
      assert.doesNotMatch(res.body.error.message, /^\[|"code":/, "no zod dump");
    }
  });
});

Deno.test("mcp: a tool's bad arguments are the HTTP API's 400 as a tool error, with the request id", async () => {
  await withServer(async (server, tenant, token) => {
    const sql = testSql(1);
    try {
      const before = await tenantWrites(sql, tenant);
      const args = { content: "", colour: "red" };
      const res = await post(server, token, call(1, { name: "remember_fact", arguments: args }));
      assert.equal(res.status, 200);
      const result = res.body.result;
      assert.equal(result.isError, true, JSON.stringify(res.body));
      assert.match(result.content[0].text, /^invalid_request: invalid arguments of remember_fact: content: /);
      const api = await functionJson(server, "memory/remember", { authorization: `Bearer ${token}` }, args);
      assert.equal(api.status, 400);
      assert.ok(res.requestId, "the response names its request id");
      assert.deepEqual(result.structuredContent, {
        error: {
          code: api.body.error.code,
          message: "invalid arguments of remember_fact",
          status: 400,
          issues: api.body.error.issues,
          request_id: res.requestId,
        },
      });
      assert.deepEqual(result.structuredContent.error.issues.map((i: { path: string[] }) => i.path), [
        ["content"],
        ["colour"],
      ]);

      // The transport's checks come first, for bad arguments as for any call (docs/mcp.md: 406).
      const notAcceptable = await fetch(`${server.functionsUrl}/memory-mcp`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify(call(2, { name: "remember_fact", arguments: args })),
      });
      assert.equal(notAcceptable.status, 406);
      await notAcceptable.body?.cancel();

      // What the SDK's own client gets for it.
      const client = new Client({ name: "devai-memory-tests", version: "0.0.0" });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${server.functionsUrl}/memory-mcp`), {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        }),
      );
      try {
        const viaClient = await client.callTool({ name: "explain_fact", arguments: { id: "not-a-uuid" } });
        assert.equal(viaClient.isError, true);
        const error = (viaClient.structuredContent as { error: Record<string, unknown> }).error;
        assert.equal(error.code, "invalid_id");
        assert.deepEqual((error.issues as { path: string[] }[]).map((i) => i.path), [["id"]]);
        assert.match(String(error.request_id), /^[0-9a-f-]{36}$/);
      } finally {
        await client.close();
      }
      assert.deepEqual(await tenantWrites(sql, tenant), before, "nothing written");
    } finally {
      await sql.end();
    }
  });
});

Deno.test("mcp: a request augmented with a task runs as a plain request, the task ignored (no tasks capability)", async () => {
  await withServer(async (server, tenant, token) => {
    const sql = testSql(1);
    try {
      const task = { ttl: 60_000 };
      const ping = await post(server, token, { jsonrpc: "2.0", id: 1, method: "ping", params: { task } });
      assert.deepEqual(
        [ping.status, ping.body.result, ping.body.error],
        [200, {}, undefined],
        JSON.stringify(ping.body),
      );
      const init = await post(server, token, {
        jsonrpc: "2.0",
        id: 2,
        method: "initialize",
        params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" }, task },
      });
      assert.equal(init.body.result?.capabilities.tasks, undefined, JSON.stringify(init.body));
      const before = await tenantWrites(sql, tenant);
      const remember = {
        name: "remember_fact",
        arguments: { content: "Task augmented write 31", project: "p1" },
        task,
      };
      const ran = await post(server, token, call(3, remember));
      assert.equal(ran.status, 200);
      assert.match(ran.body.result?.content[0].text, /^Remembered as /, JSON.stringify(ran.body));
      assert.equal(ran.body.result.task, undefined, "a plain result, not a task");
      assert.equal((await tenantWrites(sql, tenant)).memories, before.memories + 1);
    } finally {
      await sql.end();
    }
  });
});

Deno.test("mcp: the Accept header is read as HTTP reads it: any letter case, wildcards, q=0 refuses", async () => {
  await withServer(async (server, tenant, token) => {
    const sql = testSql(1);
    try {
      const postWith = async (accept: string, message: unknown) => {
        const res = await fetch(`${server.functionsUrl}/memory-mcp`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept },
          body: JSON.stringify(message),
        });
        return { status: res.status, body: await res.json() };
      };
      const ping = { jsonrpc: "2.0", id: 1, method: "ping" };
      for (const accept of ["*/*", "APPLICATION/JSON, TEXT/EVENT-STREAM", "application/*, text/*", "*/*;q=0.1"]) {
        const res = await postWith(accept, ping);
        assert.deepEqual([res.status, res.body.result], [200, {}], `${accept}: ${JSON.stringify(res.body)}`);
      }
      const before = await tenantWrites(sql, tenant);
      const remember = call(2, {
        name: "remember_fact",
        arguments: { content: "Accept q zero write 12", project: "p1" },
      });
      for (
        const accept of [
          "application/json;q=0, text/event-stream",
          "application/json-seq, text/event-stream",
          "*/*, text/event-stream;q=0",
          "application/json",
        ]
      ) {
        const res = await postWith(accept, remember);
        assert.equal(res.status, 406, `${accept}: ${JSON.stringify(res.body)}`);
        assert.deepEqual([res.body.id, res.body.error.code], [null, -32000]);
      }
      assert.deepEqual(await tenantWrites(sql, tenant), before, "a refused call wrote nothing");
    } finally {
      await sql.end();
    }
  });
});

Deno.test("mcp: initialize promises no tools/list_changed: a stateless server has no stream to send it on", async () => {
  await withServer(async (server, _tenant, token) => {
    const init = await post(server, token, {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
    });
    assert.deepEqual(init.body.result?.capabilities, { tools: {} }, JSON.stringify(init.body));
    const stream = await fetch(`${server.functionsUrl}/memory-mcp`, {
      headers: { authorization: `Bearer ${token}`, accept: "text/event-stream" },
    });
    assert.equal(stream.status, 405);
    await stream.body?.cancel();
  });
});

Deno.test("mcp: initialize, ping and tools/list take a read token too: past the read budget they are 429", async () => {
  await withServer(async (server, _tenant, token) => {
    const sql = testSql(1);
    const limits = await overrideSettings(sql, { rate_limit_read_burst: 3, rate_limit_read_per_minute: 1 });
    try {
      // The SDK's client connects with initialize (a token) and a notification (none: it runs nothing).
      const client = new Client({ name: "devai-memory-tests", version: "0.0.0" });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${server.functionsUrl}/memory-mcp`), {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        }),
      );
      await client.listTools();
      await client.ping();
      await client.close();
      const initialize = { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } };
      for (const [method, params] of [["initialize", initialize], ["tools/list"], ["ping"]] as const) {
        const refused = await post(server, token, { jsonrpc: "2.0", id: 1, method, ...(params ? { params } : {}) });
        assert.deepEqual([refused.status, refused.body.error?.code], [429, "rate_limited"], method);
        // The next read token comes within the minute: how many whole seconds are left depends on
        // when the bucket last refilled.
        const retryAfter = Number(refused.headers.get("retry-after"));
        assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `retry-after ${retryAfter}`);
      }
      const other = await userToken(newTenant());
      const listed = await post(server, other, { jsonrpc: "2.0", id: 1, method: "tools/list" });
      assert.equal(listed.status, 200, "another tenant is not limited");
    } finally {
      await limits.restore();
      await sql.end();
    }
  });
});
