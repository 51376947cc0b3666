// A class without a rate limit is not asked again for a second (UnlimitedRouteClasses,
// docs/operations.md#rate-limits): with the read limit off, a pool's retrievals with a remote
// embedder send public.take_rate_limit_token once per second, not once each; turned on, the limit
// holds for every request from the second's end. The second is the pool's clock, moved by the test;
// the statements are counted on the wire (support/statement-count.ts).
import assert from "node:assert/strict";
import { createSql } from "../supabase/functions/_shared/db.ts";
import { openAiEmbedder } from "../supabase/functions/_shared/embeddings.ts";
import { UNLIMITED_ANSWER_KEPT_MS, unlimitedRouteClasses } from "../supabase/functions/_shared/rate-limit.ts";
import { createHandler as createRetrieve } from "../supabase/functions/memory-retrieve/handler.ts";
import { FakeOpenAI } from "./fake_openai.ts";
import { serviceHeaders, userHeaders } from "./support/auth.ts";
import { testConfig, testDatabaseUrl } from "./support/config.ts";
import { dbTest } from "./support/http.ts";
import { overrideSettings } from "./support/lifecycle.ts";
import { newTenant, testSql } from "./support/seed.ts";
import { countStatements } from "./support/statement-count.ts";

/** A retrieve handler on a pool through a statement counter, with a remote embedder and a clock the test sets. */
async function retrievalsCounted() {
  const counter = countStatements(testDatabaseUrl(), "take_rate_limit_token");
  const sql = createSql(counter.url, { max: 2 });
  const clock = { t: 0 };
  unlimitedRouteClasses(sql).now = () => clock.t;
  const fake = await FakeOpenAI.start();
  const embedder = openAiEmbedder({ apiKey: "k", baseUrl: fake.baseUrl, model: "text-embedding-3-small" });
  const retrieve = createRetrieve({ sql, config: testConfig(), embedder });
  const status = async (headers: HeadersInit, message: string) =>
    (await retrieve(
      new Request("http://localhost/functions/v1/memory-retrieve", {
        method: "POST",
        headers,
        body: JSON.stringify({ message }),
      }),
    )).status;
  return {
    counter,
    clock,
    fake,
    status,
    async close() {
      await sql.end();
      await fake.close();
      counter.close();
    },
  };
}

dbTest(
  "rate limits off: retrievals with a remote embedder send the token statement once a second, not each; turned on, it holds from the second's end",
  async () => {
    const admin = testSql(1);
    const limits = await overrideSettings(admin, { rate_limit_read_per_minute: 0, rate_limit_read_burst: 1 });
    const r = await retrievalsCounted();
    try {
      const headers = await userHeaders(newTenant());
      for (let i = 0; i < 10; i++) assert.equal(await r.status(headers, `How do we deploy, take ${i}?`), 200);
      assert.equal(r.counter.count(), 1, "10 retrievals, limit off: one token statement");
      r.clock.t = UNLIMITED_ANSWER_KEPT_MS - 1;
      assert.equal(await r.status(headers, "And the worker?"), 200);
      assert.equal(r.counter.count(), 1, "still within the second");

      // The operator turns the limit on (1 a minute, burst 1): it applies within the second.
      await admin`update public.memory_settings set value = 1 where name = 'rate_limit_read_per_minute'`;
      r.clock.t = UNLIMITED_ANSWER_KEPT_MS;
      assert.equal(await r.status(headers, "How do we deploy the API?"), 200, "the burst's one token");
      assert.equal(r.counter.count(), 2, "the second over: the token statement is sent again");
      const embedded = r.fake.embeddingRequests().length;
      for (let i = 0; i < 3; i++) assert.equal(await r.status(headers, `One too many, take ${i}.`), 429);
      assert.equal(r.counter.count(), 5, "limit on: every request sends its token statement");
      assert.equal(r.fake.embeddingRequests().length, embedded, "the refused requests called no embedder");
    } finally {
      await limits.restore();
      await r.close();
      await admin.end();
    }
  },
);

dbTest(
  "rate limits: a service_role caller without a limit is not asked again, while the tenant's own requests of the same class are charged each",
  async () => {
    const admin = testSql(1);
    const limits = await overrideSettings(admin, {
      rate_limit_read_per_minute: 600,
      rate_limit_read_burst: 100,
      rate_limit_service_role: 0,
    });
    const r = await retrievalsCounted();
    try {
      const tenant = newTenant();
      const [asService, asUser] = [await serviceHeaders(tenant), await userHeaders(tenant)];
      for (let i = 0; i < 3; i++) assert.equal(await r.status(asService, `Server-side question ${i}?`), 200);
      assert.equal(r.counter.count(), 1, "service_role, not limited: one token statement");
      for (let i = 0; i < 3; i++) assert.equal(await r.status(asUser, `The user's question ${i}?`), 200);
      assert.equal(r.counter.count(), 4, "the tenant's own requests (limited) each send theirs");

      await admin`update public.memory_settings set value = 1 where name = 'rate_limit_service_role'`;
      r.clock.t = UNLIMITED_ANSWER_KEPT_MS;
      assert.equal(await r.status(asService, "Server-side, now limited?"), 200);
      assert.equal(r.counter.count(), 5, "service_role limited: charged again once the second is over");
    } finally {
      await limits.restore();
      await r.close();
      await admin.end();
    }
  },
);
