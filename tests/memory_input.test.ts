// Bad input to the memory function: each case gets the documented 4xx in the one error shape
// ({ error: { code, message, issues? } }) and writes nothing (no memory, no history, no relation).
import assert from "node:assert/strict";
import { type ApiResponse, memoryApi } from "./support/memory-api.ts";
import { userHeaders } from "./support/auth.ts";
import { newTenant, seedMemory, tenantWrites, testSql } from "./support/seed.ts";

const sql = testSql();
const api = memoryApi(sql, { config: { maxBodyBytes: 8 * 1024 } });
const opts = { sanitizeOps: false, sanitizeResources: false };

async function relationCount(tenant: string): Promise<number> {
  const [r] = await sql`select count(*)::int as n from public.memory_relations where owner_id = ${tenant}`;
  return r!.n as number;
}

/** Runs a request for a tenant that has one memory and asserts status/code and that nothing changed. */
async function rejects(
  name: string,
  status: number,
  code: string,
  request: (
    tenant: string,
    memoryId: string,
  ) => Promise<{ status: number; body: { error?: { code: string; issues?: unknown[] } } }>,
  issuePath?: string,
) {
  const t = newTenant();
  const m = await seedMemory(sql, t, { content: "A memory to aim at", namespace: "devai/global/x" });
  const before = { ...(await tenantWrites(sql, t)), relations: await relationCount(t) };
  const r = await request(t, m.id);
  assert.equal(r.status, status, `${name}: status ${r.status} ${JSON.stringify(r.body)}`);
  assert.equal(r.body.error?.code, code, `${name}: code`);
  if (issuePath) {
    const paths = (r.body.error?.issues ?? []).map((i) => (i as { path: unknown[] }).path.join("."));
    assert.ok(paths.includes(issuePath), `${name}: issues ${JSON.stringify(paths)} lack ${issuePath}`);
  }
  assert.deepEqual(
    { ...(await tenantWrites(sql, t)), relations: await relationCount(t) },
    before,
    `${name}: something was written`,
  );
}

const remember = (body: unknown) => (t: string) => api("POST", "/memory/remember", { as: t, body });

Deno.test({ name: "malformed JSON → 400 malformed_json", ...opts }, async () => {
  await rejects(
    "remember",
    400,
    "malformed_json",
    (t) => api("POST", "/memory/remember", { as: t, rawBody: '{"content": "x",' }),
  );
  await rejects(
    "correct",
    400,
    "malformed_json",
    (t, id) => api("POST", `/memory/${id}/correct`, { as: t, rawBody: "not json" }),
  );
  await rejects(
    "forget",
    400,
    "malformed_json",
    (t, id) => api("POST", `/memory/${id}/forget`, { as: t, rawBody: "{" }),
  );
});

Deno.test({ name: "wrong types → 400 invalid_request with the field's issue", ...opts }, async () => {
  await rejects("content number", 400, "invalid_request", remember({ content: 42 }), "content");
  await rejects(
    "importance string",
    400,
    "invalid_request",
    remember({ content: "x", importance: "high" }),
    "importance",
  );
  await rejects("importance range", 400, "invalid_request", remember({ content: "x", importance: 9 }), "importance");
  await rejects(
    "memory_type",
    400,
    "invalid_request",
    remember({ content: "x", memory_type: "opinion" }),
    "memory_type",
  );
  await rejects("metadata array", 400, "invalid_request", remember({ content: "x", metadata: ["a"] }), "metadata");
  await rejects("body array", 400, "invalid_request", remember([{ content: "x" }]));
  await rejects(
    "correct content null",
    400,
    "invalid_request",
    (t, id) => api("POST", `/memory/${id}/correct`, { as: t, body: { content: null } }),
    "content",
  );
});

Deno.test({ name: "unknown fields → 400 (strict schemas), in bodies and query strings", ...opts }, async () => {
  await rejects("remember extra", 400, "invalid_request", remember({ content: "x", priority: "low" }));
  await rejects(
    "metadata extra",
    400,
    "invalid_request",
    remember({ content: "x", metadata: { owner_id: "someone" } }),
    "metadata.owner_id",
  );
  await rejects(
    "correct extra",
    400,
    "invalid_request",
    (t, id) => api("POST", `/memory/${id}/correct`, { as: t, body: { content: "y", id: crypto.randomUUID() } }),
  );
  await rejects(
    "pin extra",
    400,
    "invalid_request",
    (t, id) => api("POST", `/memory/${id}/pin`, { as: t, body: { pinned: false } }),
  );
  await rejects("list extra", 400, "invalid_request", (t) => api("GET", "/memory?owner_id=x", { as: t }));
  await rejects(
    "list repeated",
    400,
    "invalid_request",
    (t) => api("GET", "/memory?limit=1&limit=2", { as: t }),
    "limit",
  );
  await rejects("list bad bool", 400, "invalid_request", (t) => api("GET", "/memory?pinned=yes", { as: t }), "pinned");
  await rejects(
    "export format",
    400,
    "invalid_request",
    (t) => api("GET", "/memory/export?format=csv", { as: t }),
    "format",
  );
  await rejects("weak limit", 400, "invalid_request", (t) => api("GET", "/memory/weak?limit=-1", { as: t }), "limit");
});

Deno.test({ name: "oversize body → 413 payload_too_large, declared or streamed", ...opts }, async () => {
  const big = JSON.stringify({ content: "x".repeat(20_000) });
  await rejects("remember", 413, "payload_too_large", (t) => api("POST", "/memory/remember", { as: t, rawBody: big }));
  await rejects(
    "correct",
    413,
    "payload_too_large",
    (t, id) => api("POST", `/memory/${id}/correct`, { as: t, rawBody: big }),
  );
  // A body streamed without a Content-Length is cut off while reading.
  await rejects("streamed", 413, "payload_too_large", async (t) => {
    const chunk = new TextEncoder().encode("x".repeat(4096));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent++ < 10) c.enqueue(chunk);
        else c.close();
      },
    });
    const { createHandler } = await import("../supabase/functions/memory/handler.ts");
    const { localEmbedder } = await import("../supabase/functions/_shared/embeddings.ts");
    const { testConfig } = await import("./support/config.ts");
    const handler = createHandler({ sql, config: testConfig({ maxBodyBytes: 8 * 1024 }), embedder: localEmbedder() });
    const res = await handler(
      new Request("http://local/memory/remember", { method: "POST", headers: await userHeaders(t), body: stream }),
    );
    return { status: res.status, body: await res.json() };
  });
});

Deno.test(
  { name: "a body whose client goes away half-way → 400, nothing written, no error logged", ...opts },
  async () => {
    const { createHandler } = await import("../supabase/functions/memory/handler.ts");
    const { localEmbedder } = await import("../supabase/functions/_shared/embeddings.ts");
    const { testConfig } = await import("./support/config.ts");
    const handler = createHandler({ sql, config: testConfig(), embedder: localEmbedder() });
    const logged: unknown[] = [];
    const consoleError = console.error;
    console.error = (...args: unknown[]) => void logged.push(args);
    try {
      const routes: [string, string][] = [["/memory/remember", "POST"], ["/memory/checkpoints/t-1", "PUT"]];
      for (const [route, method] of routes) {
        await rejects(route, 400, "invalid_request", async (t) => {
          // Half a body, then the connection is gone (what Deno.serve's body stream does then).
          const half = new TextEncoder().encode('{"content": "A fact the client never finished sen');
          const stream = new ReadableStream<Uint8Array>({
            start(c) {
              c.enqueue(half);
              c.error(new Error("BadResource: Cannot read request body as underlying resource unavailable"));
            },
          });
          const res = await handler(
            new Request(`http://local${route}`, { method, headers: await userHeaders(t), body: stream }),
          );
          return { status: res.status, body: await res.json() };
        });
      }
    } finally {
      console.error = consoleError;
    }
    assert.deepEqual(logged, [], "a client going away is no unexpected error");
  },
);

Deno.test({ name: "content too long, empty or with control characters → 400", ...opts }, async () => {
  await rejects("too long", 400, "invalid_request", remember({ content: "y".repeat(4001) }), "content");
  await rejects("blank", 400, "invalid_request", remember({ content: "   " }), "content");
  await rejects("NUL", 400, "invalid_request", remember({ content: "bad\u0000byte" }), "content");
  await rejects(
    "correct too long",
    400,
    "invalid_request",
    (t, id) => api("POST", `/memory/${id}/correct`, { as: t, body: { content: "z".repeat(4001) } }),
    "content",
  );
});

Deno.test(
  { name: "namespace with ../, control characters, wrong root, or project + namespace → 400", ...opts },
  async () => {
    await rejects(
      "dotdot",
      400,
      "invalid_request",
      remember({ content: "x", namespace: "devai/project/../user" }),
      "namespace",
    );
    await rejects(
      "leading dotdot",
      400,
      "invalid_request",
      remember({ content: "x", namespace: "../devai/user" }),
      "namespace",
    );
    await rejects(
      "control",
      400,
      "invalid_request",
      remember({ content: "x", namespace: "devai/user/\u0007bell" }),
      "namespace",
    );
    await rejects(
      "newline",
      400,
      "invalid_request",
      remember({ content: "x", namespace: "devai/user\n/x" }),
      "namespace",
    );
    await rejects(
      "empty segment",
      400,
      "invalid_request",
      remember({ content: "x", namespace: "devai//user" }),
      "namespace",
    );
    await rejects(
      "other root",
      400,
      "invalid_request",
      remember({ content: "x", namespace: "other/user/prefs" }),
      "namespace",
    );
    await rejects("project slash", 400, "invalid_request", remember({ content: "x", project: "a/../b" }), "project");
    await rejects(
      "both",
      400,
      "invalid_request",
      remember({ content: "x", project: "p", namespace: "devai/user/x" }),
      "project",
    );
    await rejects(
      "list prefix",
      400,
      "invalid_request",
      (t) => api("GET", "/memory?namespace_prefix=devai/../x", { as: t }),
      "namespace_prefix",
    );
  },
);

Deno.test({ name: "wrong content type → 415; malformed ids → 400 on every id route", ...opts }, async () => {
  await rejects("text/plain", 415, "unsupported_media_type", async (t) => {
    const headers = { ...(await userHeaders(t)), "content-type": "text/plain" };
    return await api("POST", "/memory/remember", { headers, rawBody: JSON.stringify({ content: "x" }) });
  });
  for (const route of ["correct", "forget", "restore", "pin", "unpin", "confirm"]) {
    await rejects(
      route,
      400,
      "invalid_id",
      (t) => api("POST", `/memory/12345/${route}`, { as: t, body: { content: "x" } }),
    );
  }
  for (const route of ["", "/history", "/explain"]) {
    await rejects(`GET${route}`, 400, "invalid_id", (t) => api("GET", `/memory/not-a-uuid${route}`, { as: t }));
  }
});

Deno.test({
  name: "a compressed body (content-encoding gzip, br, …) is 415 naming identity on every body route, nothing written",
  ...opts,
}, async () => {
  const gzip = async (value: unknown) =>
    new Uint8Array(
      await new Response(
        new Blob([JSON.stringify(value)]).stream().pipeThrough(new CompressionStream("gzip")),
      ).arrayBuffer(),
    );
  const sent = async (t: string, path: string, body: unknown, coding: string, method = "POST") =>
    await api(method, path, {
      headers: { ...(await userHeaders(t)), "content-encoding": coding },
      rawBody: await gzip(body),
    });
  const cases: [string, (t: string, id: string) => Promise<ApiResponse>][] = [
    ["remember gzip", (t) => sent(t, "/memory/remember", { content: "Compressed statement" }, "gzip")],
    ["remember GZIP, br", (t) => sent(t, "/memory/remember", { content: "Compressed statement" }, "GZIP, br")],
    ["correct", (t, id) => sent(t, `/memory/${id}/correct`, { content: "Compressed correction" }, "gzip")],
    ["forget (optional body)", (t, id) => sent(t, `/memory/${id}/forget`, { reason: "gone" }, "deflate")],
    ["checkpoint", (t) => sent(t, "/memory/checkpoints/th", { state: { a: 1 } }, "gzip", "PUT")],
  ];
  const tenants: string[] = [];
  for (const [name, request] of cases) {
    let answer: ApiResponse | undefined;
    await rejects(name, 415, "unsupported_media_type", async (t, id) => {
      tenants.push(t);
      const r = await request(t, id);
      answer = r;
      return r;
    });
    assert.match(answer!.body.error.message, /content-encoding .* not accepted.*identity/, name);
    assert.equal(answer!.headers.get("accept-encoding"), "identity", name);
  }
  const [saved] =
    await sql`select count(*)::int as n from public.supervisor_checkpoints where owner_id = any(${tenants})`;
  assert.equal(saved!.n, 0, "no checkpoint written");
  const plain = await api("POST", "/memory/remember", {
    headers: { ...(await userHeaders(newTenant())), "content-encoding": "identity" },
    rawBody: JSON.stringify({ content: "An uncompressed statement" }),
  });
  assert.equal(plain.status, 201, "identity is the body as sent");
});

/** A cursor as the API encodes one (base64url of [created_at, id]), with any timestamp. */
const cursorOf = (createdAt: string) =>
  btoa(JSON.stringify([createdAt, crypto.randomUUID()])).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

Deno.test({
  name: "a tampered cursor with an impossible timestamp is 400 invalid_cursor (was a 500 from Postgres 22008)",
  ...opts,
}, async () => {
  for (const ts of ["2026-13-45T25:61:61.000000", "0000-01-01T00:00:00.000000", "2025-02-29T00:00:00.000000"]) {
    await rejects(ts, 400, "invalid_cursor", (t) => api("GET", `/memory?cursor=${cursorOf(ts)}`, { as: t }));
  }
  const leapDay = await api("GET", `/memory?cursor=${cursorOf("2024-02-29T23:59:59.999999")}`, { as: newTenant() });
  assert.equal(leapDay.status, 200, "a real date is fine");
});

Deno.test(
  { name: "a body nested deeper than 64 levels is 400 malformed_json (was a stack overflow)", ...opts },
  async () => {
    const deep = (n: number) => `${"[".repeat(n)}${"]".repeat(n)}`;
    await rejects(
      "depth 3000",
      400,
      "malformed_json",
      (t) => api("POST", "/memory/remember", { as: t, rawBody: `{"content": "x", "extra": ${deep(3000)}}` }),
    );
    await rejects(
      "depth 65",
      400,
      "malformed_json",
      (t) => api("POST", "/memory/remember", { as: t, rawBody: `{"content": "x", "extra": ${deep(64)}}` }),
    );
    // Brackets inside strings are text, not nesting.
    const ok = await api("POST", "/memory/remember", {
      as: newTenant(),
      body: { content: `Brackets ${"[{".repeat(200)} are text` },
    });
    assert.equal(ok.status, 201);
  },
);

Deno.test({
  name: "content with a bidirectional, invisible or tag character or a lone surrogate is 400, naming it",
  ...opts,
}, async () => {
  const cases: [string, string][] = [
    ["right-to-left override", "Deploy with \u202Egnp\u202C today"],
    ["first strong isolate", "Use \u2068isolated\u2069 text"],
    ["zero-width space", "The key is ab\u200Bcd"],
    ["tag characters", "Follow the rules\u{E0049}\u{E0047}"],
    ["C1 control", "Bell \u0085 here"],
  ];
  for (const [what, content] of cases) {
    await rejects(what, 400, "invalid_request", remember({ content }), "content");
  }
  const t = newTenant();
  const r = await api("POST", "/memory/remember", { as: t, body: { content: "Deploy with \u202Egnp\u202C today" } });
  assert.match(r.body.error.issues[0].message, /U\+202E \(a bidirectional control\) at 12/);
  // A lone surrogate sent as a JSON escape would be stored as U+FFFD: refused instead.
  await rejects(
    "lone surrogate",
    400,
    "invalid_request",
    (t) => api("POST", "/memory/remember", { as: t, rawBody: '{"content": "half \\ud83d of an emoji"}' }),
    "content",
  );
  await rejects(
    "correct reason",
    400,
    "invalid_request",
    (t, id) =>
      api("POST", `/memory/${id}/correct`, { as: t, body: { content: "Fixed text", reason: "because\u202E" } }),
    "reason",
  );
});

Deno.test(
  { name: "metadata fields with a bidirectional or control character are 400, naming the field", ...opts },
  async () => {
    // They are stored with the memory and written into the Markdown export's front matter.
    for (const field of ["agent_id", "run_id", "actor_id", "user_id"]) {
      await rejects(
        `metadata.${field}`,
        400,
        "invalid_request",
        remember({ content: "A fact.", metadata: { [field]: "x\u202Ey" } }),
        `metadata.${field}`,
      );
    }
    await rejects(
      "keywords",
      400,
      "invalid_request",
      remember({ content: "A fact.", metadata: { keywords: ["ok", "a\u0000b"] } }),
      "metadata.keywords.1",
    );
    const r = await api("POST", "/memory/remember", {
      as: newTenant(),
      body: { content: "A fact.", metadata: { agent_id: "x\u202Ey" } },
    });
    assert.match(r.body.error.issues[0].message, /U\+202E \(a bidirectional control\) at 1/);
    const ok = await api("POST", "/memory/remember", {
      as: newTenant(),
      body: { content: "A fact.", metadata: { agent_id: "coder-😀", keywords: ["שלום"] } },
    });
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
  },
);

Deno.test({
  name:
    "text that is allowed is stored exactly as sent and answered as stored: emoji with joiners, right-to-left words",
  ...opts,
}, async () => {
  const t = newTenant();
  for (
    const content of [
      "The team mascot is 👩‍💻 with a 🏳️‍🌈 flag",
      "The Hebrew product name is שלום and the Arabic one مرحبا",
      "Tabs\tand\nnewlines stay",
    ]
  ) {
    const r = await api("POST", "/memory/remember", { as: t, body: { content } });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal(r.body.memory.content, content, "answered as sent");
    const [row] = await sql<
      { content: string }[]
    >`select content from public.devai_memories where id = ${r.body.memory.id}`;
    assert.equal(row!.content, content, "stored as answered");
  }
});

Deno.test({ name: "an embedding failure is a 503 and writes nothing", ...opts }, async () => {
  const { createHandler } = await import("../supabase/functions/memory/handler.ts");
  const { EmbeddingError } = await import("../supabase/functions/_shared/embeddings.ts");
  const { testConfig } = await import("./support/config.ts");
  const failing = {
    provider: "openai" as const,
    model: "text-embedding-3-small",
    dimensions: 512,
    embed: () => Promise.reject(new EmbeddingError("provider down")),
  };
  const handler = createHandler({ sql, config: testConfig(), embedder: failing });
  await rejects("remember", 503, "embedding_unavailable", async (t) => {
    const res = await handler(
      new Request("http://local/memory/remember", {
        method: "POST",
        headers: await userHeaders(t),
        body: JSON.stringify({ content: "needs a vector" }),
      }),
    );
    return { status: res.status, body: await res.json() };
  });
});

Deno.test({ name: "close the pool", ...opts }, async () => {
  await sql.end();
});
