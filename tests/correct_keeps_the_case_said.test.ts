// Review of 0776c75: a correction to another text whose copy in another letter case is live (user
// scope) is superseded by that copy, so the case the user just said ('/srv/Data') lives nowhere.
import assert from "node:assert/strict";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, testSql } from "./support/seed.ts";

const sql = testSql();
const api = memoryApi(sql);
const opts = { sanitizeOps: false, sanitizeResources: false };

Deno.test(
  { name: "a correction to a new text keeps the case the user said, a copy in another case live", ...opts },
  async () => {
    const t = newTenant();
    const r1 = await api("POST", "/memory/remember", {
      as: t,
      body: { content: "Fixtures live in /tmp/x", project: "acme/shop" },
    });
    assert.equal(r1.status, 201, JSON.stringify(r1.body));
    const r2 = await api("POST", "/memory/remember", { as: t, body: { content: "Fixtures live in /srv/data" } });
    assert.equal(r2.status, 201, JSON.stringify(r2.body));
    const r = await api("POST", `/memory/${r1.body.memory.id}/correct`, {
      as: t,
      body: { content: "Fixtures live in /srv/Data" },
    });
    assert.ok(r.status < 300, JSON.stringify(r.body));
    const live = (await sql<{ content: string }[]>`
    select content from public.devai_memories where owner_id = ${t} and is_valid and state = 'active'`).map((x) =>
      x.content
    );
    assert.ok(
      live.includes("Fixtures live in /srv/Data"),
      `answered ${r.status} ${r.body.memory?.content}; live ${JSON.stringify(live)}`,
    );
  },
);

Deno.test({ name: "close pool", ...opts }, async () => {
  await sql.end();
});
