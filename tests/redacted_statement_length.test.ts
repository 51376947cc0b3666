// A statement within remember's 4,000 characters whose secrets' markers make it longer than a memory
// holds (8,000) is a 422 that says so, nothing written; it was the column check's own words
// ("new row for relation \"devai_memories\" violates check constraint ...").
import assert from "node:assert/strict";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, tenantWrites, testSql } from "./support/seed.ts";

const sql = testSql();
const api = memoryApi(sql);
const opts = { sanitizeOps: false, sanitizeResources: false };

Deno.test({
  name: "a statement its markers make longer than a memory holds is a 422 naming why, nothing written",
  ...opts,
}, async () => {
  const t = newTenant();
  const before = await tenantWrites(sql, t);
  const content = `note: ${Array(399).fill("pw=Xk9fj2").join(" ")}`;
  assert.ok(content.length <= 4000);
  const r = await api("POST", "/memory/remember", { as: t, body: { content } });
  assert.equal(r.status, 422, JSON.stringify(r.body));
  assert.equal(r.body.error.code, "unprocessable");
  assert.match(r.body.error.message, /399 secrets.*over the 8000 a memory holds/);
  assert.doesNotMatch(r.body.error.message, /constraint|relation/);
  assert.deepEqual(await tenantWrites(sql, t), before, "nothing written");
  // Within what a memory holds, the markers are stored.
  const fits = await api("POST", "/memory/remember", {
    as: t,
    body: { content: `note: ${Array(150).fill("pw=Xk9fj2").join(" ")}` },
  });
  assert.equal(fits.status, 201, JSON.stringify(fits.body).slice(0, 300));
});

Deno.test({ name: "close pool", ...opts }, async () => {
  await sql.end();
});
