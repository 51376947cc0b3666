// A request the database refuses (a rule it checks, a value it cannot take) is answered a 4xx in the
// API's words, through HTTP and MCP alike, on the local server: what is wrong and what to do, never
// a table, constraint, column or function name or SQL text (the red team's 422 quoted `new row for
// relation "devai_memories" violates check constraint "devai_memories_content_length"`). The
// database's own words are logged with the request id, for operators; nothing is written.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { asHttpError } from "../supabase/functions/_shared/http.ts";
import { CHECKS, DUPLICATES } from "../supabase/functions/_shared/database-error-messages.ts";
import { userHeaders, userToken } from "./support/auth.ts";
import { startTestServer } from "./support/http_server.ts";
import { newTenant, tenantWrites, testSql } from "./support/seed.ts";

/** Our schema's names: every table, constraint and function of the migrations. */
async function internalNames(): Promise<string[]> {
  const sql = await Deno.readTextFile(new URL("../supabase/schema.sql", import.meta.url));
  const names = new Set<string>();
  for (
    const m of sql.matchAll(/(?:TABLE|CONSTRAINT|FUNCTION|INDEX|TRIGGER|VIEW) (?:IF NOT EXISTS )?(?:\w+\.)?(\w+)/g)
  ) {
    // Words the API uses too (a `content` field, a `pin` action) are not names it leaks.
    if (m[1]!.includes("_")) names.add(m[1]!);
  }
  return [...names];
}

/** SQL words and the database's own phrasing, none of which an answer should carry. */
const SQL_TEXT =
  /violates|constraint|relation "|\bcolumn\b|invalid input syntax|out of range for type|\bp_[a-z]+|public\.|memory_private/i;

// A statement whose secrets' `[REDACTED:password]` markers (19 characters for each 3-character
// `pw=k9…`) make it longer than the 8,000 characters a memory holds, though it is under the 4,000
// characters a request may send: the column's check refused it with the database's words.
const SECRETS = `The staging logins: ${Array.from({ length: 570 }, (_, i) => `pw=k9${i}`).join(" ")}`.slice(0, 3990);

// Metadata nested deeper than a body may be (64 levels).
const DEEP = JSON.parse("[".repeat(70) + "]".repeat(70));

interface Answered {
  message?: string;
  issues?: { path: unknown[]; message: string }[];
}

/** An error's message with its issues, each naming its field: what the caller reads. */
const withIssues = (e: Answered) =>
  [e.message ?? "", ...(e.issues ?? []).map((i) => `${i.path.join(".")}: ${i.message}`)].join("; ");

interface Refusal {
  what: string;
  status: number;
  code?: string;
  message: string;
}

function assertClear(r: Refusal, names: string[]): void {
  assert.ok(r.status >= 400 && r.status < 500, `${r.what}: a 4xx, got ${r.status} ${r.message}`);
  assert.ok(r.message.length > 20, `${r.what}: a message that says what is wrong: ${r.message}`);
  assert.doesNotMatch(r.message, SQL_TEXT, `${r.what}: no SQL text`);
  const leaked = names.filter((n) => r.message.includes(n));
  assert.deepEqual(leaked, [], `${r.what}: no internal names in ${r.message}`);
}

Deno.test({
  name: "database refusals: HTTP and MCP answer a 4xx in the API's words, log the database's, write nothing",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const names = await internalNames();
    assert.ok(names.includes("devai_memories_content_length"), "the scan knows the constraint names");
    const logged: string[] = [];
    const error = console.error;
    console.error = (...args: unknown[]) => {
      logged.push(args.map(String).join(" "));
    };
    const server = await startTestServer({ worker: false });
    const sql = testSql(1);
    const tenant = newTenant();
    const client = new Client({ name: "devai-memory-tests", version: "0.0.0" });
    try {
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${server.functionsUrl}/memory-mcp`), {
          requestInit: { headers: { authorization: `Bearer ${await userToken(tenant)}` } },
        }),
      );
      const headers = await userHeaders(tenant);
      const before = await tenantWrites(sql, tenant);
      const http = async (path: string, body: unknown, method = "POST") => {
        const res = await fetch(`${server.functionsUrl}/${path}`, {
          method,
          headers: { "content-type": "application/json", ...headers },
          body: JSON.stringify(body),
        });
        const e = (await res.json()).error ?? {};
        return { status: res.status, code: e.code, message: withIssues(e), requestId: e.request_id };
      };
      const mcp = async (name: string, args: Record<string, unknown>) => {
        const r = await client.callTool({ name, arguments: args }) as {
          isError?: boolean;
          structuredContent?: { error?: Answered & { status: number; code: string; request_id: string } };
        };
        const e = r.structuredContent?.error;
        assert.ok(r.isError && e, `${name}: a tool error, got ${JSON.stringify(r)}`);
        return { status: e.status, code: e.code, message: withIssues(e), requestId: e.request_id };
      };

      // [what, how it is sent, the words the answer must hold]
      const table = [
        [
          "episode: secrets' markers past 8,000 characters",
          () =>
            http("memory/episodes", {
              session_id: "s1",
              messages: [{ role: "user", content: SECRETS }],
            }),
          /messages\.0\.content: its \d+ secrets, each replaced by its \[REDACTED:<kind>\] marker, make it \d+ characters, over the 8000/,
        ],
        // The same values the database would refuse, refused by the API's schemas first: the same promise.
        [
          "remember: importance 9",
          () => http("memory/remember", { content: "a fact", importance: 9 }),
          /importance/,
        ],
        [
          "remember: an unknown memory_type",
          () => http("memory/remember", { content: "a fact", memory_type: "gossip" }),
          /memory_type/,
        ],
        ["remember: blank content", () => http("memory/remember", { content: "   " }), /content/],
        [
          "remember: content past 4,000 characters",
          () => http("memory/remember", { content: "x".repeat(4001) }),
          /content.*4000/,
        ],
        [
          "remember: metadata 70 levels deep",
          () => http("memory/remember", { content: "a fact", metadata: { keywords: DEEP } }),
          /64 levels|nest/,
        ],
        [
          "remember: a namespace with '..'",
          () => http("memory/remember", { content: "a fact", namespace: "devai/../x" }),
          /namespace/,
        ],
        [
          "episodes: a session id past 200 characters",
          () => http("memory/episodes", { session_id: "s".repeat(201), messages: [{ role: "user", content: "hi" }] }),
          /session_id/,
        ],
        [
          "episodes: a date past 9999",
          () =>
            http("memory/episodes", {
              session_id: "s2",
              messages: [{ role: "user", content: "hi", at: "+294277-01-01T00:00:00Z" }],
            }),
          /at/,
        ],
        [
          "agent token: a label past 200 characters",
          () => http("memory/agent-tokens", { agent: "coder", label: "x".repeat(201) }),
          /label/,
        ],
        [
          "checkpoint: state not an object",
          () => http("memory/checkpoints/t1", { state: [1] }, "PUT"),
          /state must be a JSON object/,
        ],
        [
          "retrieve: top_k out of range",
          () => http("memory-retrieve", { message: "hi", top_k: 2 ** 40 }),
          /top_k/,
        ],
        [
          "MCP remember_fact: importance 9",
          () => mcp("remember_fact", { content: "a fact", importance: 9 }),
          /importance/,
        ],
        [
          "remember: secrets' markers past 8,000 characters",
          () => http("memory/remember", { content: SECRETS }),
          /8000/,
        ],
        [
          "MCP remember_fact: secrets' markers past 8,000 characters",
          () => mcp("remember_fact", { content: SECRETS }),
          /8000/,
        ],
      ] as const;
      for (const [what, send, words] of table) {
        const seen = logged.length;
        const r = await send();
        assertClear({ what, ...r }, names);
        assert.match(r.message, words, what);
        // A refusal that did reach the database is logged with the request id the caller was given.
        for (const line of logged.slice(seen).filter((l) => l.includes("the database refused the request"))) {
          assert.equal(JSON.parse(line).request_id, r.requestId, `${what}: ${line}`);
        }
      }
      assert.deepEqual(await tenantWrites(sql, tenant), before, "nothing written");
    } finally {
      console.error = error;
      await client.close();
      await sql.end();
      await server.close();
    }
  },
});

/** Real errors of the database, the rules the API may reach past its own checks, mapped. */
Deno.test({
  name: "database refusals: every class 22 / 23514 / 23502 / 23505 error maps to the API's words",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const names = await internalNames();
    const sql = testSql(1);
    const tenant = newTenant();
    const errorOf = async (query: string): Promise<unknown> => {
      try {
        await sql.begin(async (tx) => {
          await tx.unsafe(
            `select set_config('request.jwt.claims', '{"sub":"${tenant}","role":"authenticated"}', true)`,
          );
          await tx.unsafe(query);
        });
      } catch (err) {
        return err;
      }
      assert.fail(`expected the database to refuse ${query}`);
    };
    const insert = (content: string, more = "", values = "") =>
      `insert into public.devai_memories (owner_id, namespace, memory_type, content${more})
       values ('${tenant}', 'devai/global/a', 'semantic', ${content}${values})`;
    try {
      for (
        const [what, query, status, words] of [
          ["content too long", insert("repeat('x', 8001)"), 422, /1-8000/],
          ["importance 9", insert("'a fact'", ", importance", ", 9"), 422, /importance must be an integer from 1 to 5/],
          ["unknown memory_type", insert("'a fact'").replace("'semantic'", "'gossip'"), 422, /memory_type must be/],
          [
            "metadata not an object",
            insert("'a fact'", ", metadata", ", '[1]'"),
            422,
            /metadata must be a JSON object/,
          ],
          ["content null", insert("null"), 422, /required value/],
          ["year 0", "select '0000-01-01'::timestamptz", 400, /date or time/],
          ["integer out of range", "select 2147483648::int", 400, /number in the request is out of range/],
          ["not a uuid", "select 'not-a-uuid'::uuid", 400, /not of its field's type/],
          [
            "a duplicate category",
            "insert into public.memory_categories (name) values ('profile')",
            409,
            /category with this name already exists/,
          ],
          ["a function's own check", "select memory_private.claim_jobs('w', 0)", 400, /parameter/],
        ] as const
      ) {
        const err = await errorOf(query) as { code?: string; message?: string };
        const requestId = crypto.randomUUID();
        const logged: string[] = [];
        const error = console.error;
        console.error = (...args: unknown[]) => logged.push(args.map(String).join(" "));
        const mapped = (() => {
          try {
            return asHttpError(err, requestId);
          } finally {
            console.error = error;
          }
        })();
        assert.equal(mapped.status, status, `${what}: ${err.code} ${err.message}`);
        assert.match(mapped.message, words, what);
        assertClear({ what, status: mapped.status, code: mapped.code, message: mapped.message }, names);
        // The operator's side: the database's words, with the request id; never the refused row.
        assert.equal(logged.length, 1, `${what}: one log line`);
        const line = JSON.parse(logged[0]!);
        assert.deepEqual([line.level, line.request_id, line.sqlstate, line.error], [
          "warn",
          requestId,
          err.code,
          err.message,
        ]);
        assert.ok(!logged[0]!.includes("xxxxxxxx") && !logged[0]!.includes("a fact"), `${what}: no row values logged`);
      }
    } finally {
      await sql.end();
    }
  },
});

Deno.test("database refusals: every constraint given a sentence is one of the schema's", async () => {
  const names = await internalNames();
  // A renamed or dropped constraint would leave its sentence unused and its refusals generic.
  const unknown = [...Object.keys(CHECKS), ...Object.keys(DUPLICATES)].filter((n) => !names.includes(n));
  assert.deepEqual(unknown, []);
});
