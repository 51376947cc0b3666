// Pure pieces of the memory function, tested on their own: the list cursor, decay predictions,
// the Markdown export's paths and front matter, and the purge grace setting.
import assert from "node:assert/strict";
import { EmbedJobPayloadSchema } from "../supabase/functions/_shared/graph-jobs.ts";
import { ContradictionCheckPayloadSchema } from "../supabase/functions/_shared/contradiction-check.ts";
import { decodeCursor, encodeCursor } from "../supabase/functions/_shared/memories/cursor.ts";
import { daysUntilPrune, predictStrength } from "../supabase/functions/_shared/memories/weak.ts";
import {
  frontMatter,
  MarkdownPaths,
  memoryToMarkdown,
  slugify,
  yamlScalar,
} from "../supabase/functions/_shared/memories/export-markdown.ts";
import { decaySettings, purgeGraceDays } from "../supabase/functions/_shared/memories/settings.ts";
import { HttpError } from "../supabase/functions/_shared/http.ts";
import type { Memory } from "../supabase/functions/_shared/memories/schemas.ts";
import { testSql } from "./support/seed.ts";

const DAY = 86_400_000;

Deno.test("cursor round-trips with microseconds and rejects anything else with a 400", () => {
  const c = { ts: "2026-01-02T03:04:05.123456", id: "0b5c2a8e-4d0f-4c1e-9a51-6a2f3c8d9e10" };
  assert.deepEqual(decodeCursor(encodeCursor("memories", c), "memories"), c);
  assert.deepEqual(decodeCursor(encodeCursor("history", c), "history"), c);
  assert.match(encodeCursor("memories", c), /^[A-Za-z0-9_-]+$/, "url-safe");
  // A cursor issued before cursors named their listing is still read (its listing is checked by id).
  assert.deepEqual(decodeCursor(btoa(JSON.stringify([c.ts, c.id])), "memories"), { ...c, unmarked: true });
  const refused = (bad: string, kind: "memories" | "history", message: RegExp) =>
    assert.throws(
      () => decodeCursor(bad, kind),
      (e: unknown) =>
        e instanceof HttpError && e.status === 400 && e.code === "invalid_cursor" && message.test(e.message) &&
        JSON.stringify(e.issues) ===
          JSON.stringify([{
            path: ["cursor"],
            message: `the next_cursor of the previous ${
              kind === "memories" ? "GET memory" : "GET memory/{id}/history"
            } page, unchanged (opaque text)`,
          }]),
      bad,
    );
  // An empty cursor says how to ask for the first page.
  refused("", "memories", /^cursor is not a next_cursor of GET memory: leave cursor out for the first page$/);
  for (
    const bad of [
      "!!!",
      btoa("[1,2]"),
      btoa("{}"),
      btoa(JSON.stringify(["2026-01-02", c.id])),
      btoa(JSON.stringify([c.ts, "x"])),
      btoa(JSON.stringify(["memories", c.ts])),
      btoa(JSON.stringify(["constructor", c.ts, c.id])),
      btoa(JSON.stringify([c.ts, c.id, "memories"])),
      btoa(JSON.stringify(["history", "memories", c.ts, c.id])),
      btoa(JSON.stringify([0, 0, 0, c.ts, c.id])),
      // An id the API's uuid rule refuses (GET memory/{id} answers it invalid_id) is no row's of a page.
      btoa(JSON.stringify(["memories", c.ts, "12345678-1234-1234-1234-123456789abc"])),
    ]
  ) refused(bad, "memories", /^cursor is not a next_cursor of GET memory$/);
  refused(encodeCursor("history", c), "memories", /GET memory: it is a next_cursor of GET memory\/\{id\}\/history$/);
  refused(encodeCursor("memories", c), "history", /GET memory\/\{id\}\/history: it is a next_cursor of GET memory$/);
});

Deno.test("decay predictions use the settings and whole days, like public.memory_decayed_strength", () => {
  const cfg = { decayBase: 0.95, pruneThreshold: 0.05 };
  const now = new Date("2026-06-01T00:00:00Z");
  const tenDaysAgo = new Date(now.getTime() - 10.9 * DAY);
  assert.ok(Math.abs(predictStrength(1, tenDaysAgo, now, cfg) - 0.95 ** 10) < 1e-12, "10.9 days decay as 10");
  assert.equal(
    predictStrength(0.7, new Date(now.getTime() + DAY), now, cfg),
    0.7,
    "a future access time counts as now",
  );
  assert.ok(Math.abs(predictStrength(1, tenDaysAgo, now, { ...cfg, decayBase: 0.9 }) - 0.9 ** 10) < 1e-12);
  assert.equal(daysUntilPrune(1, now, now, cfg), 59);
  assert.equal(daysUntilPrune(1, tenDaysAgo, now, cfg), 49);
  assert.equal(daysUntilPrune(0.04, now, now, cfg), 0);
  assert.equal(daysUntilPrune(1, new Date(now.getTime() - 100 * DAY), now, cfg), 0);
});

Deno.test("slugs are short lower-case ASCII words; YAML scalars are quoted only when needed", () => {
  assert.equal(slugify("The Stripe API key is stored in the vault!"), "the-stripe-api-key-is-stored-in-the-vault");
  assert.equal(slugify("Café déjà vu"), "cafe-deja-vu");
  assert.equal(slugify("日本語だけ"), "memory");
  assert.ok(slugify("word ".repeat(40)).length <= 48);
  assert.equal(slugify("x".repeat(80)).length, 48);
  assert.equal(yamlScalar("devai/global/x"), "devai/global/x");
  assert.equal(yamlScalar("11111111-2222-4333-8444-555555555555"), "11111111-2222-4333-8444-555555555555");
  // What YAML 1.1 readers (PyYAML, js-yaml) would read as another type: a date, a timestamp, an int, a float.
  for (const s of ["2024-01-15", "2026-01-02T03:04:05.000Z", "0b101", "1.2_3", "1.", "1234567", "0777"]) {
    assert.equal(yamlScalar(s), JSON.stringify(s), s);
  }
  assert.equal(yamlScalar("true"), '"true"');
  assert.equal(yamlScalar("42"), '"42"');
  assert.equal(yamlScalar("a: b"), '"a: b"');
  assert.equal(yamlScalar('say "hi"\nnow'), '"say \\"hi\\"\\nnow"');
  assert.equal(yamlScalar(null), "null");
  assert.equal(yamlScalar(3), "3");
});

function memory(over: Partial<Memory>): Memory {
  return {
    id: "11111111-2222-4333-8444-555555555555",
    content: "Deployed v2.1",
    memory_type: "episodic",
    namespace: "devai/project/web/notes",
    priority: "medium",
    valid_from: "2026-05-01T00:00:00.000Z",
    valid_until: null,
    source: null,
    strength: 0.812345,
    base_strength: 1,
    access_count: 0,
    last_accessed_at: "2024-01-20T10:00:00.000Z",
    session_id: null,
    is_valid: true,
    superseded_by: null,
    created_at: "2024-01-20T10:00:00.000Z",
    updated_at: "2024-01-20T10:00:00.000Z",
    importance: 3,
    pinned: false,
    state: "active",
    purge_at: null,
    embedding_model: null,
    metadata: {},
    content_hash: "x",
    ...over,
  };
}

Deno.test("markdown paths stay unique and the set of used paths holds one date's, not the tenant's", () => {
  // 3 days x 400 memories in creation order, every one of a day with the same slug (the worst case
  // for collisions) and some of them with the slug a collision's suffix makes.
  const paths = new MarkdownPaths();
  const seen = new Set<string>();
  let largest = 0;
  for (const day of ["2024-01-20", "2024-01-21", "2024-01-22"]) {
    for (let i = 0; i < 400; i++) {
      const id = `${(i % 2 ? "abcdef01" : i.toString(16).padStart(8, "0"))}-2222-4333-8444-${day.slice(-2)}${
        String(i).padStart(10, "0")
      }`;
      const content = i % 50 === 49 ? "Same note abcdef01" : "Same note";
      const path = paths.pathFor(memory({ id, content, created_at: `${day}T10:00:00.000Z` }));
      assert.ok(!seen.has(path), `${path} given twice`);
      seen.add(path);
      largest = Math.max(largest, paths.size);
    }
  }
  assert.equal(seen.size, 1200);
  assert.equal(largest, 400, "at most one date's paths are held (it was every path: 1200)");
  assert.ok(seen.has("episodic/2024-01-21-same-note.md"), "the first of a date keeps the plain path");
});

Deno.test("markdown files: seed 002 layout, front matter fields, stable unique paths", () => {
  const a = memory({ metadata: { keywords: ["deploy", "v2"], category: "event" } });
  const b = memory({
    id: "99999999-2222-4333-8444-555555555555",
    content: "Deployed v2.1!",
    created_at: "2024-01-20T11:00:00.000Z",
  });
  const gone = memory({
    id: "aaaaaaaa-2222-4333-8444-555555555555",
    content: "Old note",
    memory_type: "semantic",
    state: "soft_deleted",
    purge_at: "2024-02-20T00:00:00.000Z",
  });
  // In creation order (created_at, id), as the export reads them.
  const inOrder = [a, gone, b].sort((x, y) => x.created_at.localeCompare(y.created_at) || x.id.localeCompare(y.id));
  const pathsOf = () => {
    const paths = new MarkdownPaths();
    return inOrder.map((m) => paths.pathFor(m));
  };
  assert.deepEqual(pathsOf(), [
    "episodic/2024-01-20-deployed-v2-1.md",
    "semantic/2024-01-20-old-note.md",
    "episodic/2024-01-20-deployed-v2-1-99999999.md",
  ]);
  const fm = frontMatter(a);
  assert.match(
    fm,
    /^---\nid: 11111111-2222-4333-8444-555555555555\nnamespace: devai\/project\/web\/notes\nmemory_type: episodic\n/,
  );
  assert.match(fm, /\nkeywords: \[deploy, v2\]\n/);
  assert.match(fm, /\ncategory: event\n/);
  assert.match(fm, /\nstrength: 0.8123\n---\n$/);
  assert.doesNotMatch(fm, /purge_at|superseded_by|session_id/, "absent optional fields are left out");
  // memory.query's metadata filters and the code lineage are kept too (README: the Markdown export
  // writes agent_id, run_id, actor_id, user_id and keywords into front matter).
  const lineage = frontMatter(memory({
    metadata: {
      agent_id: "coder",
      run_id: "run-7",
      actor_id: "ana",
      user_id: "u-1",
      role: "user",
      repo: "acme/web",
      branch: "feat/gift-cards",
      commit: "a1b2c3d",
      files: ["src/auth/session.ts", "app/checkout/actions.ts"],
    },
  }));
  for (
    const line of [
      "agent_id: coder",
      "run_id: run-7",
      "actor_id: ana",
      "user_id: u-1",
      "role: user",
      "repo: acme/web",
      "branch: feat/gift-cards",
      "commit: a1b2c3d",
      "files: [src/auth/session.ts, app/checkout/actions.ts]",
    ]
  ) assert.ok(lineage.includes(`\n${line}\n`), line);
  assert.match(memoryToMarkdown(gone), /\nstate: soft_deleted\n[\s\S]*\npurge_at: 2024-02-20T00:00:00.000Z\n/);
  // A session or branch named like a date or a number is read back as text; the memory's own
  // timestamps stay plain, read as timestamps.
  const dated = frontMatter(memory({ session_id: "2024-01-15", metadata: { branch: "0b101", commit: "1234567" } }));
  for (const line of ['session_id: "2024-01-15"', 'branch: "0b101"', 'commit: "1234567"']) {
    assert.ok(dated.includes(`\n${line}\n`), line);
  }
  assert.match(dated, /\ncreated_at: \d{4}-\d{2}-\d{2}T[\d:.]+Z\nupdated_at: \d{4}-\d{2}-\d{2}T[\d:.]+Z\n/);
  assert.ok(memoryToMarkdown(a).endsWith("---\n\nDeployed v2.1\n"));
});

Deno.test({
  name: "purge grace and decay settings come from public.memory_settings (name, value)",
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const sql = testSql(1);
  const rollback = new Error("rollback");
  try {
    await assert.rejects(
      sql.begin(async (tx) => {
        await tx`update public.memory_settings set value = 7.5 where name = 'purge_grace_days'`;
        await tx`update public.memory_settings set value = 0.9 where name = 'decay_base'`;
        const asTenant = JSON.stringify({ sub: crypto.randomUUID(), role: "authenticated" });
        await tx`select set_config('role', 'authenticated', true), set_config('request.jwt.claims', ${asTenant}, true)`;
        assert.equal(await purgeGraceDays(tx), 7.5);
        assert.deepEqual(await decaySettings(tx), { decayBase: 0.9, pruneThreshold: 0.05 });
        throw rollback;
      }),
      (e: unknown) => e === rollback,
    );
  } finally {
    await sql.end();
  }
});

Deno.test("a job payload's memory id that is no uuid says so as every id field does", () => {
  for (
    const schema of [
      EmbedJobPayloadSchema,
      ContradictionCheckPayloadSchema,
    ] as { safeParse(v: unknown): { success: boolean; error?: { issues: { message: string }[] } } }[]
  ) {
    const r = schema.safeParse({ memory_ids: ["not-a-uuid"] });
    assert.equal(r.success, false);
    assert.equal(r.error!.issues[0]!.message, "expected a uuid");
  }
});
