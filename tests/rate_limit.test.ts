// Per-tenant rate limits through the functions: a tenant over its limit gets 429 rate_limited with
// Retry-After and its request writes nothing; another tenant, another route class and (by
// default) service_role are not affected; a request is charged once however many transactions it
// runs; a tenant's concurrent requests do not wait for each other's token. The limits are lowered
// for the test in public.memory_settings and put back after.
import assert from "node:assert/strict";
import { createHandler as createCompact } from "../supabase/functions/memory-compact/handler.ts";
import { createHandler as createExtract } from "../supabase/functions/memory-extract/handler.ts";
import { localEmbedder, openAiEmbedder } from "../supabase/functions/_shared/embeddings.ts";
import { createHandler as createContext } from "../supabase/functions/context/handler.ts";
import { createHandler as createRetrieve } from "../supabase/functions/memory-retrieve/handler.ts";
import { FakeOpenAI } from "./fake_openai.ts";
import { memoryApi } from "./support/memory-api.ts";
import { serviceHeaders, userHeaders } from "./support/auth.ts";
import { testConfig } from "./support/config.ts";
import { overrideSettings } from "./support/lifecycle.ts";
import { newTenant, testSql } from "./support/seed.ts";
import { dbTest } from "./support/http.ts";
import { createSql, withTenant } from "../supabase/functions/_shared/db.ts";
import {
  rateLimit,
  UNLIMITED_ANSWER_KEPT_MS,
  unlimitedRouteClasses,
} from "../supabase/functions/_shared/rate-limit.ts";
import { testDatabaseUrl } from "./support/config.ts";
import { realServerOnly } from "./support/backend.ts";
import { waitUntil } from "./support/wait.ts";
import { assertWaitForNextToken } from "./support/refill.ts";

async function memoriesOf(sql: ReturnType<typeof testSql>, tenant: string): Promise<number> {
  const [row] = await sql<
    { n: number }[]
  >`select count(*)::int as n from public.devai_memories where owner_id = ${tenant}`;
  return row!.n;
}

dbTest(
  "rate limits: a tenant over its write limit gets 429 with Retry-After and writes nothing; others go on",
  async () => {
    const sql = testSql(2);
    const limits = await overrideSettings(sql, { rate_limit_write_burst: 3, rate_limit_write_per_minute: 6 });
    try {
      const api = memoryApi(sql);
      const [a, b] = [newTenant(), newTenant()];
      // remember runs two transactions (the duplicate check, then the insert): charged once.
      const started = performance.now();
      for (let i = 0; i < 3; i++) {
        const r = await api("POST", "/memory/remember", { as: a, body: { content: `Deploy fact number ${i}.` } });
        assert.equal(r.status, 201, JSON.stringify(r.body));
      }
      const refused = await api("POST", "/memory/remember", { as: a, body: { content: "One fact too many." } });
      assert.equal(refused.status, 429, JSON.stringify(refused.body));
      assert.equal(refused.body.error.code, "rate_limited");
      assertWaitForNextToken(Number(refused.headers.get("retry-after")), 10, started); // 6 a minute
      assert.equal(await memoriesOf(sql, a), 3, "the refused remember wrote nothing");

      assert.equal(
        (await api("POST", "/memory/remember", { as: b, body: { content: "Another tenant's fact." } })).status,
        201,
        "another tenant is not limited",
      );
      assert.equal((await api("GET", "/memory?limit=1", { as: a })).status, 200, "reads have their own bucket");
      // service_role acting for the limited tenant: not limited unless rate_limit_service_role = 1.
      const asService = { headers: await serviceHeaders(a), body: { content: "Written by a server-side agent." } };
      assert.equal((await api("POST", "/memory/remember", asService)).status, 201);
      await sql`update public.memory_settings set value = 1 where name = 'rate_limit_service_role'`;
      // It applies within UNLIMITED_ANSWER_KEPT_MS (the pool knew service_role unlimited): its clock moves past.
      const later = performance.now() + UNLIMITED_ANSWER_KEPT_MS;
      unlimitedRouteClasses(sql).now = () => later;
      assert.equal(
        (await api("POST", "/memory/remember", { ...asService, body: { content: "And another one." } })).status,
        429,
      );
    } finally {
      await sql`update public.memory_settings set value = 0 where name = 'rate_limit_service_role'`;
      await limits.restore();
      await sql.end();
    }
  },
);

dbTest(
  "rate limits: a search refused by its limit calls no remote embedder (retrieve, context/assemble): the token comes first",
  async () => {
    const sql = testSql(2);
    const fake = await FakeOpenAI.start();
    const limits = await overrideSettings(sql, { rate_limit_read_burst: 1, rate_limit_read_per_minute: 1 });
    try {
      const embedder = openAiEmbedder({ apiKey: "k", baseUrl: fake.baseUrl, model: "text-embedding-3-small" });
      const deps = { sql, config: testConfig(), embedder };
      const [retrieve, context] = [createRetrieve(deps), createContext(deps)];
      const tenant = newTenant();
      const post = async (handler: (r: Request) => Promise<Response>, path: string, body: unknown) =>
        (await handler(
          new Request(`http://localhost/functions/v1${path}`, {
            method: "POST",
            headers: await userHeaders(tenant),
            body: JSON.stringify(body),
          }),
        )).status;

      assert.equal(await post(retrieve, "/memory-retrieve", { message: "How do we deploy the API?" }), 200);
      assert.equal(fake.embeddingRequests().length, 1, "an allowed retrieval embeds its query");
      assert.equal(await post(retrieve, "/memory-retrieve", { message: "And the worker?" }), 429);
      assert.equal(
        await post(context, "/context/assemble", { message: "Fix the failing deploy.", project: "shop" }),
        429,
      );
      assert.equal(fake.embeddingRequests().length, 1, "the refused requests called no embedder");
    } finally {
      await limits.restore();
      await fake.close();
      await sql.end();
    }
  },
);

dbTest(
  "rate limits: heavy requests (memory-compact) have their own, smaller bucket; a refused one is a 429 before any work",
  async () => {
    const sql = testSql(2);
    const limits = await overrideSettings(sql, { rate_limit_heavy_burst: 2, rate_limit_heavy_per_minute: 1 });
    try {
      const handler = createCompact({
        sql,
        config: testConfig(),
        embedder: localEmbedder(),
        kickWorker: () => Promise.resolve(),
      });
      const tenant = newTenant();
      const compact = async (session: string) => {
        const res = await handler(
          new Request("http://localhost/functions/v1/memory-compact", {
            method: "POST",
            headers: await userHeaders(tenant),
            body: JSON.stringify({
              session_id: session,
              messages: [{ role: "user", content: "hello" }, { role: "user", content: "again" }],
            }),
          }),
        );
        return { status: res.status, retryAfter: res.headers.get("retry-after"), body: await res.json() };
      };
      const started = performance.now();
      assert.equal((await compact("s1")).status, 200);
      assert.equal((await compact("s2")).status, 200);
      const refused = await compact("s3");
      assert.equal(refused.status, 429, JSON.stringify(refused.body));
      assertWaitForNextToken(Number(refused.retryAfter), 60, started); // 1 a minute
      assert.match(refused.body.error.message, /too many heavy requests/);
      const api = memoryApi(sql);
      assert.equal(
        (await api("POST", "/memory/remember", { as: tenant, body: { content: "Writes are another class." } })).status,
        201,
      );
    } finally {
      await limits.restore();
      await sql.end();
    }
  },
);

dbTest(
  "rate limits: an extract request over the heavy limit is a 429 before its body is read, and writes nothing",
  async () => {
    const sql = testSql(2);
    const limits = await overrideSettings(sql, { rate_limit_heavy_burst: 1, rate_limit_heavy_per_minute: 1 });
    try {
      const handler = createExtract({
        sql,
        config: testConfig(),
        embedder: localEmbedder(),
        kickWorker: () => Promise.resolve(),
      });
      const tenant = newTenant();
      // The body is a stream that counts the chunks pulled from it: parsing (and redacting) would pull them.
      let pulled = 0;
      const bodyOf = (session: string) => {
        const bytes = new TextEncoder().encode(
          JSON.stringify({
            session_id: session,
            messages: [{ role: "user", content: "Remember that the port is 5432." }],
          }),
        );
        return new ReadableStream<Uint8Array>({
          pull(controller) {
            pulled++;
            controller.enqueue(bytes);
            controller.close();
          },
        }, { highWaterMark: 0 }); // pulled only when read
      };
      const extract = async (session: string) => {
        const res = await handler(
          new Request("http://localhost/functions/v1/memory-extract", {
            method: "POST",
            headers: await userHeaders(tenant),
            body: bodyOf(session),
          }),
        );
        return { status: res.status, body: await res.json() };
      };
      assert.equal((await extract("s1")).status, 202);
      const jobs = async () =>
        (await sql<{ n: number }[]>`select count(*)::int as n from public.memory_jobs where owner_id = ${tenant}`)[0]!
          .n;
      assert.equal(await jobs(), 1);
      pulled = 0;
      const refused = await extract("s2");
      assert.equal(refused.status, 429, JSON.stringify(refused.body));
      assert.equal(pulled, 0, "the refused request's body was never read");
      assert.equal(await jobs(), 1, "the refused request queued nothing");
    } finally {
      await limits.restore();
      await sql.end();
    }
  },
);

dbTest(
  "rate limits: on-demand consolidation is a heavy request however its path is spelled (percent-encoded too)",
  async () => {
    const sql = testSql(2);
    const limits = await overrideSettings(sql, { rate_limit_heavy_burst: 2, rate_limit_heavy_per_minute: 1 });
    try {
      const api = memoryApi(sql);
      const tenant = newTenant();
      const consolidate = (path: string) => api("POST", path, { as: tenant, body: { dry_run: true } });
      assert.equal((await consolidate("/memory/consolidate")).status, 200);
      // The router decodes the path: this is the consolidate route, and the heavy bucket's last token.
      assert.equal((await consolidate("/memory/consolid%61te")).status, 200);
      for (const path of ["/memory/consolid%61te", "/memory/%63onsolidate", "/memory/consolidate/"]) {
        const refused = await consolidate(path);
        assert.equal(refused.status, 429, `${path}: ${JSON.stringify(refused.body)}`);
        assert.match(refused.body.error.message, /too many heavy requests/);
      }
      assert.equal(
        (await api("POST", "/memory/remember", { as: tenant, body: { content: "A write still goes through." } }))
          .status,
        201,
        "the write bucket was not the one charged",
      );
    } finally {
      await limits.restore();
      await sql.end();
    }
  },
);

dbTest(
  "rate limits: a user's reads of the configuration (GET memory/categories, memory/agents) take its read tokens too",
  async () => {
    const sql = testSql(2);
    const limits = await overrideSettings(sql, { rate_limit_read_burst: 2, rate_limit_read_per_minute: 1 });
    try {
      const api = memoryApi(sql);
      const [a, b] = [newTenant(), newTenant()];
      assert.equal((await api("GET", "/memory/categories", { as: a })).status, 200);
      assert.equal((await api("GET", "/memory/agents/coder", { as: a })).status, 200);
      for (const path of ["/memory/agents", "/memory/categories", "/memory/stats"]) {
        const refused = await api("GET", path, { as: a });
        assert.deepEqual([refused.status, refused.body.error?.code], [429, "rate_limited"], path);
      }
      assert.equal((await api("GET", "/memory/categories", { as: b })).status, 200, "another tenant is not limited");
    } finally {
      await limits.restore();
      await sql.end();
    }
  },
);

Deno.test({
  ...realServerOnly(
    "rate limits: a tenant's token is taken and committed before its request's transaction, so its concurrent requests never wait for each other",
    "PGlite has one backend: an open transaction queues every other client, whatever the limiter does",
  ),
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const app = `devai-test-ratelimit-${crypto.randomUUID().slice(0, 8)}`;
  const sql = createSql(testDatabaseUrl(), { max: 4, applicationName: app });
  const tenant = { tenantId: newTenant(), actor: "user" };
  const charged = rateLimit(() => "read");
  const asRequest = <T>(work: () => Promise<T>) => {
    let out!: Promise<T>;
    // The middleware marks what runs inside it as one request of the read class.
    void charged(
      { req: { raw: new Request("http://local/"), path: "/" } } as never,
      () => (out = work()).then(() => {}),
    );
    return out;
  };
  // A token a minute: what the two requests took is still missing from the bucket at the end.
  const limits = await overrideSettings(sql, { rate_limit_read_burst: 300, rate_limit_read_per_minute: 1 });
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let inside!: () => void;
  const entered = new Promise<void>((resolve) => (inside = resolve));
  try {
    // A first request whose transaction stays open (a slow search) after it took its token.
    const first = asRequest(() =>
      withTenant(sql, tenant, async (tx) => {
        await tx`select 1`;
        inside();
        await held;
      })
    );
    await entered;
    let secondDone = false;
    const second = asRequest(() => withTenant(sql, tenant, (tx) => tx`select 1`)).then(() => (secondDone = true));
    // Either the second request finishes, or one of this pool's backends waits on a lock (the bucket row).
    const outcome = await waitUntil(
      async () => {
        if (secondDone) return "finished";
        const [w] = await sql<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity where application_name = ${app} and wait_event_type = 'Lock'`;
        return w!.n > 0 ? "waited on a lock" : undefined;
      },
      "the second request to finish or to wait",
      { pollMs: 10 },
    );
    release();
    await Promise.all([first, second]);
    assert.equal(outcome, "finished", "the second request of the tenant did not wait for the first one's transaction");
    const [bucket] = await sql<{ tokens: number }[]>`
      select tokens from memory_private.rate_limit_buckets where owner_id = ${tenant.tenantId} and route_class = 'read'`;
    assert.ok(bucket && bucket.tokens < 300 - 1.9, `both requests were charged (tokens ${bucket?.tokens})`);
  } finally {
    release();
    await limits.restore();
    await sql.end();
  }
});
