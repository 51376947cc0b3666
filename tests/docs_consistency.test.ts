// The docs against the code, read as text where it can be (no server, no database): every link to a
// heading resolves, the error tables name every code the functions answer, under its status, and
// docs/sdk.md's methods table names the client's methods, every variable of a `| variable |` table is read by the code,
// every file of the repository a doc names in backticks exists, every `npm run` a doc gives is a script, and the
// README's deploy command names every function.
// (The README's configuration table against env.ts: tests/config_probe.test.ts; the routes the docs name
// against the running functions: tests/docs_routes.test.ts.)
import assert from "node:assert/strict";
import { createMemoryClient } from "../sdk/mod.ts";
import { ENV_VARIABLES } from "../supabase/functions/_shared/env.ts";

const ROOT = new URL("../", import.meta.url);

/** The repository's files with one of these endings (no dependencies, build output or dot folders). */
async function filesEndingIn(endings: string[], dir = ROOT): Promise<URL[]> {
  const out: URL[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (entry.name.startsWith(".") || entry.name === "node_modules" || entry.name === "dist") continue;
    const url = new URL(entry.name + (entry.isDirectory ? "/" : ""), dir);
    if (entry.isDirectory) out.push(...await filesEndingIn(endings, url));
    else if (endings.some((e) => entry.name.endsWith(e))) out.push(url);
  }
  return out;
}

const relative = (url: URL) => url.pathname.slice(ROOT.pathname.length);
const withoutFences = (md: string) => md.replace(/^```[^\n]*\n[\s\S]*?^```[^\n]*$/gm, "");

/** The anchors of a Markdown file's headings, as GitHub makes them (lowercase, punctuation dropped, spaces to -). */
function headingAnchors(md: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, text] of withoutFences(md).matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const slug = text!.replace(/\[([^\]]*)\]\([^)]*\)/g, "$1").trim().toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-");
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

Deno.test("docs: heading anchors are GitHub's", () => {
  const anchors = headingAnchors(
    "# Title\n## Write-behind: reinforcement and search events\n## `POST memory/consolidate`\n" +
      "## Scope rules (every signal)\n## Tests\n## Tests\n```\n## not a heading\n```\n",
  );
  assert.deepEqual([...anchors], [
    "title",
    "write-behind-reinforcement-and-search-events",
    "post-memoryconsolidate",
    "scope-rules-every-signal",
    "tests",
    "tests-1",
  ]);
});

Deno.test("docs: every link to another document or a heading resolves, in the docs and in code comments", async () => {
  const cache = new Map<string, Set<string> | null>();
  const anchorsOf = async (url: URL): Promise<Set<string> | null> => {
    const key = relative(url);
    if (!cache.has(key)) cache.set(key, await Deno.readTextFile(url).then(headingAnchors, () => null));
    return cache.get(key)!;
  };
  const broken: string[] = [];
  let checked = 0;
  const check = async (from: string, target: URL, anchor: string | undefined, link: string) => {
    checked++;
    const anchors = await anchorsOf(target);
    if (anchors === null) {
      const exists = await Deno.stat(target).then(() => true, () => false);
      if (!exists) broken.push(`${from}: ${link} (no such file)`);
    } else if (anchor && !anchors.has(anchor)) broken.push(`${from}: ${link} (no such heading)`);
  };
  // Markdown links: [text](path#anchor), relative to the document (code spans and fences are examples).
  for (const md of await filesEndingIn([".md"])) {
    const text = withoutFences(await Deno.readTextFile(md)).replace(/`[^`\n]*`/g, "");
    for (const [, link] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z][a-z+.-]*:/i.test(link!)) continue;
      const [path, anchor] = link!.split("#");
      await check(relative(md), path ? new URL(path, md) : md, anchor, link!);
    }
  }
  // Comments in code cite docs/<file>.md#<anchor>. Migrations are left out (shipped, never edited),
  // but supabase/schema.sql is the schema they make: its object comments are what Studio shows.
  for (const file of [...await filesEndingIn([".ts", ".mts", ".mjs"]), new URL("supabase/schema.sql", ROOT)]) {
    const text = await Deno.readTextFile(file);
    for (const [link, path, anchor] of text.matchAll(/\b(docs\/[a-z0-9-]+\.md)#([a-z0-9_-]*[a-z0-9_])/g)) {
      await check(relative(file), new URL(path!, ROOT), anchor, link!);
    }
  }
  assert.ok(checked > 100, `only ${checked} links found: the scan is broken`);
  assert.deepEqual(broken, []);
});

/** status → codes of an error table whose first column is the status and second the codes. */
function errorTable(md: string, header: string): Map<string, Set<string>> {
  const start = md.indexOf(header);
  assert.ok(start >= 0, `no table headed ${header}`);
  const rows = new Map<string, Set<string>>();
  for (const line of md.slice(start).split("\n").slice(2)) {
    if (!line.startsWith("|")) break;
    const [status, codes] = line.split("|").slice(1, 3).map((c) => c.trim());
    // Parentheses explain (zod `issues`, `Retry-After`); the codes are the backticked words outside them.
    const named = [...codes!.replace(/\([^()]*\)/g, "").matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!);
    rows.set(status!, new Set(named));
  }
  return rows;
}

/** status → codes the code answers: every `new HttpError(<status>, "<code>"` of the functions and the local server. */
async function returnedCodes(): Promise<Map<string, Set<string>>> {
  const out = new Map<string, Set<string>>();
  const dirs = ["supabase/functions/", "scripts/"].map((d) => new URL(d, ROOT));
  for (const file of (await Promise.all(dirs.map((d) => filesEndingIn([".ts"], d)))).flat()) {
    const text = await Deno.readTextFile(file);
    for (const [, status, code] of text.matchAll(/new HttpError\(\s*(\d{3}),\s*"([a-z_]+)"/g)) {
      out.set(status!, (out.get(status!) ?? new Set()).add(code!));
    }
  }
  return out;
}

function differences(returned: Map<string, Set<string>>, documented: Map<string, Set<string>>): string[] {
  const out: string[] = [];
  for (const [status, codes] of returned) {
    for (const code of codes) {
      if (!documented.get(status)?.has(code)) out.push(`${status} ${code}: returned, not in the table`);
    }
  }
  for (const [status, codes] of documented) {
    for (const code of codes) {
      if (!returned.get(status)?.has(code)) out.push(`${status} ${code}: in the table, never returned`);
    }
  }
  return out;
}

Deno.test("docs: the README's and docs/sdk.md's error tables hold every code the functions return, under its status", async () => {
  const returned = await returnedCodes();
  assert.ok([...returned.values()].reduce((n, s) => n + s.size, 0) > 40, "the scan found too few codes");
  const readme = errorTable(await Deno.readTextFile(new URL("README.md", ROOT)), "| status | `code` | when |");
  assert.deepEqual(differences(returned, readme), []);
  const sdk = errorTable(await Deno.readTextFile(new URL("docs/sdk.md", ROOT)), "| status | codes |");
  // The SDK's own: no answer at all (0), or an answer that is not the error shape (any status).
  assert.deepEqual([...sdk.get("0") ?? []], ["network_error", "timeout", "aborted", "client_error"]);
  assert.deepEqual([...sdk.get("any") ?? []], ["http_error"]);
  sdk.delete("0");
  sdk.delete("any");
  // memory-mcp's agent_required is a tool error: no SDK call can be answered it.
  const viaHttp = new Map([...returned].map(([s, c]) => [s, new Set([...c].filter((x) => x !== "agent_required"))]));
  assert.deepEqual(differences(viaHttp, sdk), []);
});

Deno.test("docs: docs/sdk.md's methods table names every method of the client, and no other", async () => {
  const client = createMemoryClient({ supabaseUrl: "http://127.0.0.1:1", accessToken: "unused" });
  const md = await Deno.readTextFile(new URL("docs/sdk.md", ROOT));
  const table = md.slice(md.indexOf("| method | HTTP | what it does |"));
  const documented = new Set<string>();
  for (const line of table.split("\n").slice(2)) {
    if (!line.startsWith("|")) break;
    const first = line.split(/(?<!\\)\|/)[1]!;
    for (const [, name] of first.matchAll(/`([a-zA-Z]+)\(/g)) documented.add(name!);
  }
  assert.deepEqual([...documented].sort(), Object.keys(client).sort());
});

/** The names in the first column of every Markdown table headed `| variable |`, with the file each is in. */
async function documentedVariables(): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const md of await filesEndingIn([".md"])) {
    const lines = (await Deno.readTextFile(md)).split("\n");
    for (let i = 0; i < lines.length; i++) {
      if (!lines[i]!.startsWith("| variable |")) continue;
      for (let j = i + 2; j < lines.length && lines[j]!.startsWith("|"); j++) {
        // `RETRIEVAL_*` names a family, not a variable: only whole names are checked.
        for (const [, name] of lines[j]!.split("|")[1]!.matchAll(/`([A-Z][A-Z0-9_]*[A-Z0-9])`/g)) {
          out.set(name!, relative(md));
        }
      }
    }
  }
  return out;
}

Deno.test("docs: every variable of a configuration table (README, docs/, integrations/) is read by the code", async () => {
  const read = new Set<string>(ENV_VARIABLES);
  const code = ["scripts/", "supabase/functions/", "integrations/", "sdk/", "eval/", "bench/"].map((d) =>
    new URL(d, ROOT)
  );
  for (const file of (await Promise.all(code.map((d) => filesEndingIn([".ts", ".mts", ".mjs", ".sh"], d)))).flat()) {
    const text = await Deno.readTextFile(file);
    // Deno.env.get("X"), process.env.X / ["X"], a hook's env.X, a shell's $X / ${X…}.
    const reads =
      /Deno\.env\.get\("([A-Z][A-Z0-9_]+)"\)|\benv\.([A-Z][A-Z0-9_]+)|\benv\["([A-Z][A-Z0-9_]+)"\]|\$\{?([A-Z][A-Z0-9_]+)/g;
    for (const m of text.matchAll(reads)) read.add((m[1] ?? m[2] ?? m[3] ?? m[4])!);
  }
  const documented = await documentedVariables();
  assert.ok(documented.size > 30, `only ${documented.size} variables found: the scan is broken`);
  assert.deepEqual([...documented].filter(([name]) => !read.has(name)).map(([n, f]) => `${f}: ${n}`), []);
});

Deno.test("docs: every table and function of ours the docs name (`public.x`, `memory_private.x`) is in supabase/schema.sql", async () => {
  const schema = await Deno.readTextFile(new URL("supabase/schema.sql", ROOT));
  const defined = new Set(
    [...schema.matchAll(/\b(?:TABLE|VIEW|FUNCTION|SEQUENCE|TYPE)\s+((?:public|memory_private)\.[a-z0-9_]+)/g)].map((
      m,
    ) => m[1]!),
  );
  const missing: string[] = [];
  let named = 0;
  for (const md of await filesEndingIn([".md"])) {
    for (const [, name] of (await Deno.readTextFile(md)).matchAll(/`((?:public|memory_private)\.[a-z0-9_]+)/g)) {
      named++;
      if (!defined.has(name!)) missing.push(`${relative(md)}: ${name}`);
    }
  }
  assert.ok(named > 50, `only ${named} names found: the scan is broken`);
  assert.deepEqual([...new Set(missing)], []);
});

/** The directories .gitignore names (`eval/results/`): what the code writes there is generated, not in a checkout. */
async function ignoredDirectories(): Promise<string[]> {
  const text = await Deno.readTextFile(new URL(".gitignore", ROOT));
  return text.split("\n").map((l) => l.trim()).filter((l) => l.endsWith("/") && !l.startsWith("#"))
    .map((l) => l.replace(/^\//, ""));
}

Deno.test("docs: every file of the repository the docs name in backticks (`scripts/serve.ts`, `memory-mcp/tools.ts`) exists", async () => {
  // A path is the repository's when its first folder is one of the repository's top folders, or a
  // function's folder (docs write `_shared/…` and `memory-mcp/…` for supabase/functions/…); any
  // other (`src/lib/auth.ts`, `app/checkout/actions.ts`) is an example from a user's project.
  const tops = new Set<string>();
  for await (const e of Deno.readDir(ROOT)) if (e.isDirectory && e.name !== "node_modules") tops.add(e.name);
  const functions = new Set<string>();
  for await (const e of Deno.readDir(new URL("supabase/functions/", ROOT))) if (e.isDirectory) functions.add(e.name);
  const generated = await ignoredDirectories();
  const exists = (path: string) => Deno.stat(new URL(path, ROOT)).then(() => true, () => false);
  const missing: string[] = [];
  let named = 0;
  for (const md of await filesEndingIn([".md"])) {
    const text = await Deno.readTextFile(md);
    for (const [, path] of text.matchAll(/`([\w.-]+(?:\/[\w.-]+)*\/[\w.-]+\.[a-z]{2,5})`/g)) {
      const first = path!.split("/")[0]!;
      const target = tops.has(first) ? path! : functions.has(first) ? `supabase/functions/${path}` : null;
      if (target === null || generated.some((dir) => target.startsWith(dir))) continue;
      named++;
      if (!await exists(target)) missing.push(`${relative(md)}: ${path}`);
    }
  }
  assert.ok(named > 200, `only ${named} paths found: the scan is broken`);
  assert.deepEqual([...new Set(missing)], []);
});

Deno.test("docs: the README's `supabase functions deploy` names every function, and only those", async () => {
  const readme = await Deno.readTextFile(new URL("README.md", ROOT));
  const command = readme.match(/^npx supabase functions deploy ([a-z -]+)$/m);
  assert.ok(command, "no `npx supabase functions deploy` line in the README");
  const functions: string[] = [];
  for await (const e of Deno.readDir(new URL("supabase/functions/", ROOT))) {
    if (
      e.isDirectory &&
      await Deno.stat(new URL(`supabase/functions/${e.name}/index.ts`, ROOT)).then(() => true, () => false)
    ) {
      functions.push(e.name);
    }
  }
  assert.deepEqual(command[1]!.trim().split(/\s+/).sort(), functions.sort());
});

Deno.test("docs: every `npm run <script>` the docs tell a user to type is a script of package.json", async () => {
  const { scripts } = JSON.parse(await Deno.readTextFile(new URL("package.json", ROOT)));
  const missing: string[] = [];
  let named = 0;
  for (const md of await filesEndingIn([".md"])) {
    const text = await Deno.readTextFile(md);
    // In a code span, or starting a line (a command block); in prose or a memory's text, it is a user's project's.
    const commands = [
      ...text.matchAll(/`npm run (?:-s )?([a-z][\w:-]*)[^`]*`/g),
      ...text.matchAll(/^\s*npm run (?:-s )?([a-z][\w:-]*)/gm),
    ];
    for (const [, script] of commands) {
      named++;
      if (!(script! in scripts)) missing.push(`${relative(md)}: npm run ${script}`);
    }
  }
  assert.ok(named > 50, `only ${named} commands found: the scan is broken`);
  assert.deepEqual([...new Set(missing)], []);
});
