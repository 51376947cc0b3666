// A correction or a restore never leaves two live memories saying the same text (letter case and
// spacing aside, remember's duplicate check) in one scope: the memory that already says it replaces
// the corrected or restored one, and the answer says so (README API table, correct and restore).
import assert from "node:assert/strict";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, testSql } from "./support/seed.ts";

const sql = testSql();
const api = memoryApi(sql);
const opts = { sanitizeOps: false, sanitizeResources: false };

async function remember(t: string, content: string, extra: Record<string, unknown> = {}) {
  const r = await api("POST", "/memory/remember", { as: t, body: { content, project: "acme/shop", ...extra } });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body.memory;
}

async function liveWith(t: string, text: string): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`
    select id from public.devai_memories
     where owner_id = ${t} and is_valid and state = 'active' and lower(regexp_replace(content, ${"\\s+"}, ' ', 'g')) = lower(${text}) order by id`;
  return rows.map((r) => r.id);
}

Deno.test(
  { name: "a correction to a text another live memory says is superseded by that memory, nothing inserted", ...opts },
  async () => {
    const t = newTenant();
    const held = await remember(t, "Use bun for installs");
    const old = await remember(t, "Use pnpm for installs", { metadata: { category: "commands" } });
    await api("POST", `/memory/${old.id}/pin`, { as: t, body: {} });
    const r = await api("POST", `/memory/${old.id}/correct`, {
      as: t,
      body: { content: "use  BUN for installs", reason: "switched" },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.created, false);
    assert.equal(r.body.memory.id, held.id, "the memory that says it already");
    assert.equal(r.body.memory.content, "Use bun for installs", "its text, as it is");
    assert.equal(r.body.memory.pinned, true, "the pin of the fact it replaces carries over");
    assert.equal(r.body.superseded.id, old.id);
    assert.equal(r.body.superseded.superseded_by, held.id);
    assert.equal(r.body.superseded.is_valid, false);
    assert.deepEqual(await liveWith(t, "use bun for installs"), [held.id], "one live memory says it");
    assert.deepEqual(await liveWith(t, "use pnpm for installs"), []);
    const [edge] = await sql<{ evidence: unknown }[]>`
      select evidence from public.memory_relations
       where from_id = ${held.id} and to_id = ${old.id} and relation_type = 'supersedes'`;
    assert.ok(edge, "a supersedes edge from the survivor");
    assert.match(JSON.stringify(edge!.evidence), /switched/, "the reason is kept on the edge");
    const [{ n } = { n: -1 }] = await sql<
      { n: number }[]
    >`select count(*)::int as n from public.devai_memories where owner_id = ${t}`;
    assert.equal(n, 2, "no row inserted");
  },
);

Deno.test(
  { name: "a correction to a text only an agent learned makes that memory user-stated", ...opts },
  async () => {
    const t = newTenant();
    const old = await remember(t, "Deploy on Fridays");
    const [learned] = await sql<{ id: string }[]>`
      insert into public.devai_memories (owner_id, content, memory_type, namespace, priority, source, importance)
      values (${t}, 'Deploy on Mondays', 'semantic', 'devai/project/acme~shop/notes', 'medium', 'discovery', 3)
      returning id`;
    const r = await api("POST", `/memory/${old.id}/correct`, { as: t, body: { content: "Deploy on Mondays" } });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.memory.id, learned!.id);
    assert.equal(r.body.memory.priority, "highest");
    assert.equal(r.body.memory.source, "user_stated");
  },
);

Deno.test(
  { name: "a correction is a new memory when the text is only in another project's scope", ...opts },
  async () => {
    const t = newTenant();
    await remember(t, "Use bun for installs", { project: "acme/other" });
    const old = await remember(t, "Use pnpm for installs");
    const r = await api("POST", `/memory/${old.id}/correct`, { as: t, body: { content: "Use bun for installs" } });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal(r.body.created, true);
    assert.equal(r.body.memory.source, "correction");
  },
);

async function forgotten(t: string, content: string) {
  const m = await remember(t, content);
  assert.equal((await api("POST", `/memory/${m.id}/forget`, { as: t, body: {} })).status, 200);
  return m;
}

Deno.test(
  { name: "a restore of a forgotten memory whose text a live memory now says comes back replaced by it", ...opts },
  async () => {
    const t = newTenant();
    const old = await forgotten(t, "Tests run with vitest");
    const now = await remember(t, "tests run with  Vitest");
    assert.notEqual(now.id, old.id);
    const r = await api("POST", `/memory/${old.id}/restore`, { as: t, body: {} });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.changed, true);
    assert.equal(r.body.memory.state, "active");
    assert.equal(r.body.memory.is_valid, false);
    assert.equal(r.body.memory.superseded_by, now.id, "names the memory that says it");
    assert.deepEqual(await liveWith(t, "tests run with vitest"), [now.id], "one live memory says it");
    const events = await sql<{ event: string }[]>`
      select event from public.memory_history where memory_id = ${old.id} order by ts, id`;
    // One transaction (one ts): the order within it is not recorded.
    assert.deepEqual(events.map((e) => e.event).slice(-2).sort(), ["MERGE", "RESTORE"]);

    // Without a live duplicate it comes back valid.
    const alone = await forgotten(t, "Lint with biome");
    const back = await api("POST", `/memory/${alone.id}/restore`, { as: t, body: {} });
    assert.equal(back.status, 200);
    assert.equal(back.body.memory.is_valid, true);
    assert.equal(back.body.memory.superseded_by, null);
  },
);
