// CONVENTIONS §2: one folder per function, shared code in _shared/, and functions never import
// from each other (each function is deployed on its own; a sibling import couples deployments and
// hides shared code outside _shared/). Checked on the source text of every function file.
import assert from "node:assert/strict";

const FUNCTIONS = new URL("../supabase/functions/", import.meta.url);

async function tsFiles(dir: URL): Promise<URL[]> {
  const out: URL[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const url = new URL(entry.name + (entry.isDirectory ? "/" : ""), dir);
    if (entry.isDirectory) out.push(...await tsFiles(url));
    else if (entry.name.endsWith(".ts")) out.push(url);
  }
  return out;
}

/** Relative import/export specifiers of a module (static and dynamic). */
function relativeSpecifiers(source: string): string[] {
  const found: string[] = [];
  for (const m of source.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)) found.push(m[1]!);
  return found;
}

Deno.test("layout: functions import only from their own folder and _shared/, never from another function", async () => {
  const offenders: string[] = [];
  for await (const entry of Deno.readDir(FUNCTIONS)) {
    if (!entry.isDirectory) continue;
    const own = new URL(`${entry.name}/`, FUNCTIONS);
    const allowed = entry.name === "_shared" ? [own] : [own, new URL("_shared/", FUNCTIONS)];
    for (const file of await tsFiles(own)) {
      for (const spec of relativeSpecifiers(await Deno.readTextFile(file))) {
        const target = new URL(spec, file).href;
        if (!allowed.some((dir) => target.startsWith(dir.href))) offenders.push(`${file.href.slice(FUNCTIONS.href.length)} → ${spec}`);
      }
    }
  }
  assert.deepEqual(offenders, []);
});
