// An episode's digest (metadata.digest, which the memory API shows and the history keeps) says
// nothing about a secret its message held: it is of the text as stored, redacted, so nobody who
// reads the episode can test guesses at the secret offline; and the migration that replaced the
// digests episodes stored before carried (20261128880000) leaves none of the old ones behind.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, testSql } from "./support/seed.ts";

const sql = testSql();
const api = memoryApi(sql);
const opts = { sanitizeOps: false, sanitizeResources: false };

const AT = "2026-11-02T09:00:00.000Z";
const SAID = "the staging db password=hunter2 works again";
const sha = (role: string, content: string, at: string | null) =>
  createHash("sha256").update(JSON.stringify([role, content, at])).digest("hex");

async function digestsOf(t: string) {
  return await sql<{ digest: string }[]>`
    select m.metadata ->> 'digest' as digest from public.devai_memories m where m.owner_id = ${t}
    union all
    select h.meta #>> '{metadata,digest}' from public.memory_history h where h.owner_id = ${t}`;
}

Deno.test({ name: "episodes: the digest of a message with a secret is of its redacted text", ...opts }, async () => {
  const t = newTenant();
  const batch = { session_id: "s", messages: [{ role: "user", content: SAID, at: AT }] };
  const first = await api("POST", "/memory/episodes", { as: t, body: batch });
  assert.equal(first.status, 201, JSON.stringify(first.body));
  assert.equal(first.body.redacted, 1);
  const shown = await api("GET", `/memory/${first.body.episodes[0].id}`, { as: t });
  const memory = shown.body.memory ?? shown.body;
  assert.match(memory.content, /\[REDACTED:password\]/);
  // The guess that matches the secret must not match the digest the API shows, nor any stored.
  const guess = sha("user", memory.content.replace("[REDACTED:password]", "hunter2"), memory.valid_from);
  assert.notEqual(memory.metadata.digest, guess);
  assert.ok((await digestsOf(t)).every((d) => d.digest !== guess), "no stored digest tests the guess");
  assert.equal(memory.metadata.digest, sha("user", memory.content, AT));

  const again = await api("POST", "/memory/episodes", { as: t, body: batch });
  assert.deepEqual(
    [again.status, again.body.episodes[0].id],
    [200, first.body.episodes[0].id],
    "a resend is one episode",
  );
});

Deno.test({
  name: "migration 20261128880000: digests of redacted episodes are replaced, in the episode and its history",
  ...opts,
}, async () => {
  const t = newTenant();
  const sent = await api("POST", "/memory/episodes", {
    as: t,
    body: {
      session_id: "s",
      messages: [{ role: "user", content: SAID, at: AT }, { role: "assistant", content: "noted", at: AT }],
    },
  });
  const [secretId, plainId] = sent.body.episodes.map((e: { id: string }) => e.id);
  const old = sha("user", SAID, AT); // the digest as it was computed before: of the text as sent
  const plain = sha("assistant", "noted", AT);
  const migration = await Deno.readTextFile(
    new URL("../supabase/migrations/20261128880000_episode_digests_without_secrets.sql", import.meta.url),
  );
  const rollback = new Error("rollback");
  await assert.rejects(
    sql.begin(async (tx) => {
      // An episode stored before: its digest, in the row and in its history, of the text as sent.
      await tx`update public.devai_memories set metadata = metadata || jsonb_build_object('digest', ${old}::text)
                where id = ${secretId}`;
      await tx`update public.memory_history set meta = jsonb_set(meta, '{metadata,digest}', to_jsonb(${old}::text))
                where memory_id = ${secretId} and meta #> '{metadata,digest}' is not null`;
      const before = await tx`select count(*)::int as n from public.memory_history where memory_id = ${secretId}`;
      await tx.unsafe(migration);
      const left = await tx<{ digest: string }[]>`
        select metadata ->> 'digest' as digest from public.devai_memories where id = ${secretId}
        union all
        select meta #>> '{metadata,digest}' from public.memory_history
         where memory_id = ${secretId} and meta #> '{metadata,digest}' is not null`;
      assert.ok(left.length >= 2);
      assert.ok(left.every((d) => d.digest === `replaced:${secretId}`), JSON.stringify(left));
      const after = await tx`select count(*)::int as n from public.memory_history where memory_id = ${secretId}`;
      assert.equal(after[0]!.n, before[0]!.n, "the replacement writes no history row");
      const [kept] = await tx`select metadata ->> 'digest' as digest from public.devai_memories where id = ${plainId}`;
      assert.equal(kept!.digest, plain, "an episode with nothing redacted keeps its digest");
      throw rollback;
    }),
    (e) => e === rollback,
  );
});

Deno.test({ name: "close the pool", ...opts }, async () => {
  await sql.end();
});
