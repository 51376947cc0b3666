// The routes the docs name exist: every endpoint of the README's API table and every `curl` example
// of the README, docs/ and integrations/ is sent to the local functions server (with a user token
// and an empty body) and must reach a route of a function: not `route_not_found`,
// `function_not_found` or `method_not_allowed`, and a fixed path (no `{id}`) must not be taken for an
// id (`invalid_id`). What each route then does with the empty body is the other tests' business.
import assert from "node:assert/strict";
import { userToken } from "./support/auth.ts";
import { startTestServer } from "./support/http_server.ts";
import { newTenant } from "./support/seed.ts";

const ROOT = new URL("../", import.meta.url);
const METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH"];

interface Documented {
  method: string;
  path: string;
  where: string;
}

/** `a/b[/{c}]` → `a/b`, `a/b/{c}`; `a/{id}/accept\|reject` → both; `?query` dropped. */
export function expandPath(path: string): string[] {
  const bare = path.replace(/\?.*$/, "").replace(/\/$/, "");
  const optional = bare.match(/^(.*)\[([^\]]*)\](.*)$/);
  if (optional) {
    return [...expandPath(optional[1]! + optional[3]!), ...expandPath(optional[1]! + optional[2]! + optional[3]!)];
  }
  const alternatives = bare.match(/^(.*\/)?([^/]*\\\|[^/]*)$/);
  if (alternatives) return alternatives[2]!.split("\\|").map((a) => (alternatives[1] ?? "") + a);
  return [bare];
}

/** The endpoints of the README's API table: `METHOD path` items, and `/tail` items after one (`/restore`). */
export function apiTableEndpoints(readme: string): Documented[] {
  const start = readme.indexOf("| endpoint | body / query | answers |");
  assert.ok(start >= 0, "no API table in the README");
  const out: Documented[] = [];
  for (const line of readme.slice(start).split("\n").slice(2)) {
    if (!line.startsWith("|")) break;
    const first = line.split(/(?<!\\)\|/)[1]!;
    let previous: { methods: string[]; path: string } | undefined;
    for (const [, item] of first.matchAll(/`([^`]+)`/g)) {
      const full = item!.match(/^([A-Z]+(?:\\?\|[A-Z]+)*) (\S+)$/);
      if (full) {
        previous = { methods: full[1]!.split(/\\?\|/), path: full[2]! };
      } else if (previous && /^\/[a-z]/.test(item!)) {
        previous = { ...previous, path: previous.path.replace(/\/[^/]+$/, "") + item };
      } else continue;
      for (const method of previous.methods) {
        for (const path of expandPath(previous.path)) out.push({ method, path, where: `${TABLE_WHERE}: ${item}` });
      }
    }
  }
  return out;
}

/** The `curl` commands of a Markdown file's code blocks, joined across `\` line ends. */
const TABLE_WHERE = "README API table";

export function curlExamples(md: string, where: string): Documented[] {
  const out: Documented[] = [];
  for (const [, block] of md.matchAll(/^```[^\n]*\n([\s\S]*?)^```/gm)) {
    for (const command of block!.replace(/\\\n/g, " ").split("\n")) {
      const at = command.indexOf("curl ");
      if (at < 0 || command.slice(0, at).includes("#")) continue;
      const curl = command.slice(at);
      const target = curl.match(/functions\/v1\/([^\s"']+)/) ?? curl.match(/^curl … (\S+)/);
      if (!target) continue;
      const method = curl.match(/-X\s+([A-Z]+)/)?.[1] ?? (/\s-d\s/.test(curl) ? "POST" : "GET");
      for (const path of expandPath(target[1]!)) out.push({ method, path, where: `${where}: ${curl.slice(0, 100)}` });
    }
  }
  return out;
}

async function markdownFiles(dir: URL): Promise<URL[]> {
  const out: URL[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (entry.isDirectory) out.push(...await markdownFiles(new URL(entry.name + "/", dir)));
    else if (entry.name.endsWith(".md")) out.push(new URL(entry.name, dir));
  }
  return out;
}

async function documentedRoutes(): Promise<Documented[]> {
  const readme = await Deno.readTextFile(new URL("README.md", ROOT));
  const out = [...apiTableEndpoints(readme), ...curlExamples(readme, "README.md")];
  for (const dir of ["docs/", "integrations/", "sdk/"]) {
    for (const file of await markdownFiles(new URL(dir, ROOT))) {
      out.push(...curlExamples(await Deno.readTextFile(file), file.pathname.slice(ROOT.pathname.length)));
    }
  }
  return out;
}

Deno.test("docs routes: the parsers read the forms the docs use", () => {
  assert.deepEqual(expandPath("memory/agents[/{agent}]"), ["memory/agents", "memory/agents/{agent}"]);
  assert.deepEqual(expandPath("memory/proposals/{id}/accept\\|reject"), [
    "memory/proposals/{id}/accept",
    "memory/proposals/{id}/reject",
  ]);
  assert.deepEqual(expandPath("memory-extract?job_id="), ["memory-extract"]);
  const table = "| endpoint | body / query | answers |\n|---|---|---|\n" +
    "| `POST memory/{id}/forget` · `/restore` · `GET memory/weak` | x | y |\n\nafter\n";
  assert.deepEqual(apiTableEndpoints(table).map((e) => `${e.method} ${e.path}`), [
    "POST memory/{id}/forget",
    "POST memory/{id}/restore",
    "GET memory/weak",
  ]);
  const md = "```sh\ncurl -s -X PUT \"$U/functions/v1/memory/agents/x\" \\\n  -d '{}'\n" +
    "curl … memory-retrieve -d '{}'\ncurl -s \"$U/functions/v1/memory/export?format=json\"\n```\n";
  assert.deepEqual(curlExamples(md, "t").map((e) => `${e.method} ${e.path}`), [
    "PUT memory/agents/x",
    "POST memory-retrieve",
    "GET memory/export",
  ]);
});

Deno.test({
  name: "docs routes: every endpoint of the README's API table and every curl example reaches a route",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const documented = await documentedRoutes();
  // Each scan on its own: a table that grew must not hide a curl parser that finds nothing.
  const curls = documented.filter((d) => !d.where.startsWith(TABLE_WHERE)).length;
  assert.ok(
    documented.length - curls >= 40,
    `only ${documented.length - curls} API table endpoints: the scan is broken`,
  );
  assert.ok(curls >= 10, `only ${curls} curl examples found: the scan is broken`);
  const server = await startTestServer();
  try {
    const token = await userToken(newTenant());
    const placeholder = "00000000-0000-4000-8000-0000000000d0";
    const wrong: string[] = [];
    const seen = new Set<string>();
    for (const { method, path, where } of documented) {
      assert.ok(METHODS.includes(method), `${where}: unknown method ${method}`);
      const concrete = path.replace(/\{[^}]*\}|<[^>]*>/g, placeholder);
      if (seen.has(`${method} ${concrete}`)) continue;
      seen.add(`${method} ${concrete}`);
      const res = await fetch(`${server.functionsUrl}/${concrete}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        body: method === "GET" ? undefined : "{}",
      });
      const text = await res.text();
      const code = (() => {
        try {
          return JSON.parse(text)?.error?.code;
        } catch {
          return undefined;
        }
      })();
      // A 401 or a 5xx never reached the routes: the check would pass on a broken token or server.
      const unrouted = ["route_not_found", "function_not_found", "method_not_allowed"].includes(code) ||
        (code === "invalid_id" && concrete === path) || res.status === 401 || res.status >= 500;
      if (unrouted) wrong.push(`${method} ${path} (${where}) → ${res.status} ${code}`);
    }
    assert.deepEqual(wrong, []);
  } finally {
    await server.close();
  }
});
