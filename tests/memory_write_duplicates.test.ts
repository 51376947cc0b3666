// A correction or a restore never leaves two live memories saying the same text (letter case and
// spacing aside, remember's duplicate check) in one scope: the memory that already says it replaces
// the corrected or restored one, and the answer says so (README API table, correct and restore).
import assert from "node:assert/strict";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, testSql } from "./support/seed.ts";
import { waitUntil } from "./support/wait.ts";
import { realServerOnly } from "./support/backend.ts";

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
      body: { content: "Use  bun for installs", reason: "switched" },
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

Deno.test(
  {
    name: "a contradiction merged into a text a live memory says is resolved by that memory, nothing inserted",
    ...opts,
  },
  async () => {
    const t = newTenant();
    const a = await remember(t, "CI runs Node 18");
    const b = await remember(t, "CI runs Node 20");
    const held = await remember(t, "CI runs Node 22");
    const [c] = await sql<{ id: string }[]>`
      insert into public.memory_contradictions (owner_id, memory_a, memory_b, detected_by, reason)
      values (${t}, ${a.id}, ${b.id}, 'write', 'two versions') returning id`;
    const r = await api("POST", `/memory/contradictions/${c!.id}/resolve`, {
      as: t,
      body: { resolution: "merged", content: "CI runs  node 22" },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.contradiction.merged_id, held.id, "the memory that says it");
    assert.deepEqual(await liveWith(t, "ci runs node 22"), [held.id]);
    const rows = await sql<{ id: string; superseded_by: string }[]>`
      select id, superseded_by from public.devai_memories where id in (${a.id}, ${b.id})`;
    assert.deepEqual(rows.map((x) => x.superseded_by), [held.id, held.id]);
  },
);

Deno.test(
  { name: "an accepted proposal whose text a live memory visible from its scope says is that memory", ...opts },
  async () => {
    const t = newTenant();
    const held = await remember(t, "My name is Ana", { project: undefined });
    assert.equal(held.namespace, "devai/user/preferences");
    const [p] = await sql<{ id: string }[]>`
      insert into public.memory_proposals (owner_id, field, content, namespace, expires_at)
      values (${t}, 'preferred_name', 'my name is  ana', 'devai/project/acme~shop/notes', now() + interval '7 days')
      returning id`;
    const r = await api("POST", `/memory/proposals/${p!.id}/accept`, { as: t, body: {} });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.memory_id, held.id);
    assert.deepEqual(await liveWith(t, "my name is ana"), [held.id]);
  },
);

Deno.test(
  {
    ...realServerOnly(
      "a correction waits for a remember of its text under way, then is superseded by what it stored",
      "two transactions at once: PGlite serves one connection",
    ),
    ...opts,
  },
  async () => {
    const t = newTenant();
    const old = await remember(t, "Format with prettier");
    // A remember of the same text holds the text's lock (lockContentHash) and has not committed yet.
    const holder = await sql.reserve();
    try {
      await holder`begin`;
      await holder`select pg_advisory_xact_lock(hashtextextended(${t} || ':' || encode(sha256(convert_to(lower(
        btrim(regexp_replace(${"Format with biome"}, ${"\\s+"}, ' ', 'g'))), 'UTF8')), 'hex'), 0))`;
      const [held] = await holder<{ id: string }[]>`
        insert into public.devai_memories (owner_id, content, memory_type, namespace, priority, source, importance)
        values (${t}, 'Format with biome', 'semantic', 'devai/project/acme~shop/notes', 'highest', 'user_stated', 3)
        returning id`;
      const correcting = api("POST", `/memory/${old.id}/correct`, { as: t, body: { content: "Format with  biome" } });
      await waitUntil(
        async () => (await sql`select 1 from pg_locks where locktype = 'advisory' and not granted`).length > 0,
        "the correction waiting for the text's lock",
      );
      await holder`commit`;
      const r = await correcting;
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.memory.id, held!.id, "not a second memory beside the one stored meanwhile");
      assert.deepEqual(await liveWith(t, "format with biome"), [held!.id]);
    } finally {
      holder.release();
    }
  },
);
