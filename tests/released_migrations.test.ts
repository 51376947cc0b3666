// A released migration is final: `supabase db push` never applies a version twice, so a database
// that applied a file keeps that text's objects, and an edit reaches fresh installs only (the
// drift 20261129200000 had to repair; docs/upgrading.md#released-migrations-are-final).
// tests/fixtures/released-migrations.sha256 records each migration's text (`sha256sum` format:
// `sha256sum -c` reads it too); the author of a new migration appends its line.
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const REPO = fileURLToPath(new URL("..", import.meta.url));
const LIST = "tests/fixtures/released-migrations.sha256";

async function sha256(path: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", await Deno.readFile(`${REPO}/${path}`));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function recorded(): Promise<{ hash: string; path: string }[]> {
  const lines = (await Deno.readTextFile(`${REPO}/${LIST}`)).split("\n").filter((l) => l.trim() !== "");
  return lines.map((line) => {
    const m = line.match(/^([0-9a-f]{64}) [ *](supabase\/migrations\/[0-9]{14}_[a-z0-9_]+\.sql)$/);
    assert.ok(m, `${LIST}: not a "<sha256>  supabase/migrations/<file>" line: ${line}`);
    return { hash: m[1]!, path: m[2]! };
  });
}

Deno.test("released migrations: every recorded migration file is still there, with the text it was released with", async () => {
  const changed: string[] = [];
  for (const { hash, path } of await recorded()) {
    const actual = await sha256(path).catch((e) => e instanceof Deno.errors.NotFound ? "missing" : Promise.reject(e));
    if (actual !== hash) changed.push(`${path}: ${actual === "missing" ? "deleted or renamed" : "edited"}`);
  }
  assert.deepEqual(
    changed,
    [],
    "a released migration changes nothing on a database that applied it: put the change in a new migration instead",
  );
});

Deno.test("released migrations: a new migration sorts after every recorded one", async () => {
  const listed = new Set((await recorded()).map((r) => r.path.slice("supabase/migrations/".length)));
  const last = [...listed].sort().at(-1)!;
  const files = [...Deno.readDirSync(`${REPO}/supabase/migrations`)].map((e) => e.name).filter((n) =>
    n.endsWith(".sql")
  );
  // db push refuses (without --include-all) a file older than the newest one a database applied.
  const inserted = files.filter((n) => !listed.has(n) && n < last).sort();
  assert.deepEqual(inserted, [], `new migrations must sort after ${last}`);
});
