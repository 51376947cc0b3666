// A text and its canonically equivalent spelling (NFC "café", one letter é; NFD "café", e + U+0301)
// are one text: `remember` of each stored two live memories that look the same, and a search typed
// in one form did not find a memory written in the other by its words (migration 20261209400000).
import assert from "node:assert/strict";
import { memoryApi } from "./support/memory-api.ts";
import { retrieveApi } from "./support/as-of.ts";
import { newTenant, testSql } from "./support/seed.ts";

const sql = testSql();
const api = memoryApi(sql);
const retrieve = retrieveApi(sql);
const opts = { sanitizeOps: false, sanitizeResources: false };

const NFC = "Le caf\u00e9 ouvre \u00e0 huit heures, apr\u00e8s le d\u00e9ploiement";
const NFD = NFC.normalize("NFD");

Deno.test({ name: "remember of a text in another Unicode form answers the memory held", ...opts }, async () => {
  assert.notEqual(NFC, NFD);
  const t = newTenant();
  const first = await api("POST", "/memory/remember", { as: t, body: { content: NFC, project: "shop" } });
  assert.equal(first.status, 201, JSON.stringify(first.body));
  const again = await api("POST", "/memory/remember", { as: t, body: { content: NFD, project: "shop" } });
  assert.equal(again.status, 200, JSON.stringify(again.body));
  assert.equal(again.body.created, false);
  assert.equal(again.body.memory.id, first.body.memory.id);
  const [n] = await sql<{ n: number }[]>`
    select count(*)::int as n from public.devai_memories where owner_id = ${t} and is_valid and state = 'active'`;
  assert.equal(n!.n, 1);
});

Deno.test({ name: "a correction to the same text in another Unicode form is unchanged content", ...opts }, async () => {
  const t = newTenant();
  const first = await api("POST", "/memory/remember", { as: t, body: { content: NFD } });
  assert.equal(first.status, 201, JSON.stringify(first.body));
  const r = await api("POST", `/memory/${first.body.memory.id}/correct`, { as: t, body: { content: NFC } });
  assert.equal(r.status, 422, JSON.stringify(r.body));
  assert.equal(r.body.error.code, "unchanged_content");
});

Deno.test({ name: "a keyword search in one Unicode form finds a memory written in the other", ...opts }, async () => {
  const t = newTenant();
  const stored = await api("POST", "/memory/remember", { as: t, body: { content: NFD, project: "shop" } });
  assert.equal(stored.status, 201, JSON.stringify(stored.body));
  // "caf\u00e9" and "d\u00e9ploiement" are the words only the accented form has.
  const r = await retrieve("/memory-retrieve", t, {
    message: "caf\u00e9 d\u00e9ploiement",
    project: "shop",
    mode: "keyword",
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.deepEqual(r.body.memories.map((m: { id: string }) => m.id), [stored.body.memory.id]);
});

Deno.test({ name: "close pool", ...opts }, async () => {
  await sql.end();
});
