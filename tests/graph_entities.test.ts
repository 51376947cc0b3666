// GET /memory/entities and GET /memory/entities/{id}: entities found by name, alias, prefix, inside
// the name or in the summary; search text is plain text (no wildcard, no tsquery syntax error);
// an entity's profile lists the facts that mention it newest first and the episodes that named it
// as a timeline; another tenant's entity is a 404.
import assert from "node:assert/strict";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, testSql } from "./support/seed.ts";

const sql = testSql();
const api = memoryApi(sql);
const opts = { sanitizeOps: false, sanitizeResources: false };

interface Listed {
  id: string;
  canonical_name: string;
  entity_type: string;
  mention_count: number;
  matched: string | null;
}

async function tenantWithEntities(): Promise<string> {
  const t = newTenant();
  const r = await api("POST", "/memory/episodes", {
    as: t,
    body: {
      session_id: "s",
      project: "shop",
      messages: [
        {
          role: "user",
          content: "after upgrading react@18.3.1, src/app.ts fails with TS2322",
          at: "2026-11-01T10:00:00Z",
        },
        {
          role: "assistant",
          content: "src/app.ts passes a string where the Cart type expects a number",
          at: "2026-11-01T10:01:00Z",
        },
        { role: "user", content: "ok, and run `pnpm install` again", at: "2026-11-01T10:02:00Z" },
      ],
    },
  });
  assert.equal(r.status, 201);
  return t;
}

const list = async (t: string, query = "") => {
  const r = await api("GET", `/memory/entities${query}`, { as: t });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.entities as Listed[];
};

Deno.test({
  name: "entities: listed by mentions; q matches the name, an alias, a prefix, the inside of a name, or the summary",
  ...opts,
}, async () => {
  const t = await tenantWithEntities();
  const all = await list(t);
  assert.equal(all[0]!.canonical_name, "src/app.ts");
  assert.equal(all[0]!.mention_count, 2);
  assert.deepEqual(all.map((e) => `${e.entity_type}:${e.canonical_name}`).sort(), [
    "command:pnpm install",
    "error:TS2322",
    "file:src/app.ts",
    "package:react",
  ]);

  assert.deepEqual((await list(t, "?q=SRC/APP.TS")).map((e) => [e.canonical_name, e.matched]), [[
    "src/app.ts",
    "name",
  ]]);
  assert.deepEqual((await list(t, "?q=src")).map((e) => [e.canonical_name, e.matched]), [["src/app.ts", "prefix"]]);
  assert.deepEqual((await list(t, "?q=app")).map((e) => [e.canonical_name, e.matched]), [["src/app.ts", "contains"]]);
  await sql`update public.memory_entities set aliases = '{ReactJS}', summary = 'The UI library the storefront renders with.'
             where owner_id = ${t} and canonical_name = 'react'`;
  assert.deepEqual((await list(t, "?q=react-js")).map((e) => [e.canonical_name, e.matched]), [["react", "alias"]]);
  assert.deepEqual((await list(t, "?q=storefront%20rendering")).map((e) => [e.canonical_name, e.matched]), [[
    "react",
    "summary",
  ]]);
  assert.deepEqual((await list(t, "?type=file")).map((e) => e.canonical_name), ["src/app.ts"]);
});

Deno.test({
  name: "entities: search text is plain text: wildcards and tsquery syntax match nothing and never fail",
  ...opts,
}, async () => {
  const t = await tenantWithEntities();
  for (
    const q of [
      "%",
      "_",
      "%25app",
      "src%",
      "a_p",
      "!&|:*(",
      "'); drop table public.memory_entities; --",
      "react & !src",
      "\\",
    ]
  ) {
    const r = await api("GET", `/memory/entities?q=${encodeURIComponent(q)}`, { as: t });
    assert.equal(r.status, 200, `${q}: ${JSON.stringify(r.body)}`);
    assert.ok(r.body.entities.every((e: Listed) => e.matched !== null), q);
    if (/^[%_\\!&|:*(]+$/.test(q)) assert.deepEqual(r.body.entities, [], `${q} names nothing`);
  }
  assert.equal(
    (await list(t, `?q=${encodeURIComponent("src%")}`)).map((e) => e.canonical_name).join(),
    "src/app.ts",
    "'src%' is the key 'src': a prefix, not a pattern",
  );
  for (const bad of ["?q=", "?limit=0", "?limit=101", "?type=planet", "?colour=red", "?q=a&q=b"]) {
    assert.equal((await api("GET", `/memory/entities${bad}`, { as: t })).status, 400, bad);
  }
});

Deno.test({
  name: "entities: a profile has the facts that mention it (newest first) and the timeline of episodes that named it",
  ...opts,
}, async () => {
  const t = await tenantWithEntities();
  const [file] = await list(t, "?q=src/app.ts");
  await api("POST", "/memory/remember", {
    as: t,
    body: { content: "src/app.ts exports the router.", project: "shop" },
  });
  await api("POST", "/memory/remember", {
    as: t,
    body: { content: "src/app.ts is the storefront entry point.", project: "shop" },
  });
  const r = await api("GET", `/memory/entities/${file!.id}`, { as: t });
  assert.equal(r.status, 200);
  assert.equal(r.body.entity.canonical_name, "src/app.ts");
  assert.equal(r.body.entity.mention_count, 4);
  assert.deepEqual(r.body.facts.map((f: { content: string }) => f.content), [
    "src/app.ts is the storefront entry point.",
    "src/app.ts exports the router.",
  ]);
  assert.deepEqual(r.body.timeline.map((e: { seq: number; role: string; at: string }) => [e.seq, e.role, e.at]), [[
    0,
    "user",
    "2026-11-01T10:00:00.000Z",
  ], [1, "assistant", "2026-11-01T10:01:00.000Z"]]);

  assert.equal(
    (await api("GET", `/memory/entities/${file!.id}`, { as: newTenant() })).status,
    404,
    "another tenant's entity is unknown",
  );
  assert.deepEqual(await list(newTenant(), "?q=src/app.ts"), []);
  assert.equal((await api("GET", "/memory/entities/not-a-uuid", { as: t })).status, 400);
});

Deno.test({ name: "close the pool", ...opts }, async () => {
  await sql.end();
});
