// One concept, one answer, on every route (README's error table): an id that is no uuid is 400
// `invalid_id` naming the field wherever it is sent (a path, `?job_id=`, a body's ids, an MCP tool's
// `id`), and every integer parameter (`limit`, `top_namespaces`) is read by one rule whose refusal
// says the same thing. Before, `memory-extract?job_id=x` was `invalid_request` where `memory/x`
// was `invalid_id`, and contradictions' and proposals' `limit` refused a fourth digit ("0050")
// that every other route took, while a ten-digit limit elsewhere was "a non-negative integer".
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { userToken } from "./support/auth.ts";
import { startTestServer } from "./support/http_server.ts";
import { newTenant, tenantWrites, testSql } from "./support/seed.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

async function sender(functionsUrl: string, tenant: string) {
  const headers = { authorization: `Bearer ${await userToken(tenant)}`, "content-type": "application/json" };
  return async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${functionsUrl}/${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    // deno-lint-ignore no-explicit-any -- each assertion reads the error shape
    return { status: res.status, body: await res.json() as any };
  };
}

const issuePaths = (body: { error: { issues?: { path: (string | number)[] }[] } }) =>
  (body.error.issues ?? []).map((i) => i.path.join("."));

Deno.test(
  { name: "an id that is no uuid is 400 invalid_id naming the field, wherever it is sent", ...opts },
  async () => {
    const server = await startTestServer({ worker: false });
    const sql = testSql();
    const tenant = newTenant();
    const client = new Client({ name: "devai-memory-tests", version: "0.0.0" });
    try {
      const send = await sender(server.functionsUrl, tenant);
      const before = await tenantWrites(sql, tenant);
      const cases: [string, string, unknown, string[]][] = [
        ["GET", "memory/not-a-uuid", undefined, ["id"]],
        ["GET", "memory/entities/not-a-uuid", undefined, ["id"]],
        ["POST", "memory/contradictions/not-a-uuid/resolve", { resolution: "a_wins" }, ["id"]],
        ["GET", "memory/proposals/not-a-uuid", undefined, ["id"]],
        ["POST", "memory/agent-tokens/not-a-uuid/revoke", undefined, ["id"]],
        ["GET", "memory-extract?job_id=not-a-uuid", undefined, ["job_id"]],
        ["POST", "memory/usage", { session_id: "s1", retrieved: ["not-a-uuid"], cited: ["x"] }, [
          "retrieved.0",
          "cited.0",
        ]],
      ];
      for (const [method, path, body, fields] of cases) {
        const r = await send(method, path, body);
        assert.equal(r.status, 400, `${method} ${path}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error.code, "invalid_id", `${method} ${path}: ${JSON.stringify(r.body)}`);
        assert.deepEqual(issuePaths(r.body), fields, `${method} ${path}`);
        for (const f of fields) assert.match(r.body.error.message, new RegExp(`${f.split(".")[0]}|memory|id`));
      }
      // An id wrong beside another mistake is one of the request's problems: invalid_request lists them all.
      const mixed = await send("GET", "memory-extract?job_id=not-a-uuid&verbose=1");
      assert.equal(mixed.body.error.code, "invalid_request");

      // A name in the path is named in the issues as a body's field is.
      for (
        const [method, path, field] of [
          ["POST", "memory/sessions/a%20b/end", "session_id"],
          ["GET", "memory/checkpoints/a%20b", "thread_id"],
          ["GET", "memory/agents/A%20B", "agent"],
        ] as const
      ) {
        const r = await send(method, path);
        assert.equal(r.status, 400, `${path}: ${JSON.stringify(r.body)}`);
        assert.deepEqual(issuePaths(r.body), [field], path);
      }

      // MCP: a tool's id argument answers the code the route answers.
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${server.functionsUrl}/memory-mcp`), {
          requestInit: { headers: { authorization: `Bearer ${await userToken(tenant)}` } },
        }),
      );
      const r = await client.callTool({ name: "explain_fact", arguments: { id: "not-a-uuid" } });
      assert.equal(r.isError, true);
      const error = (r.structuredContent as { error: { code: string; issues: { path: string[] }[] } }).error;
      assert.equal(error.code, "invalid_id");
      assert.deepEqual(error.issues.map((i) => i.path), [["id"]]);
      assert.deepEqual(await tenantWrites(sql, tenant), before, "nothing written");
    } finally {
      await client.close();
      await sql.end();
      await server.close();
    }
  },
);

Deno.test(
  { name: "every limit is read by one rule: any digits, the route's bounds, one message", ...opts },
  async () => {
    const server = await startTestServer({ worker: false });
    try {
      const send = await sender(server.functionsUrl, newTenant());
      const memory = crypto.randomUUID();
      const routes: [string, string, number][] = [
        ["memory", "limit", 100],
        ["memory/weak", "limit", 100],
        ["memory/entities", "limit", 100],
        [`memory/${memory}/history`, "limit", 200],
        ["memory/contradictions", "limit", 100],
        ["memory/proposals", "limit", 100],
        ["memory/stats", "top_namespaces", 100],
      ];
      for (const [path, name, max] of routes) {
        const at = (v: string) => send("GET", `${path}?${name}=${v}`);
        // The bound in four digits is the bound (contradictions and proposals refused "0050").
        for (const v of [String(max), `000${max}`.slice(-4)]) {
          const ok = await at(v);
          assert.notEqual(ok.status, 400, `${path}?${name}=${v}: ${JSON.stringify(ok.body)}`);
        }
        for (const v of [String(max + 1), "0", "1000000000", "99999999999"]) {
          const r = await at(v);
          assert.equal(r.status, 400, `${path}?${name}=${v}`);
          assert.equal(r.body.error.code, "invalid_request");
          assert.deepEqual(issuePaths(r.body), [name]);
          assert.equal(r.body.error.issues[0].message, `an integer 1-${max}`, `${path}?${name}=${v}`);
        }
        const text = await at("ten");
        assert.equal(text.body.error.issues[0].message, `an integer 1-${max}, written in digits`, `${path}`);
      }
      // A body's bounded integer says its bounds the same way (they said "Too big: expected number to be <=50").
      const bodies: [string, unknown, string][] = [
        ["context/predict", { file_opened: "src/app.ts", limit: 51 }, "an integer 1-50"],
        ["memory-retrieve", { message: "how do deploys run?", top_k: 10_000 }, "an integer 1-50"],
        ["memory-retrieve", { message: "how do deploys run?", budget_tokens: "900" }, "an integer 1-32000"],
        ["memory/remember", { content: "Deploys run on Fridays", importance: 9 }, "an integer 1-5"],
        ["context/assemble", { budget: 100 }, "an integer 200-32000"],
      ];
      for (const [path, body, message] of bodies) {
        const r = await send("POST", path, body);
        assert.equal(r.status, 400, `${path} ${JSON.stringify(body)}`);
        assert.deepEqual(r.body.error.issues.map((i: { message: string }) => i.message), [message], path);
      }
    } finally {
      await server.close();
    }
  },
);

Deno.test(
  { name: "an unknown parameter or field is named in the issues' path, as a bad one is", ...opts },
  async () => {
    const server = await startTestServer({ worker: false });
    try {
      const send = await sender(server.functionsUrl, newTenant());
      const cases: [string, string, unknown, string[]][] = [
        ["GET", "memory/weak?limit=5&lmit=5", undefined, ["lmit"]],
        ["GET", "memory/agent-tokens?foo=1&bar=2", undefined, ["foo", "bar"]],
        ["POST", "memory/remember", { content: "Deploys go out on Fridays", topic: "x" }, ["topic"]],
        ["POST", "memory-retrieve", { message: "when do deploys go out?", topk: 3 }, ["topk"]],
        ["POST", "memory/remember", { content: "Deploys go out on Fridays", metadata: { colour: "red" } }, [
          "metadata.colour",
        ]],
      ];
      for (const [method, path, body, fields] of cases) {
        const r = await send(method, path, body);
        assert.equal(r.status, 400, `${method} ${path}: ${JSON.stringify(r.body)}`);
        assert.deepEqual(issuePaths(r.body), fields, `${method} ${path}`);
      }
    } finally {
      await server.close();
    }
  },
);

Deno.test({ name: "a cursor that is no next_cursor is invalid_cursor, empty or long ones too", ...opts }, async () => {
  const server = await startTestServer({ worker: false });
  try {
    const send = await sender(server.functionsUrl, newTenant());
    for (const path of ["memory", "memory/entities", `memory/${crypto.randomUUID()}/history`]) {
      // An empty cursor (`?cursor=${next ?? ""}`) and a long one were invalid_request, "abc" invalid_cursor.
      for (const cursor of ["", "x".repeat(201), "abc"]) {
        const r = await send("GET", `${path}?cursor=${cursor}`);
        assert.equal(r.status, 400, `${path} ${cursor.length}`);
        assert.equal(
          r.body.error.code,
          "invalid_cursor",
          `${path} cursor of ${cursor.length}: ${JSON.stringify(r.body)}`,
        );
        assert.deepEqual(issuePaths(r.body), ["cursor"]);
      }
    }
  } finally {
    await server.close();
  }
});

Deno.test(
  {
    name: "an error lists at most MAX_ISSUES issues, then how many more: thousands of unknown keys stay a small answer",
    ...opts,
  },
  async () => {
    const server = await startTestServer({ worker: false });
    const sql = testSql();
    const tenant = newTenant();
    try {
      const send = await sender(server.functionsUrl, tenant);
      const before = await tenantWrites(sql, tenant);
      // 26,000 unknown keys in 230 KB of metadata were answered 2.5 MB of issues, one per key.
      const metadata = Object.fromEntries(Array.from({ length: 26_000 }, (_, i) => [i.toString(16), 0]));
      const res = await fetch(`${server.functionsUrl}/memory/remember`, {
        method: "POST",
        headers: { authorization: `Bearer ${await userToken(tenant)}`, "content-type": "application/json" },
        body: JSON.stringify({ content: "Deploys run on Fridays", metadata }),
      });
      const text = await res.text();
      assert.equal(res.status, 400);
      const { error } = JSON.parse(text);
      assert.equal(error.code, "invalid_request");
      assert.equal(error.issues.length, 101);
      assert.deepEqual(error.issues[0].path, ["metadata", "0"]);
      assert.deepEqual(error.issues.at(-1), {
        path: [],
        message: "and 25900 more issues not listed",
        code: "more_issues",
      });
      assert.ok(text.length < 20_000, `${text.length} bytes`);
      // Ids that are no uuid, 1,000 of them: invalid_id still, its message and issues bounded.
      const ids = await send("POST", "memory/usage", {
        session_id: "s1",
        retrieved: Array(500).fill("x"),
        cited: Array(500).fill("y"),
      });
      assert.equal(ids.body.error.code, "invalid_id", JSON.stringify(ids.body).slice(0, 300));
      assert.equal(ids.body.error.issues.length, 101);
      assert.match(ids.body.error.message, /retrieved\.99 must be a uuid|\(and more\)/);
      assert.ok(ids.body.error.message.length < 2_000, ids.body.error.message.length);
      assert.deepEqual(await tenantWrites(sql, tenant), before, "nothing written");
    } finally {
      await sql.end();
      await server.close();
    }
  },
);
