// A route that takes a JSON body reads nothing from the query string, so a parameter there is a 400
// naming it that writes nothing, on every function: `POST memory/consolidate?dry_run=true` ran a
// real consolidation (answered `"dry_run": false`, its run recorded, the day's caps spent), and
// `POST context/assemble?budget=500` packed 8,000 tokens. MCP's endpoint URL is the client's to
// configure: a query string there is left alone.
import assert from "node:assert/strict";
import { userToken } from "./support/auth.ts";
import { startTestServer } from "./support/http_server.ts";
import { newTenant, tenantWrites, testSql } from "./support/seed.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

Deno.test(
  { name: "a POST or PUT with a query string is a 400 naming the parameter, and writes nothing", ...opts },
  async () => {
    const server = await startTestServer({ worker: false });
    const sql = testSql();
    try {
      const tenant = newTenant();
      const headers = {
        authorization: `Bearer ${await userToken(tenant)}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      };
      const send = async (method: string, path: string, body?: unknown) => {
        const res = await fetch(`${server.functionsUrl}/${path}`, {
          method,
          headers,
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        return { status: res.status, body: await res.json() };
      };
      const before = await tenantWrites(sql, tenant);
      const refused: [string, string, unknown, string][] = [
        ["POST", "memory/consolidate?dry_run=true", undefined, "dry_run"],
        ["POST", "memory/reindex?dry_run=true", undefined, "dry_run"],
        ["POST", "context/assemble?budget=500", {}, "budget"],
        ["POST", "memory-retrieve?top_k=1", { message: "which package manager?" }, "top_k"],
        ["POST", "memory/remember?project=shop", { content: "Use pnpm" }, "project"],
        ["PUT", "memory/checkpoints/t1?version=3", { state: {} }, "version"],
      ];
      for (const [method, path, body, name] of refused) {
        const r = await send(method, path, body);
        assert.equal(r.status, 400, `${method} ${path}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error.code, "invalid_request");
        assert.match(r.body.error.message, new RegExp(`JSON body, not in the query string: move ${name}`));
        assert.deepEqual(r.body.error.issues.map((i: { path: string[] }) => i.path), [[name]]);
      }
      assert.deepEqual(await tenantWrites(sql, tenant), before);
      const [runs] =
        await sql`select count(*)::int as n from public.memory_consolidation_runs where owner_id = ${tenant}`;
      assert.equal(runs!.n, 0, "no consolidation ran");
      const [checkpoints] =
        await sql`select count(*)::int as n from public.supervisor_checkpoints where owner_id = ${tenant}`;
      assert.equal(checkpoints!.n, 0, "no checkpoint saved");

      // The parameter in the body does what was asked.
      const dry = await send("POST", "memory/consolidate", { dry_run: true });
      assert.equal(dry.status, 200);
      assert.equal(dry.body.dry_run, true);
      // MCP ignores a query string of its configured URL.
      const ping = await send("POST", "memory-mcp?client=x", { jsonrpc: "2.0", id: 1, method: "ping" });
      assert.equal(ping.status, 200, JSON.stringify(ping.body));
      assert.deepEqual(ping.body, { jsonrpc: "2.0", id: 1, result: {} });
    } finally {
      await sql.end();
      await server.close();
    }
  },
);
