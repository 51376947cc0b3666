// Races around One live memory per text (README): two corrections crossing texts at once (A to B
// and B to A) and a remember of a text a correction is replacing. Each waits on pg_locks, no sleeps.
import assert from "node:assert/strict";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, testSql } from "./support/seed.ts";
import { testDatabaseUrl } from "./support/config.ts";
import { createSql, type Tx } from "../supabase/functions/_shared/db.ts";
import { waitUntil } from "./support/wait.ts";
import { realServerOnly } from "./support/backend.ts";

const sql = testSql();
const api = memoryApi(sql);
const opts = { sanitizeOps: false, sanitizeResources: false };
const WHY = "transactions at once: PGlite serves one connection";

async function remember(t: string, content: string, extra: Record<string, unknown> = {}) {
  const r = await api("POST", "/memory/remember", { as: t, body: { content, project: "acme/shop", ...extra } });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body.memory;
}

/** A memory an agent learned: a remember or accept of its text makes it user-stated (an UPDATE of its row). */
async function learned(t: string, content: string, namespace: string): Promise<string> {
  const [row] = await sql<{ id: string }[]>`
    insert into public.devai_memories (owner_id, content, memory_type, namespace, priority, source, importance)
    values (${t}, ${content}, 'semantic', ${namespace}, 'medium', 'discovery', 3)
    returning id`;
  return row!.id;
}

async function waiting(n: number, what: string) {
  await waitUntil(async () => {
    const [{ w } = { w: 0 }] = await sql<{ w: number }[]>`
      select count(distinct pid)::int as w from pg_locks where not granted`;
    return w >= n;
  }, what);
}

/** Runs `lock` in a transaction of its own, held (what a write in progress holds) until the returned function commits. */
async function holdIn(lock: (q: Tx) => Promise<unknown>) {
  const holder = createSql(testDatabaseUrl(), { max: 1 });
  let done!: () => void;
  const until = new Promise<void>((resolve) => done = resolve);
  let locked!: () => void;
  const held = new Promise<void>((resolve) => locked = resolve);
  const tx = holder.begin(async (q) => {
    await lock(q as unknown as Tx);
    locked();
    await until;
  });
  await held;
  return async () => {
    done();
    await tx;
    await holder.end();
  };
}

const holdRows = (ids: string[]) =>
  holdIn((q) => q`select id from public.devai_memories where id = any (${ids}::uuid[]) order by id for no key update`);

Deno.test(
  { ...realServerOnly("two corrections crossing texts at once both answer, no deadlock", WHY), ...opts },
  async () => {
    const t = newTenant();
    const a = await remember(t, "Cache lives in Redis");
    const b = await remember(t, "Cache lives in Memcached");
    const release = await holdRows([a.id, b.id]);
    const ab = api("POST", `/memory/${a.id}/correct`, { as: t, body: { content: "cache lives in memcached" } });
    const ba = api("POST", `/memory/${b.id}/correct`, { as: t, body: { content: "cache lives in redis" } });
    await waiting(2, "both corrections waiting for the rows, each holding its text's lock");
    await release();
    const [r1, r2] = await Promise.all([ab, ba]);
    for (const r of [r1, r2]) assert.ok(r.status < 300, `${r.status} ${JSON.stringify(r.body)}`);
    const live = await sql<{ content: string }[]>`
    select lower(content) as content from public.devai_memories
     where owner_id = ${t} and is_valid and state = 'active' order by 1`;
    // Whatever the order, no text is live twice.
    assert.equal(new Set(live.map((x) => x.content)).size, live.length, JSON.stringify(live));
  },
);

Deno.test(
  { ...realServerOnly("a remember of the text a correction is replacing answers a live memory", WHY), ...opts },
  async () => {
    const t = newTenant();
    const old = { id: await learned(t, "Lint with eslint", "devai/project/acme~shop/notes") };
    const release = await holdRows([old.id]);
    const correcting = api("POST", `/memory/${old.id}/correct`, { as: t, body: { content: "Lint with biome" } });
    await waiting(1, "the correction waiting for the row");
    // The remember finds the old memory live (the correction has not committed) and waits to update it.
    const remembering = api("POST", "/memory/remember", {
      as: t,
      body: { content: "Lint with eslint", project: "acme/shop" },
    });
    await waiting(2, "the remember waiting behind the correction");
    await release();
    const [c, r] = [await correcting, await remembering];
    assert.ok(c.status < 300, JSON.stringify(c.body));
    assert.ok(r.status < 300, JSON.stringify(r.body));
    // The user just said 'Lint with eslint': the answer must be a memory that says it now, live.
    assert.equal(r.body.memory.is_valid, true, `remember answered ${r.status} with ${JSON.stringify(r.body.memory)}`);
  },
);

Deno.test(
  { ...realServerOnly("an accepted proposal of the text a correction is replacing names a live memory", WHY), ...opts },
  async () => {
    const t = newTenant();
    const old = { id: await learned(t, "My name is Ana", "devai/user/preferences") };
    const [p] = await sql<{ id: string }[]>`
      insert into public.memory_proposals (owner_id, field, content, namespace, expires_at)
      values (${t}, 'preferred_name', 'My name is Ana', 'devai/user/preferences', now() + interval '7 days')
      returning id`;
    const release = await holdRows([old.id]);
    const correcting = api("POST", `/memory/${old.id}/correct`, { as: t, body: { content: "My name is Anna" } });
    await waiting(1, "the correction waiting for the row");
    let settled = false;
    const accepting = api("POST", `/memory/proposals/${p!.id}/accept`, { as: t, body: {} }).finally(() =>
      settled = true
    );
    // Fixed, the accept waits for the row; before, it answered at once with the memory being replaced.
    await waitUntil(async () => {
      if (settled) return true;
      const [{ w } = { w: 0 }] = await sql<{ w: number }[]>`
        select count(distinct pid)::int as w from pg_locks where not granted`;
      return w >= 2;
    }, "the accept answered or waiting behind the correction");
    await release();
    const [c, a] = [await correcting, await accepting];
    assert.ok(c.status < 300, JSON.stringify(c.body));
    assert.equal(a.status, 200, JSON.stringify(a.body));
    const [m] = await sql<{ is_valid: boolean; content: string }[]>`
      select is_valid, content from public.devai_memories where id = ${a.body.memory_id}`;
    assert.deepEqual(m, { is_valid: true, content: "My name is Ana" }, "the accepted text, live");
  },
);

Deno.test(
  { ...realServerOnly("a restore whose duplicate is being forgotten comes back valid, not replaced", WHY), ...opts },
  async () => {
    const t = newTenant();
    const mine = await remember(t, "Ship on Thursdays");
    assert.equal((await api("POST", `/memory/${mine.id}/forget`, { as: t, body: {} })).status, 200);
    const copy = await learned(t, "Ship on Thursdays", "devai/project/acme~shop/notes");
    const release = await holdRows([copy]);
    const forgetting = api("POST", `/memory/${copy}/forget`, { as: t, body: {} });
    await waiting(1, "the forget waiting for the copy's row");
    const restoring = api("POST", `/memory/${mine.id}/restore`, { as: t, body: {} });
    await waiting(2, "the restore waiting for the rows");
    await release();
    const [f, r] = [await forgetting, await restoring];
    assert.equal(f.status, 200, JSON.stringify(f.body));
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.memory.is_valid, true, "the copy was forgotten first: nothing replaces it");
    assert.equal(r.body.memory.superseded_by, null);
  },
);

Deno.test(
  { ...realServerOnly("another tenant's text neither holds nor blocks a correction to it", WHY), ...opts },
  async () => {
    const [a, b] = [newTenant(), newTenant()];
    await remember(b, "Use uv for Python");
    const old = await remember(a, "Use pip for Python");
    // Tenant B is storing the text right now: its hash lock is held.
    const release = await holdIn((q) =>
      q`select pg_advisory_xact_lock(hashtextextended(${b} || ':' || encode(sha256(convert_to(
        ${"use uv for python"}, 'UTF8')), 'hex'), 0))`
    );
    try {
      const r = await api("POST", `/memory/${old.id}/correct`, { as: a, body: { content: "Use uv for Python" } });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      assert.equal(r.body.created, true, "B's memory is not A's duplicate");
    } finally {
      await release();
    }
  },
);

Deno.test({ name: "close pool", ...opts }, async () => {
  await sql.end();
});
