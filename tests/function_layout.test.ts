// CONVENTIONS §2: one folder per function, shared code in _shared/, and functions never import
// from each other (each function is deployed on its own; a sibling import couples deployments and
// hides shared code outside _shared/). Checked on the source text of every function file. Each
// function is deployable alone (CONVENTIONS §18: index.ts + its own deno.json) and no file grows
// past ~300 lines (§13).
import assert from "node:assert/strict";
import { tsFiles } from "./support/source-files.ts";

const FUNCTIONS = new URL("../supabase/functions/", import.meta.url);

/** Relative import/export specifiers of a module (static and dynamic). */
function relativeSpecifiers(source: string): string[] {
  const found: string[] = [];
  for (const m of source.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)) found.push(m[1]!);
  return found;
}

Deno.test("layout: functions import only from their own folder and _shared/, never from another function", async () => {
  // The scan sees both kinds of import it checks (else an empty offender list proves nothing).
  assert.deepEqual(
    relativeSpecifiers('import {\n  a,\n} from "../memory/handler.ts";\nconst m = await import("./x.ts");'),
    ["../memory/handler.ts", "./x.ts"],
  );
  const offenders: string[] = [];
  let shared = 0;
  for await (const entry of Deno.readDir(FUNCTIONS)) {
    if (!entry.isDirectory) continue;
    const own = new URL(`${entry.name}/`, FUNCTIONS);
    const allowed = entry.name === "_shared" ? [own] : [own, new URL("_shared/", FUNCTIONS)];
    for (const file of await tsFiles(own)) {
      for (const spec of relativeSpecifiers(await Deno.readTextFile(file))) {
        const target = new URL(spec, file).href;
        if (entry.name !== "_shared" && target.startsWith(new URL("_shared/", FUNCTIONS).href)) shared++;
        if (!allowed.some((dir) => target.startsWith(dir.href))) {
          offenders.push(`${file.href.slice(FUNCTIONS.href.length)} → ${spec}`);
        }
      }
    }
  }
  assert.deepEqual(offenders, []);
  assert.ok(shared >= 20, `the functions' imports of _shared/ were read (${shared})`);
});

/** The function folders: every folder of supabase/functions/ but _shared (and dot folders). */
async function functionDirs(): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(FUNCTIONS)) {
    if (entry.isDirectory && !entry.name.startsWith("_") && !entry.name.startsWith(".")) names.push(entry.name);
  }
  return names.sort();
}

Deno.test("layout: each function has index.ts and its own deno.json, pinning what supabase/functions/deno.json pins", async () => {
  const root = JSON.parse(await Deno.readTextFile(new URL("deno.json", FUNCTIONS))) as {
    imports: Record<string, string>;
  };
  const problems: string[] = [];
  const names = await functionDirs();
  assert.ok(names.length >= 6, `expected the functions, found ${names.join(", ")}`);
  for (const name of names) {
    const dir = new URL(`${name}/`, FUNCTIONS);
    const exists = async (file: string) =>
      (await Deno.stat(new URL(file, dir)).catch(() => undefined))?.isFile === true;
    if (!await exists("index.ts")) problems.push(`${name}: no index.ts (the entry point deploy bundles)`);
    if (!await exists("deno.json")) {
      problems.push(`${name}: no deno.json (its import map for supabase functions deploy)`);
      continue;
    }
    const own = JSON.parse(await Deno.readTextFile(new URL("deno.json", dir))) as { imports?: Record<string, string> };
    // One version of each package across functions: a function pins what the shared config pins
    // (the per-function import is checked for completeness by npm test's deploy check).
    for (const [specifier, target] of Object.entries(own.imports ?? {})) {
      if (root.imports[specifier] !== target) {
        problems.push(
          `${name}/deno.json maps ${specifier} to ${target}; supabase/functions/deno.json: ${root.imports[specifier]}`,
        );
      }
    }
  }
  assert.deepEqual(problems, []);
});

Deno.test("layout: no file in supabase/functions/ is past 300 lines (split it by concern)", async () => {
  const long: string[] = [];
  const files = await tsFiles(FUNCTIONS);
  assert.ok(files.length >= 50, `expected the functions' files, found ${files.length}`);
  for (const file of files) {
    const lines = (await Deno.readTextFile(file)).split("\n").length - 1;
    if (lines > 300) long.push(`${file.href.slice(FUNCTIONS.href.length)}: ${lines} lines`);
  }
  assert.deepEqual(long, []);
});
