// Consent for sensitive facts: what a model proposes about the user's name, pronouns, city,
// language or employer waits as a pending proposal instead of being stored; the user accepts
// (it becomes a memory) or rejects it; unanswered it lapses after 7 days; the user's own statement
// applies at once; every decision is in the history. Bad actions and other tenants' ids write nothing.
import assert from "node:assert/strict";
import { toVectorLiteral, withTenant } from "../supabase/functions/_shared/db.ts";
import { lockContentHash } from "../supabase/functions/_shared/memories/record.ts";
import { createHandler } from "../supabase/functions/memory/handler.ts";
import { enqueueJob } from "../supabase/functions/_shared/jobs.ts";
import { realServerOnly } from "./support/backend.ts";
import { LOCAL_EMBEDDING, memoryWithLlm } from "./support/consolidation.ts";
import { newTenant, tenantWrites } from "./support/seed.ts";
import { waitUntil } from "./support/wait.ts";
import { drainAll, writeEnv } from "./write_helpers.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

const candidate = (content: string) => ({
  content,
  type: "semantic",
  namespace: "devai/user/profile",
  source: "discovery",
  priority: "medium",
  importance: 3,
});

/** A dedup job of model candidates (what extraction, compaction and consolidation queue). */
async function proposeByModel(env: Awaited<ReturnType<typeof writeEnv>>, t: string, contents: string[], key = "model") {
  await withTenant(
    env.sql,
    { tenantId: t, actor: "test" },
    (tx) =>
      enqueueJob(tx, {
        ownerId: t,
        kind: "dedup",
        idempotencyKey: key,
        payload: { candidates: contents.map(candidate), origin: "extract" },
      }),
  );
  const report = await drainAll(env.deps, t);
  assert.deepEqual([report.done, report.dead], [1, 0], JSON.stringify(report.jobs));
}

Deno.test({
  name: "consent: a model's sensitive facts wait as proposals; the rest is stored; accept stores it, reject does not",
  ...opts,
}, async () => {
  const env = await writeEnv({ config: { embedding: LOCAL_EMBEDDING } as never, withLlm: false });
  try {
    const t = newTenant();
    await proposeByModel(env, t, [
      "The user prefers to be called Ana.",
      "The user lives in Porto.",
      "The user prefers pnpm over npm.",
    ]);
    const stored = await env.sql<
      { content: string }[]
    >`select content from public.devai_memories where owner_id = ${t}`;
    assert.deepEqual(stored.map((s) => s.content), ["The user prefers pnpm over npm."]);
    const [job] = await env.sql`select result from public.memory_jobs where owner_id = ${t}`;
    assert.equal(job!.result.counts.PROPOSED, 2);

    const api = memoryWithLlm(env.sql, env.config, undefined, env.embedder);
    const pending = await api("GET", "/memory/proposals", t);
    assert.equal(pending.status, 200);
    const byField = Object.fromEntries(pending.body.proposals.map((p: { field: string; id: string }) => [p.field, p]));
    assert.deepEqual(Object.keys(byField).sort(), ["city", "preferred_name"]);
    const name = byField.preferred_name, city = byField.city;
    assert.equal(name.status, "pending");
    assert.ok(Date.parse(name.expires_at) - Date.parse(name.created_at) >= 7 * 86_400_000 - 1000);

    const accepted = await api("POST", `/memory/proposals/${name.id}/accept`, t);
    assert.equal(accepted.status, 200, JSON.stringify(accepted.body));
    const [memory] = await env
      .sql`select content, namespace, metadata from public.devai_memories where id = ${accepted.body.memory_id}`;
    assert.deepEqual([memory!.content, memory!.namespace, memory!.metadata.consent.proposal_id], [
      "The user prefers to be called Ana.",
      "devai/user/profile",
      name.id,
    ]);

    const rejected = await api("POST", `/memory/proposals/${city.id}/reject`, t);
    assert.deepEqual([rejected.status, rejected.body.proposal.status, rejected.body.memory_id], [
      200,
      "rejected",
      null,
    ]);
    assert.equal(
      (await env.sql`select 1 from public.devai_memories where owner_id = ${t} and content like '%Porto%'`).length,
      0,
    );

    // Every decision is in the history, under the proposal's id.
    const one = await api("GET", `/memory/proposals/${name.id}`, t);
    assert.deepEqual(one.body.history.map((h: { event: string; actor: string }) => [h.event, h.actor]), [[
      "PROPOSE",
      "worker:dedup",
    ], ["ACCEPT", `user:${t}`]]);
    assert.equal(one.body.history[1].new_ref, accepted.body.memory_id);
    const [rejectRow] = await env
      .sql`select event from public.memory_history where memory_id = ${city.id} order by ts desc limit 1`;
    assert.equal(rejectRow!.event, "REJECT");
    // A proposal's id is not a memory's: its decisions are not a purged memory's history.
    for (const id of [name.id, city.id]) {
      const asMemory = await api("GET", `/memory/${id}/history`, t);
      assert.deepEqual([asMemory.status, asMemory.body.error?.code], [404, "not_found"], JSON.stringify(asMemory.body));
    }

    // Decided once: deciding again is a 409; the same fact proposed again while pending is one proposal.
    assert.equal((await api("POST", `/memory/proposals/${name.id}/reject`, t)).status, 409);
    await proposeByModel(env, t, ["The user works at Acme Corp.", "The user works at Acme Corp."], "again");
    await proposeByModel(env, t, ["The user works at Acme Corp."], "third");
    assert.equal((await api("GET", "/memory/proposals?status=pending", t)).body.proposals.length, 1);
  } finally {
    await env.close();
  }
});

Deno.test({
  name: "consent: unanswered proposals lapse after 7 days (LAPSE in the history); an expired one cannot be accepted",
  ...opts,
}, async () => {
  const env = await writeEnv({ config: { embedding: LOCAL_EMBEDDING } as never, withLlm: false });
  try {
    const t = newTenant();
    await proposeByModel(env, t, ["The user's pronouns are she/her.", "The user speaks Portuguese at home."]);
    const api = memoryWithLlm(env.sql, env.config, undefined, env.embedder);
    const [a, b] = (await api("GET", "/memory/proposals", t)).body.proposals;
    await env.sql`update public.memory_proposals set expires_at = now() - interval '1 minute' where id = ${a.id}`;
    const expired = await api("POST", `/memory/proposals/${a.id}/accept`, t);
    assert.deepEqual([expired.status, expired.body.error.code], [409, "proposal_expired"]);

    const [lapsed] = await env.sql`select memory_private.lapse_proposals(now()) as r`;
    assert.ok(lapsed!.r.lapsed >= 1);
    const rows = await env.sql<{ id: string; status: string; decided_by: string }[]>`
      select id, status, decided_by from public.memory_proposals where owner_id = ${t} order by status`;
    assert.deepEqual(rows.map((r) => [r.id, r.status]).sort(), [[a.id, "lapsed"], [b.id, "pending"]].sort());
    const [h] = await env
      .sql`select event, actor from public.memory_history where memory_id = ${a.id} order by ts desc limit 1`;
    assert.deepEqual({ ...h }, { event: "LAPSE", actor: "cron:proposals" });
    // Seven days on, the other one lapses too.
    await env.sql`select memory_private.lapse_proposals(now() + interval '8 days')`;
    assert.equal((await api("GET", "/memory/proposals?status=lapsed", t)).body.proposals.length, 2);
  } finally {
    await env.close();
  }
});

Deno.test({
  name:
    "consent: the user's own statement applies at once; unknown actions 400, other tenants' proposals 404, nothing written",
  ...opts,
}, async () => {
  const env = await writeEnv({ config: { embedding: LOCAL_EMBEDDING } as never, withLlm: false });
  try {
    const [t, other] = [newTenant(), newTenant()];
    const api = memoryWithLlm(env.sql, env.config, undefined, env.embedder);
    const said = await api("POST", "/memory/remember", t, { content: "The user prefers to be called Ana." });
    assert.equal(said.status, 201);
    assert.equal((await api("GET", "/memory/proposals?status=all", t)).body.proposals.length, 0);

    await proposeByModel(env, t, ["The user lives in Porto."]);
    const [p] = (await api("GET", "/memory/proposals", t)).body.proposals;
    const before = await tenantWrites(env.sql, t);
    const cases: [string, string, number, string][] = [
      [t, `/memory/proposals/${p.id}/approve`, 400, "invalid_action"],
      [t, `/memory/proposals/not-a-uuid/accept`, 400, "invalid_id"],
      [other, `/memory/proposals/${p.id}/accept`, 404, "not_found"],
      [t, `/memory/proposals/${crypto.randomUUID()}/reject`, 404, "not_found"],
    ];
    for (const [as, path, status, code] of cases) {
      const res = await api("POST", path, as);
      assert.deepEqual([res.status, res.body.error.code], [status, code], path);
    }
    assert.equal((await api("GET", `/memory/proposals/${p.id}`, other)).status, 404);
    assert.deepEqual(await tenantWrites(env.sql, t), before);
    assert.equal((await api("GET", "/memory/proposals?status=maybe", t)).status, 400);
  } finally {
    await env.close();
  }
});

Deno.test({
  name: "consent: an agent token can neither accept nor reject a proposal (403 forbidden_credential, nothing written)",
  ...opts,
}, async () => {
  const env = await writeEnv({ config: { embedding: LOCAL_EMBEDDING } as never, withLlm: false });
  try {
    const t = newTenant();
    const api = memoryWithLlm(env.sql, env.config, undefined, env.embedder);
    await proposeByModel(env, t, ["The user lives in Porto."]);
    const [p] = (await api("GET", "/memory/proposals", t)).body.proposals;
    const token = (await api("POST", "/memory/agent-tokens", t, { agent: "coder" })).body.token as string;
    const asAgent = createHandler({ sql: env.sql, config: env.config, embedder: env.embedder });
    const before = await tenantWrites(env.sql, t);
    for (const action of ["accept", "reject"]) {
      const res = await asAgent(
        new Request(`http://local/memory/proposals/${p.id}/${action}`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}` },
        }),
      );
      const body = await res.json();
      assert.deepEqual([res.status, body.error.code], [403, "forbidden_credential"], action);
    }
    assert.deepEqual(await tenantWrites(env.sql, t), before);
    assert.equal((await api("GET", `/memory/proposals/${p.id}`, t)).body.proposal.status, "pending");
    // The user's own session decides it.
    assert.equal((await api("POST", `/memory/proposals/${p.id}/reject`, t)).status, 200);
  } finally {
    await env.close();
  }
});

Deno.test({
  ...realServerOnly(
    "consent: accepting a proposal while the user remembers the same text stores it once (the accept waits, then links)",
    "a remember's transaction stays open while the accept runs on another connection",
  ),
  ...opts,
}, async () => {
  const env = await writeEnv({ config: { embedding: LOCAL_EMBEDDING } as never, withLlm: false });
  try {
    const t = newTenant();
    const text = "The user lives in Lisbon.";
    await proposeByModel(env, t, [text]);
    const api = memoryWithLlm(env.sql, env.config, undefined, env.embedder);
    const [proposal] = (await api("GET", "/memory/proposals", t)).body.proposals;
    // A remember of the same text in flight: it holds the text's lock and has inserted, not committed.
    let accept: Promise<{ status: number; body: { memory_id: string } }> | undefined;
    let settled = false;
    const remembered = await env.sql.begin(async (tx) => {
      await tx`select set_config('memory.actor', ${`user:${t}`}, true)`;
      await lockContentHash(tx, t, text);
      const [row] = await tx<{ id: string }[]>`
        insert into public.devai_memories
          (owner_id, content, embedding, embedding_model, memory_type, namespace, priority, source)
        values (${t}, ${text}, ${toVectorLiteral((await env.embedder.embed([text]))[0]!)}::extensions.vector,
                ${env.embedder.model}, 'semantic', 'devai/user/profile', 'highest', 'user_stated')
        returning id`;
      accept = api("POST", `/memory/proposals/${proposal.id}/accept`, t);
      accept.finally(() => (settled = true));
      // Until the accept waits for this transaction (on the text's lock; unserialised, on a row the
      // insert locked, past its duplicate check), or has answered.
      const [self] = await tx<{ pid: number }[]>`select pg_backend_pid() as pid`;
      await waitUntil(
        async () => {
          if (settled) return true;
          const [w] = await env.sql<{ w: boolean }[]>`
          select exists (select 1 from pg_stat_activity where ${self!.pid}::int = any (pg_blocking_pids(pid))) as w`;
          return w!.w;
        },
        "the accept waits on the remember's transaction, or has answered",
        { pollMs: 5 },
      );
      return row!.id;
    });
    const accepted = await accept!;
    assert.equal(accepted.status, 200, JSON.stringify(accepted.body));
    const copies = await env.sql<{ id: string }[]>`
      select id from public.devai_memories where owner_id = ${t} and content = ${text} and is_valid and state = 'active'`;
    assert.deepEqual(
      copies.map((c) => c.id),
      [remembered],
      "one memory of the text: the accept linked the remembered one",
    );
    assert.equal(accepted.body.memory_id, remembered);
  } finally {
    await env.close();
  }
});
