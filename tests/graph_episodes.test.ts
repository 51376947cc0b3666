// POST /memory/episodes and POST /memory/sessions/{id}/end against the real database: episodes
// stored as they happen (role, seq, event time, temporal chain, entities, keyword search at once,
// embedded in the request or by a queued job), idempotent per (session, digest), bad input a 4xx
// that writes nothing, and a session that ends once with one consolidation job.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { drainQueue } from "../supabase/functions/_shared/drain-queue.ts";
import { LOCAL_EMBEDDING_MODEL } from "../supabase/functions/_shared/env.ts";
import { MAX_EPISODES_PER_BATCH } from "../supabase/functions/_shared/episodes.ts";
import { createHandler as createRetrieveHandler } from "../supabase/functions/memory-retrieve/handler.ts";
import { localEmbedder } from "../supabase/functions/_shared/embeddings.ts";
import { userHeaders } from "./support/auth.ts";
import { realServerOnly } from "./support/backend.ts";
import { testConfig } from "./support/config.ts";
import { memoryApi } from "./support/memory-api.ts";
import type { Tx } from "../supabase/functions/_shared/db.ts";
import { newTenant, seedRelation, tenantWrites, testSql } from "./support/seed.ts";
import { waitUntil } from "./support/wait.ts";
import { EMBEDDING_MODEL, writeEnv } from "./write_helpers.ts";

const sql = testSql();
const api = memoryApi(sql, { config: { maxBodyBytes: 16 * 1024 } });
const opts = { sanitizeOps: false, sanitizeResources: false };

const post = (t: string, body: unknown) => api("POST", "/memory/episodes", { as: t, body });

async function episodesOf(t: string, session: string) {
  return await sql<
    {
      id: string;
      content: string;
      role: string;
      seq: number;
      valid_from: Date;
      namespace: string;
      importance: number;
      embedding_model: string | null;
      has_vector: boolean;
    }[]
  >`
    select id, content, metadata ->> 'role' as role, (metadata ->> 'seq')::int as seq, valid_from, namespace, importance,
           embedding_model, embedding is not null as has_vector
      from public.devai_memories where owner_id = ${t} and session_id = ${session} and source = 'conversation'
     order by (metadata ->> 'seq')::int`;
}

async function sessionWrites(t: string) {
  const [r] = await sql<{ sessions: number; jobs: number; edges: number; links: number }[]>`
    select (select count(*)::int from public.memory_sessions where owner_id = ${t}) as sessions,
           (select count(*)::int from public.memory_jobs where owner_id = ${t}) as jobs,
           (select count(*)::int from public.memory_relations where owner_id = ${t}) as edges,
           (select count(*)::int from public.memory_entity_links where owner_id = ${t}) as links`;
  return { ...(await tenantWrites(sql, t)), ...r! };
}

/**
 * Starts `sends` while a side transaction holds the lock `take` takes, and lets go once `waiters`
 * of this test's backends wait (on it or on each other): the sends overlap at that point. A send
 * that must start after another has reached its wait awaits `waiting(n)`: n backends wait.
 */
async function overlapped<T>(
  take: (tx: Tx) => Promise<unknown>,
  waiters: number,
  sends: (waiting: (n: number) => Promise<void>) => Promise<T>[],
) {
  const side = testSql(2);
  try {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let holding!: (pid: number) => void;
    const holder = new Promise<number>((r) => (holding = r));
    const held = side.begin(async (tx) => {
      await take(tx);
      const [me] = await tx<{ pid: number }[]>`select pg_backend_pid() as pid`;
      holding(me!.pid);
      await released;
    });
    const pid = await holder;
    // Bounded (support/wait.ts): a send that never waits (refused at once, say) fails the test
    // instead of polling for good.
    const waiting = async (n: number) => {
      await waitUntil(
        async () => {
          const [w] = await side<{ n: number }[]>`
            select count(*)::int as n from pg_stat_activity a
             where a.datname = current_database() and a.application_name = 'devai-memory-tests' and a.pid <> ${pid}::int
               and cardinality(pg_blocking_pids(a.pid)) > 0`;
          return w!.n >= n;
        },
        `${n} of this test's backends waiting on a lock`,
        { pollMs: 5 },
      );
    };
    const started = sends(waiting);
    await waiting(waiters);
    release();
    await held;
    return await Promise.all(started);
  } finally {
    await side.end();
  }
}

Deno.test({
  name: "episodes: each message becomes an episodic memory with role, seq and event time, chained across batches",
  ...opts,
}, async () => {
  const t = newTenant();
  const project = `shop-${crypto.randomUUID().slice(0, 6)}`;
  const first = await post(t, {
    session_id: "sess-1",
    project,
    messages: [
      { role: "user", content: "The build fails in src/app.ts with TS2322", at: "2026-11-01T10:00:00Z" },
      { role: "assistant", content: "Fixed the type annotation in src/app.ts" },
      { role: "user", content: "thanks, now run `pnpm run build`" },
    ],
  });
  assert.equal(first.status, 201, JSON.stringify(first.body));
  assert.equal(first.body.stored, 3);
  assert.equal(first.body.embedding, "inline");
  assert.deepEqual(
    first.body.episodes.map((e: { seq: number; role: string; duplicate: boolean }) => [e.seq, e.role, e.duplicate]),
    [[0, "user", false], [1, "assistant", false], [2, "user", false]],
  );

  const second = await post(t, {
    session_id: "sess-1",
    project,
    messages: [{ role: "assistant", content: "Build passes." }, { role: "user", content: "great" }],
  });
  assert.equal(second.status, 201);
  const rows = await episodesOf(t, "sess-1");
  assert.deepEqual(rows.map((r) => [r.seq, r.role]), [[0, "user"], [1, "assistant"], [2, "user"], [3, "assistant"], [
    4,
    "user",
  ]]);
  assert.equal(
    rows[0]!.valid_from.toISOString(),
    "2026-11-01T10:00:00.000Z",
    "valid_from is when the message was sent",
  );
  assert.ok(rows.every((r) => r.namespace === `devai/project/${project}/episodes` && r.importance === 2));
  assert.ok(
    rows.every((r) => r.has_vector && r.embedding_model === LOCAL_EMBEDDING_MODEL),
    "embedded in the request by the local embedder",
  );

  const edges = await sql<{ from_id: string; to_id: string }[]>`
    select from_id, to_id from public.memory_relations where owner_id = ${t} and relation_type = 'temporal'`;
  const next = new Map(edges.map((e) => [e.from_id, e.to_id]));
  assert.equal(edges.length, 4);
  for (let i = 0; i < 4; i++) assert.equal(next.get(rows[i]!.id), rows[i + 1]!.id, `episode ${i} → ${i + 1}`);

  const [logged] = await sql`select count(*)::int as n from public.memory_change_log where owner_id = ${t}`;
  assert.equal(logged!.n, 0, "the conversation is not a memory update: no delta-header rows");
  const [history] =
    await sql`select count(*)::int as n from public.memory_history where owner_id = ${t} and event = 'ADD'`;
  assert.equal(history!.n, 5, "but every episode is an ADD in the history");
  const [session] = await sql`select episode_count, last_episode_id from public.memory_sessions where owner_id = ${t}`;
  assert.deepEqual({ ...session }, { episode_count: 5, last_episode_id: rows[4]!.id });
  const [entity] =
    await sql`select mention_count from public.memory_entities where owner_id = ${t} and canonical_name = 'src/app.ts'`;
  assert.equal(entity?.mention_count, 2, "rules linked src/app.ts to both messages naming it");

  // Keyword-searchable at once, as the tenant.
  const hits = await sql.begin(async (tx) => {
    await tx`select set_config('role', 'authenticated', true), set_config('request.jwt.claims', ${
      JSON.stringify({ sub: t, role: "authenticated" })
    }, true)`;
    return await tx`select id from public.devai_memories where fts @@ websearch_to_tsquery('english', 'TS2322')`;
  });
  assert.deepEqual(hits.map((h) => h.id), [rows[0]!.id]);
});

Deno.test({
  name: "episodes: idempotent per (session, message digest): a re-sent batch writes nothing and answers the same ids",
  ...opts,
}, async () => {
  const t = newTenant();
  const batch = {
    session_id: "s",
    messages: [{ role: "user", content: "deploy with kubectl apply" }, { role: "assistant", content: "done" }],
  };
  const first = await post(t, batch);
  assert.equal(first.status, 201);
  const before = await sessionWrites(t);
  const again = await post(t, batch);
  assert.equal(again.status, 200);
  assert.deepEqual([again.body.stored, again.body.duplicates, again.body.embedding], [0, 2, "none"]);
  assert.deepEqual(
    again.body.episodes.map((e: { id: string }) => e.id),
    first.body.episodes.map((e: { id: string }) => e.id),
  );
  assert.ok(again.body.episodes.every((e: { duplicate: boolean }) => e.duplicate));
  const after = await sessionWrites(t);
  assert.deepEqual({ ...after, sessions: after.sessions }, before, "nothing was written");

  // The same words at another time are another message; the same message twice in a batch is one.
  const later = await post(t, {
    session_id: "s",
    messages: [{ role: "assistant", content: "done", at: "2026-11-02T09:00:00Z" }, { role: "user", content: "ok" }, {
      role: "user",
      content: "ok",
    }],
  });
  assert.equal(later.body.stored, 2);
  assert.equal(later.body.episodes[1].id, later.body.episodes[2].id);
  assert.deepEqual((await episodesOf(t, "s")).map((r) => r.seq), [0, 1, 2, 3]);
});

Deno.test({
  name:
    "episodes: a message is one episode however its `at` is written; one stored with `at` as written is still found",
  ...opts,
}, async () => {
  const t = newTenant();
  const said = (at: string) => ({ session_id: "s", messages: [{ role: "user", content: "ship it", at }] });
  const first = await post(t, said("2026-11-02T09:00:00Z"));
  assert.equal(first.status, 201);
  for (const at of ["2026-11-02T09:00:00.000Z", "2026-11-02T10:00:00+01:00", "2026-11-02T09:00:00.000000Z"]) {
    const again = await post(t, said(at));
    assert.equal(again.status, 200, at);
    assert.deepEqual([again.body.stored, again.body.episodes[0].id], [0, first.body.episodes[0].id], at);
  }
  assert.equal((await episodesOf(t, "s")).length, 1);

  // An episode stored before the digest named the instant carries `at` as written: an exact
  // resend of it is still that episode.
  const written = createHash("sha256").update(JSON.stringify(["user", "ship it", "2026-11-02T09:00:00Z"])).digest(
    "hex",
  );
  await sql`update public.devai_memories set metadata = metadata || jsonb_build_object('digest', ${written}::text)
             where id = ${first.body.episodes[0].id}`;
  const resent = await post(t, said("2026-11-02T09:00:00Z"));
  assert.deepEqual([resent.status, resent.body.episodes[0].id], [200, first.body.episodes[0].id]);
  assert.equal((await episodesOf(t, "s")).length, 1);
});

Deno.test({
  name: "episodes: a dense batch links every mention of every message (more links than one linking call takes)",
  ...opts,
}, async () => {
  const t = newTenant();
  // 50 messages naming 24 files each: 1,200 links, more than the 500 one call of link_memory_entities takes.
  const messages = Array.from({ length: MAX_EPISODES_PER_BATCH }, (_, i) => ({
    role: "assistant",
    content: Array.from({ length: 24 }, (_, j) => `m${i}/f${j}.ts`).join(" "),
  }));
  const res = await post(t, { session_id: "dense", messages });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const perEpisode = await sql<{ seq: number; links: number }[]>`
    select (m.metadata ->> 'seq')::int as seq, count(l.entity_id)::int as links
      from public.devai_memories m left join public.memory_entity_links l on l.memory_id = m.id
     where m.owner_id = ${t} and m.session_id = 'dense'
     group by m.id order by 1`;
  assert.equal(perEpisode.length, MAX_EPISODES_PER_BATCH);
  assert.deepEqual(perEpisode.filter((e) => e.links !== 24), [], "every message has its 24 links");
});

Deno.test({
  ...realServerOnly(
    "episodes: a batch resent while the first send holds the session answers its ids, nothing dropped",
    "PGlite's one backend queues every client behind the open transaction that holds the lock",
  ),
  ...opts,
}, async () => {
  const t = newTenant();
  assert.equal(
    (await post(t, { session_id: "s", messages: [{ role: "user", content: "opening message" }] })).status,
    201,
  );
  const batch = {
    session_id: "s",
    messages: [{ role: "assistant", content: "ran the migration" }, { role: "user", content: "check the logs" }],
  };
  // Both sends take their snapshot, then queue behind this lock on the session row; the one that
  // gets it first stores the batch, the other must see it despite its older snapshot. (The first
  // waiter waits on the holder, the second on the first: the row's lock queue.)
  const answers = (await overlapped(
    (tx) => tx`select 1 from public.memory_sessions where owner_id = ${t} and session_id = 's' for update`,
    2,
    () => [post(t, batch), post(t, batch)],
  )).map((r) => r.body);
  const ids = (b: { episodes: { id: string }[] }) => b.episodes.map((e) => e.id);
  assert.deepEqual(
    answers.map((b) => [b.stored, b.duplicates, b.dropped]).sort(),
    [[0, 2, 0], [2, 0, 0]],
    JSON.stringify(answers),
  );
  assert.deepEqual(ids(answers[0]), ids(answers[1]));
  assert.ok(ids(answers[0]).every((id) => id !== null));
  assert.deepEqual((await episodesOf(t, "s")).map((r) => r.seq), [0, 1, 2], "stored once, seq without a gap");
  const [events] =
    await sql`select count(*)::int as n from public.memory_events where owner_id = ${t} and op = 'redact'`;
  assert.equal(events!.n, 0, "no message was dropped as a secret");
});

Deno.test(
  { name: "episodes: GET memory?source=conversation lists a tenant's episodes, and only them", ...opts },
  async () => {
    const t = newTenant();
    await api("POST", "/memory/remember", { as: t, body: { content: "The staging database listens on port 5433" } });
    const sent = await post(t, {
      session_id: "s",
      messages: [{ role: "user", content: "which port is staging on?" }, { role: "assistant", content: "5433" }],
    });
    await post(newTenant(), { session_id: "s", messages: [{ role: "user", content: "another tenant's message" }] });
    const listed = await api("GET", "/memory?source=conversation", { as: t });
    assert.equal(listed.status, 200, JSON.stringify(listed.body));
    assert.deepEqual(
      listed.body.memories.map((m: { id: string }) => m.id).sort(),
      sent.body.episodes.map((e: { id: string }) => e.id).sort(),
    );
  },
);

Deno.test({
  name: "episodes: an episode is a record, not a fact: correcting one is a 422 that writes nothing",
  ...opts,
}, async () => {
  const t = newTenant();
  const r = await post(t, {
    session_id: "s",
    messages: [{ role: "user", content: "the staging database is on port 5433" }],
  });
  assert.equal(r.status, 201);
  const before = await sessionWrites(t);
  const refused = await api("POST", `/memory/${r.body.episodes[0].id}/correct`, {
    as: t,
    body: { content: "the staging database is on port 5434" },
  });
  assert.equal(refused.status, 422, JSON.stringify(refused.body));
  assert.equal(refused.body.error.code, "episode_not_correctable");
  assert.deepEqual(await sessionWrites(t), before, "nothing was written");
});

Deno.test({ name: "episodes: bad input is a 4xx that writes nothing", ...opts }, async () => {
  const future = new Date(Date.now() + 10 * 60_000).toISOString();
  const cases: [string, number, string, (t: string) => ReturnType<typeof post>, string?][] = [
    [
      "unknown role",
      400,
      "invalid_request",
      (t) => post(t, { session_id: "s", messages: [{ role: "robot", content: "hi" }] }),
      "messages.0.role",
    ],
    [
      "empty content",
      400,
      "invalid_request",
      (t) => post(t, { session_id: "s", messages: [{ role: "user", content: "   " }] }),
      "messages.0.content",
    ],
    [
      "control characters",
      400,
      "invalid_request",
      (t) => post(t, { session_id: "s", messages: [{ role: "user", content: "a\u0007b" }] }),
      "messages.0.content",
    ],
    ["too many messages", 400, "invalid_request", (t) =>
      post(t, {
        session_id: "s",
        messages: Array.from({ length: MAX_EPISODES_PER_BATCH + 1 }, (_, i) => ({ role: "user", content: `m${i}` })),
      }), "messages"],
    [
      "at in the future",
      400,
      "invalid_request",
      (t) =>
        post(t, {
          session_id: "s",
          messages: [{ role: "user", content: "ok" }, { role: "user", content: "later", at: future }],
        }),
      "messages.1.at",
    ],
    [
      "unknown field",
      400,
      "invalid_request",
      (t) => post(t, { session_id: "s", messages: [{ role: "user", content: "x" }], colour: "red" }),
    ],
    [
      "bad session id",
      400,
      "invalid_request",
      (t) => post(t, { session_id: "a b", messages: [{ role: "user", content: "x" }] }),
      "session_id",
    ],
    ["body over the limit", 413, "payload_too_large", (t) =>
      api("POST", "/memory/episodes", {
        as: t,
        rawBody: JSON.stringify({
          session_id: "s",
          messages: Array.from({ length: 10 }, () => ({ role: "user", content: "x".repeat(3000) })),
        }),
      })],
  ];
  for (const [name, status, code, request, path] of cases) {
    const t = newTenant();
    const before = await sessionWrites(t);
    const r = await request(t);
    assert.equal(r.status, status, `${name}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.error.code, code, name);
    if (path) {
      assert.ok(
        r.body.error.issues.some((i: { path: unknown[] }) => i.path.join(".") === path),
        `${name}: ${JSON.stringify(r.body.error.issues)}`,
      );
    }
    assert.deepEqual(await sessionWrites(t), before, `${name}: nothing written`);
  }
  // The issue names the field and says what it must be, in the field's words (not as_of's).
  const ancient = await post(newTenant(), {
    session_id: "s",
    messages: [{ role: "user", content: "x", at: "0000-06-01T00:00:00Z" }],
  });
  assert.equal(ancient.status, 400);
  assert.deepEqual(
    ancient.body.error.issues.map((i: { path: unknown[]; message: string }) => [i.path.join("."), i.message]),
    [["messages.0.at", "must be a date-time from 0001-01-01 to 9999-12-31 (UTC)"]],
  );
  const t = newTenant();
  const skew = await post(t, {
    session_id: "s",
    messages: [{ role: "user", content: "clock drift", at: new Date(Date.now() + 60_000).toISOString() }],
  });
  assert.equal(skew.status, 201, "a minute ahead is clock drift, not the future");
});

Deno.test({
  name: "episodes: an ended session takes no new message (409) but answers a re-send; its project is fixed (409)",
  ...opts,
}, async () => {
  const t = newTenant();
  const batch = { session_id: "s", project: "web", messages: [{ role: "user", content: "first" }] };
  assert.equal((await post(t, batch)).status, 201);
  const mismatch = await post(t, { ...batch, project: "api", messages: [{ role: "user", content: "second" }] });
  assert.equal(mismatch.status, 409);
  assert.equal(mismatch.body.error.code, "session_project_mismatch");

  const end = await api("POST", "/memory/sessions/s/end", { as: t });
  assert.equal(end.status, 202);
  assert.equal(end.body.ended_now, true);
  assert.equal(end.body.job_status, "queued");
  const before = await sessionWrites(t);
  const late = await post(t, { ...batch, messages: [{ role: "user", content: "one more thing" }] });
  assert.equal(late.status, 409);
  assert.equal(late.body.error.code, "session_ended");
  const resent = await post(t, batch);
  assert.equal(resent.status, 200, "a re-send of what was stored is still answered");
  assert.deepEqual(await sessionWrites(t), before);
});

Deno.test({
  name: "episodes: a session stays on the thread its first batch named: another thread is a 409 naming both",
  ...opts,
}, async () => {
  const t = newTenant();
  const first = { session_id: "s", thread_id: "thread-a", messages: [{ role: "user", content: "first" }] };
  assert.equal((await post(t, first)).status, 201);
  assert.equal(
    (await post(t, { session_id: "b1", thread_id: "thread-b", messages: [{ role: "user", content: "b" }] })).status,
    201,
  );
  const before = await sessionWrites(t);
  for (
    const body of [{ ...first, thread_id: "thread-b", messages: [{ role: "user", content: "second" }] }, {
      ...first,
      thread_id: "thread-b",
    }]
  ) {
    const moved = await post(t, body);
    assert.equal(moved.status, 409, JSON.stringify(moved.body));
    assert.equal(moved.body.error.code, "session_thread_mismatch");
    assert.match(moved.body.error.message, /thread thread-a, not thread thread-b/);
  }
  assert.deepEqual(await sessionWrites(t), before, "nothing written, thread-b's open session not ended");
  const [b1] = await sql`select ended_at from public.memory_sessions where owner_id = ${t} and session_id = 'b1'`;
  assert.equal(b1!.ended_at, null);

  const same = await post(t, { session_id: "s", messages: [{ role: "user", content: "no thread named" }] });
  assert.equal(same.status, 201, "a batch that names no thread stays on the session's");
  assert.equal((await post(t, { ...first, messages: [{ role: "user", content: "third" }] })).status, 201);
  await post(t, { session_id: "plain", messages: [{ role: "user", content: "no thread" }] });
  const late = await post(t, {
    session_id: "plain",
    thread_id: "thread-a",
    messages: [{ role: "user", content: "x" }],
  });
  assert.equal(late.status, 409);
  assert.match(late.body.error.message, /belongs to no thread, not thread thread-a/);
  const sessions = await sql`
    select session_id, thread_id, episode_count from public.memory_sessions where owner_id = ${t} order by session_id`;
  assert.deepEqual(sessions.map((s) => [s.session_id, s.thread_id, s.episode_count]), [
    ["b1", "thread-b", 1],
    ["plain", null, 1],
    ["s", "thread-a", 3],
  ]);
});

Deno.test({
  name: "episodes: a batch that names no thread is logged on its session's thread (history, redaction event)",
  ...opts,
}, async () => {
  const t = newTenant();
  const secret = "ghp_Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8L9";
  const content = `the deploy failed until I rotated the GitHub token ${secret} in the CI settings`;
  const first = { session_id: "s", thread_id: "thread-a", messages: [{ role: "user", content: "first" }] };
  assert.equal((await post(t, first)).status, 201);
  const later = await post(t, { session_id: "s", messages: [{ role: "user", content }] });
  assert.equal(later.status, 201, JSON.stringify(later.body));
  assert.equal(later.body.redacted, 1);
  const events = await sql<{ thread_id: string | null }[]>`
    select thread_id from public.memory_events where owner_id = ${t} and op = 'redact'`;
  assert.deepEqual(events.map((e) => e.thread_id), ["thread-a"]);
  const [added] = await sql<{ thread_id: string }[]>`
    select meta ->> 'thread_id' as thread_id from public.memory_history
     where owner_id = ${t} and memory_id = ${later.body.episodes[0].id} and event = 'ADD'`;
  assert.equal(added?.thread_id, "thread-a", "its episodes' history names the session's thread");
});

Deno.test({
  name: "sessions: ending a session queues one consolidation job, however often and by whichever path",
  ...opts,
}, async () => {
  const t = newTenant();
  await post(t, { session_id: "s1", thread_id: "thread-a", messages: [{ role: "user", content: "hello" }] });
  const next = await post(t, {
    session_id: "s2",
    thread_id: "thread-a",
    messages: [{ role: "user", content: "new session, same thread" }],
  });
  assert.deepEqual(next.body.ended_sessions, ["s1"], "a new session id on the thread ended the previous one");
  const explicit = await api("POST", "/memory/sessions/s1/end", { as: t });
  assert.equal(explicit.status, 202);
  assert.equal(explicit.body.ended_now, false);
  assert.equal(explicit.body.deduplicated, true);
  await post(t, { session_id: "s2", thread_id: "thread-a", messages: [{ role: "user", content: "more" }] });
  const jobs = await sql`select idempotency_key from public.memory_jobs where owner_id = ${t} and kind = 'consolidate'`;
  assert.deepEqual(jobs.map((j) => j.idempotency_key), ["consolidate:s1"]);
  const [s1] =
    await sql`select end_reason, consolidation_job_id from public.memory_sessions where owner_id = ${t} and session_id = 's1'`;
  assert.equal(s1!.end_reason, "new_session");
  assert.equal(s1!.consolidation_job_id, explicit.body.job_id);

  const unknown = await api("POST", "/memory/sessions/nope/end", { as: t });
  assert.equal(unknown.status, 404);
  assert.match(
    unknown.body.error.message,
    /no episodes were stored for session nope: store its messages with POST memory\/episodes/,
  );
  assert.equal(
    (await api("POST", "/memory/sessions/s2/end", { as: newTenant() })).status,
    404,
    "another tenant's session is unknown",
  );
  assert.equal((await api("POST", "/memory/sessions/a%20b/end", { as: t })).status, 400);
});

Deno.test({
  ...realServerOnly(
    "sessions: two new sessions opened at once on one thread leave one open, the other ended",
    "PGlite's one backend runs one transaction at a time, so the two never overlap",
  ),
  ...opts,
}, async () => {
  const t = newTenant();
  // Both batches link an entity after opening their session; this lock on the links holds both
  // there, so each has opened its session (and looked for the thread's open ones) before either
  // commits: the moment two sessions' first batches overlap.
  const answers = await overlapped(
    (tx) => tx`lock table public.memory_entity_links in exclusive mode`,
    2,
    () =>
      ["s1", "s2"].map((session_id) =>
        post(t, { session_id, thread_id: "thread-a", messages: [{ role: "user", content: "run npm install zod" }] })
      ),
  );
  assert.deepEqual(answers.map((r) => r.status), [201, 201]);
  const open = await sql<{ session_id: string }[]>`
    select session_id from public.memory_sessions where owner_id = ${t} and thread_id = 'thread-a' and ended_at is null`;
  assert.equal(open.length, 1, `one open session on the thread, not ${open.map((s) => s.session_id)}`);
  const ended = answers.flatMap((r) => r.body.ended_sessions);
  assert.equal(ended.length, 1, "the later one ended the earlier");
  assert.notEqual(ended[0], open[0]!.session_id);
});

for (const ender of ["an explicit end", "a new session of the thread"]) {
  Deno.test({
    ...realServerOnly(
      `sessions: ${ender} that waits for a batch holding the session ends it no earlier than the batch's last episode`,
      "PGlite's one backend runs one transaction at a time, so the end never waits for a batch",
    ),
    ...opts,
  }, async () => {
    const t = newTenant();
    const thread = { session_id: "s", thread_id: "thread-a" };
    assert.equal((await post(t, { ...thread, messages: [{ role: "user", content: "opening" }] })).status, 201);
    // Sent with the client's clock two minutes ahead (accepted skew): its episode is after the end's now().
    const at = new Date(Date.now() + 120_000).toISOString();
    // The batch locks the session's row, stores its episode and then waits on this lock (its temporal
    // edge); the end starts once the batch waits, and waits for the session's row.
    const [batch, end] = await overlapped(
      (tx) => tx`lock table public.memory_relations in exclusive mode`,
      2,
      (waiting) => [
        post(t, { ...thread, messages: [{ role: "assistant", content: "the last word", at }] }),
        waiting(1).then(() =>
          ender === "an explicit end"
            ? api("POST", "/memory/sessions/s/end", { as: t })
            : post(t, { session_id: "s2", thread_id: "thread-a", messages: [{ role: "user", content: "next" }] })
        ),
      ],
    );
    assert.equal(batch!.status, 201, JSON.stringify(batch!.body));
    assert.ok([201, 202].includes(end!.status), JSON.stringify(end!.body));
    const [s] = await sql<{ ended_at: Date; last: Date; episodes: number }[]>`
      select s.ended_at, max(m.valid_from) as last, count(m.id)::int as episodes
        from public.memory_sessions s join public.devai_memories m on m.owner_id = s.owner_id and m.session_id = s.session_id
       where s.owner_id = ${t} and s.session_id = 's' group by s.ended_at`;
    assert.equal(s!.episodes, 2);
    assert.ok(s!.ended_at >= s!.last, `ended at ${s!.ended_at.toISOString()}, before its last episode at ${at}`);
    assert.equal(s!.ended_at.toISOString(), at);
  });
}

Deno.test({
  ...realServerOnly(
    "sessions: a batch that waits for the session's end is refused (409 session_ended) and writes nothing",
    "PGlite's one backend runs one transaction at a time, so the batch never waits for the end",
  ),
  ...opts,
}, async () => {
  const t = newTenant();
  assert.equal((await post(t, { session_id: "s", messages: [{ role: "user", content: "opening" }] })).status, 201);
  // The end locks the session's row, sets ended_at and then waits on this lock (its consolidation
  // job); the batch starts once the end waits, and waits for the session's row.
  const [end, batch] = await overlapped(
    (tx) => tx`lock table public.memory_jobs in exclusive mode`,
    2,
    (waiting) => [
      api("POST", "/memory/sessions/s/end", { as: t }),
      waiting(1).then(() => post(t, { session_id: "s", messages: [{ role: "user", content: "too late" }] })),
    ],
  );
  assert.equal(end!.status, 202, JSON.stringify(end!.body));
  assert.equal(batch!.status, 409, JSON.stringify(batch!.body));
  assert.equal(batch!.body.error.code, "session_ended");
  assert.deepEqual((await episodesOf(t, "s")).map((e) => e.content), ["opening"]);
});

Deno.test({
  name: "episodes: with a remote embedder they are stored at once and a queued embed job embeds them",
  ...opts,
}, async () => {
  const env = await writeEnv();
  try {
    const remote = memoryApi(sql, { embedder: env.embedder });
    const t = newTenant();
    const r = await remote("POST", "/memory/episodes", {
      as: t,
      body: {
        session_id: "s",
        messages: [{ role: "user", content: "use pnpm" }, { role: "assistant", content: "ok, pnpm it is" }],
      },
    });
    assert.equal(r.status, 201);
    assert.equal(r.body.embedding, "queued");
    assert.equal(env.fake.embeddingRequests().length, 0, "no embedding call on the request path");
    assert.deepEqual((await episodesOf(t, "s")).map((e) => e.has_vector), [false, false], "stored, not embedded yet");
    const report = await drainQueue(env.deps, { ownerId: t, workerId: "test-embed", backoffBaseMs: 0 });
    assert.deepEqual([report.done, report.jobs[0]?.kind], [1, "embed"]);
    assert.deepEqual(
      (await episodesOf(t, "s")).map((e) => [e.has_vector, e.embedding_model]),
      [[true, EMBEDDING_MODEL], [true, EMBEDDING_MODEL]],
    );
    assert.equal(env.fake.embeddingRequests().length, 1, "one batched embedding call");
  } finally {
    await env.close();
  }
});

Deno.test({
  name: "retrieval never shows raw episodes: not as results, not as related bullets of a fact derived from them",
  ...opts,
}, async () => {
  const t = newTenant();
  const said = "we deploy the storefront with blue green releases every friday afternoon";
  const ep = await post(t, { session_id: "s", project: "shop", messages: [{ role: "user", content: said }] });
  const fact = await api("POST", "/memory/remember", {
    as: t,
    body: { content: "The storefront deploys with blue-green releases on Friday afternoons.", project: "shop" },
  });
  await seedRelation(sql, t, fact.body.memory.id, ep.body.episodes[0].id, 1, "derived_from");
  // The control: a fact's derived_from source that is not an episode is shown as a related bullet.
  const source = await api("POST", "/memory/remember", {
    as: t,
    body: { content: "Release notes are posted in the shop channel.", project: "shop" },
  });
  await seedRelation(sql, t, fact.body.memory.id, source.body.memory.id, 1, "derived_from");
  const retrieve = createRetrieveHandler({ sql, config: testConfig(), embedder: localEmbedder() });
  const res = await retrieve(
    new Request("http://local/memory-retrieve", {
      method: "POST",
      headers: await userHeaders(t),
      body: JSON.stringify({ message: "When do we deploy the storefront with blue green releases?", project: "shop" }),
    }),
  );
  const body = await res.json();
  assert.equal(res.status, 200);
  assert.deepEqual(
    body.memories.map((m: { id: string }) => m.id),
    [fact.body.memory.id],
    "the fact, not the episode that says the same",
  );
  assert.deepEqual(
    body.related.map((r: { id: string }) => r.id),
    [source.body.memory.id],
    "the source, not the episode",
  );
  assert.ok(!body.block.includes(said));
});

Deno.test({ name: "close the pool", ...opts }, async () => {
  await sql.end();
});
