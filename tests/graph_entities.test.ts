// GET /memory/entities and GET /memory/entities/{id}: entities found by name, alias, prefix, inside
// the name or in the summary; search text is plain text (no wildcard, no tsquery syntax error);
// an entity's profile lists the facts that mention it newest first and the episodes that named it
// as a timeline; another tenant's entity is a 404.
import assert from "node:assert/strict";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, testSql } from "./support/seed.ts";
import { dbNow } from "./support/as-of.ts";

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
  // Newest first: the second fact is stamped later, even on PGlite's millisecond clock (a tie goes
  // to the memory id, either way round).
  await dbNow(sql);
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

/** Entities inserted as the database owner (seeding, not under test): `n` of them, mentions i % 7 (ties). */
async function tenantWithManyEntities(n: number): Promise<string> {
  const t = newTenant();
  await sql`
    insert into public.memory_entities (owner_id, canonical_name, normalized_name, entity_type, mention_count)
    select ${t}, 'service-' || i, public.memory_entity_key('service-' || i), 'service', i % 7
      from generate_series(1, ${n}) i`;
  return t;
}

/** Every page of the listing by mentions, following next_cursor. */
async function walk(t: string, query: string): Promise<{ pages: number; listed: Listed[] }> {
  const listed: Listed[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const r = await api("GET", `/memory/entities?${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, {
      as: t,
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    listed.push(...r.body.entities);
    cursor = r.body.next_cursor;
    pages++;
  } while (cursor !== null && pages < 100);
  return { pages, listed };
}

Deno.test({
  name: "entities: the listing by mentions pages with next_cursor past 100, each entity exactly once",
  ...opts,
}, async () => {
  const t = await tenantWithManyEntities(250);
  const expected = (await sql<{ id: string }[]>`
    select id::text from public.memory_entities where owner_id = ${t} order by mention_count desc, id`).map((r) =>
    r.id
  );
  for (const [limit, pages] of [[100, 3], [7, 36]] as const) {
    const { pages: walked, listed } = await walk(t, `limit=${limit}`);
    assert.equal(walked, pages, `limit ${limit}`);
    assert.deepEqual(listed.map((e) => e.id), expected, `limit ${limit}: every entity once, by mentions`);
  }
  // An entity mentioned after its page is not listed again on the next one.
  const first = await api("GET", "/memory/entities?limit=10", { as: t });
  await sql`update public.memory_entities set mention_count = mention_count + 100 where id = any (${
    first.body.entities.map((e: Listed) => e.id)
  }::uuid[])`;
  const second = await api("GET", `/memory/entities?limit=10&cursor=${encodeURIComponent(first.body.next_cursor)}`, {
    as: t,
  });
  assert.deepEqual(second.body.entities.map((e: Listed) => e.id), expected.slice(10, 20));
});

Deno.test({
  name: "entities: a cursor this listing did not give this tenant is a 400 that says nothing of what it names",
  ...opts,
}, async () => {
  const t = await tenantWithManyEntities(30);
  const other = await tenantWithManyEntities(30);
  const mine = (await api("GET", "/memory/entities?limit=5", { as: t })).body.next_cursor as string;
  const theirs = (await api("GET", "/memory/entities?limit=5", { as: other })).body.next_cursor as string;
  const [, mentions, id] = JSON.parse(atob(mine.replace(/-/g, "+").replace(/_/g, "/")));
  const cursor = (items: unknown[]) =>
    btoa(JSON.stringify(items)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  const bad: [string, string][] = [
    ["forged", "bm90LWEtY3Vyc29y"],
    ["another tenant's", theirs],
    ["a made-up id", cursor(["entities", mentions, crypto.randomUUID()])],
    ["more mentions than its entity has", cursor(["entities", mentions + 1, id])],
    ["a negative count", cursor(["entities", -1, id])],
    ["unnamed", cursor([mentions, id])],
  ];
  const messages = new Set<string>();
  for (const [what, c] of bad) {
    const r = await api("GET", `/memory/entities?cursor=${encodeURIComponent(c)}`, { as: t });
    assert.equal(r.status, 400, what);
    assert.equal(r.body.error.code, "invalid_cursor", what);
    assert.deepEqual(r.body.error.issues.map((i: { path: string[] }) => i.path), [["cursor"]], what);
    messages.add(r.body.error.message);
  }
  assert.deepEqual([...messages], ["cursor is not a next_cursor of GET memory/entities"], "one message for all");
  const listCursor = cursor(["memories", "2026-11-01T10:00:00.000000", crypto.randomUUID()]);
  const crossed = await api("GET", `/memory/entities?cursor=${listCursor}`, { as: t });
  assert.equal(crossed.status, 400);
  assert.match(crossed.body.error.message, /it is a next_cursor of GET memory$/);
  const entityCursorToList = await api("GET", `/memory?cursor=${encodeURIComponent(mine)}`, { as: t });
  assert.equal(entityCursorToList.status, 400, "the memory list refuses an entity cursor");
  const searched = await api("GET", `/memory/entities?q=service&cursor=${encodeURIComponent(mine)}`, { as: t });
  assert.equal(searched.status, 400, "a search has one page");
  assert.deepEqual(searched.body.error.issues.map((i: { path: string[] }) => i.path), [["cursor"]]);
  assert.equal((await api("GET", `/memory/entities?cursor=${encodeURIComponent(mine)}`, { as: t })).status, 200);
});

Deno.test({
  name: "entities: a cursor of another type's listing is a 400, not a position that leaves this type's entities out",
  ...opts,
}, async () => {
  // Files with 20..11 mentions, persons with 25, 23, .. 7: the two listings interleave.
  const t = newTenant();
  await sql`
    insert into public.memory_entities (owner_id, canonical_name, normalized_name, entity_type, mention_count)
    select ${t}::uuid, 'file-' || i, public.memory_entity_key('file-' || i), 'file', 21 - i from generate_series(1, 10) i
    union all
    select ${t}::uuid, 'person-' || i, public.memory_entity_key('person-' || i), 'person', 27 - 2 * i
      from generate_series(1, 10) i`;
  const page = (query: string) => api("GET", `/memory/entities?${query}`, { as: t });
  const files = await page("type=file&limit=3");
  const persons = await page("type=person&limit=3");
  const names = (r: { body: { entities: Listed[] } }) => r.body.entities.map((e) => e.canonical_name);
  assert.deepEqual(names(files), ["file-1", "file-2", "file-3"]);
  assert.deepEqual(names(persons), ["person-1", "person-2", "person-3"]);
  // The files' cursor (file-3, 18 mentions) given to the persons' listing answered person-5, 6, 7:
  // person-4 (19 mentions), the persons' next, was left out without a word.
  const crossed = await page(`type=person&limit=3&cursor=${encodeURIComponent(files.body.next_cursor)}`);
  assert.equal(crossed.status, 400, JSON.stringify(crossed.body));
  assert.equal(crossed.body.error.code, "invalid_cursor");
  assert.deepEqual(crossed.body.error.issues.map((i: { path: string[] }) => i.path), [["cursor"]]);
  assert.match(crossed.body.error.message, /its entity is not of type person/);
  const next = await page(`type=person&limit=3&cursor=${encodeURIComponent(persons.body.next_cursor)}`);
  assert.deepEqual(names(next), ["person-4", "person-5", "person-6"], "the persons' own cursor pages on");
  // The persons' cursor (person-3, 21 mentions) given to the listing of every type answered from
  // file-1 (20 mentions) on, as if the entities of every type before it had been listed: a page
  // of another listing taken for the next of this one.
  const untyped = await page(`limit=3&cursor=${encodeURIComponent(persons.body.next_cursor)}`);
  assert.equal(untyped.status, 400, JSON.stringify(untyped.body));
  assert.equal(untyped.body.error.code, "invalid_cursor");
  assert.match(untyped.body.error.message, /it pages the listing of type person/);
  const all = await page("limit=3");
  const allNext = await page(`limit=3&cursor=${encodeURIComponent(all.body.next_cursor)}`);
  assert.deepEqual(names(all), ["person-1", "person-2", "person-3"]);
  // file-1 (20 mentions), then person-4 and file-2 (19 each, in id order).
  assert.deepEqual(names(allNext).slice(0, 1), ["file-1"], "the untyped listing's own cursor pages on");
  assert.deepEqual(names(allNext).slice(1).sort(), ["file-2", "person-4"]);
});

Deno.test({ name: "close the pool", ...opts }, async () => {
  await sql.end();
});
