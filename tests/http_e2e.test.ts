// HTTP end to end: the real local functions server (scripts/serve.ts) in-process on a free port,
// the real database, and the client SDK (sdk/mod.ts, plain fetch) as an agent
// would use it. Needs DATABASE_URL pointing at a migrated database.
import assert from "node:assert/strict";
import { createMemoryClient, MemoryApiError, type MemoryClient } from "../sdk/mod.ts";
import { serviceToken, userToken } from "./support/auth.ts";
import { type RunningServer, startTestServer } from "./support/http_server.ts";
import { newTenant, seedMemory, testSql } from "./support/seed.ts";
import { waitUntil } from "./support/wait.ts";

async function withServer(
  fn: (server: RunningServer) => Promise<void>,
  opts: Parameters<typeof startTestServer>[0] = {},
) {
  const server = await startTestServer(opts);
  try {
    await fn(server);
  } finally {
    await server.close();
  }
}

async function userClient(server: RunningServer, tenant: string): Promise<MemoryClient> {
  return createMemoryClient({ supabaseUrl: server.url, accessToken: await userToken(tenant) });
}

async function rejects(p: Promise<unknown>, status: number, code: string): Promise<MemoryApiError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof MemoryApiError, `expected MemoryApiError, got ${err}`);
    assert.equal(err.status, status, `${err.code}: ${err.message}`);
    assert.equal(err.code, code);
    return err;
  }
  assert.fail(`expected ${status} ${code}, the call succeeded`);
}

Deno.test("http e2e: remember → retrieve returns it → list → forget → retrieve no longer returns it", async () => {
  await withServer(async (server) => {
    const memory = await userClient(server, newTenant());
    const project = `shop-${crypto.randomUUID().slice(0, 8)}`;
    const fact = "The shop deploys with blue-green releases every Friday afternoon";

    const remembered = await memory.remember({ content: fact, project });
    assert.equal(remembered.created, true);
    assert.equal(remembered.memory.content, fact);
    assert.equal(remembered.memory.priority, "highest");
    assert.equal(remembered.memory.namespace, `devai/project/${project}/notes`);
    const id = remembered.memory.id;

    const again = await memory.remember({ content: fact, project });
    assert.equal(again.created, false, "an exact duplicate is a no-op");
    assert.equal(again.memory.id, id);

    const retrieved = await memory.retrieve({ message: "when does the shop deploy its releases on Friday?", project });
    assert.ok(retrieved.memories.some((m) => m.id === id && m.injected), JSON.stringify(retrieved.memories));
    assert.match(retrieved.block, /^## Relevant Memories/);
    assert.ok(retrieved.block.includes(fact), retrieved.block);
    assert.ok(retrieved.token_count > 0 && retrieved.token_count <= 2000);

    const listed = await memory.list({ namespace_prefix: `devai/project/${project}`, limit: 10 });
    assert.deepEqual(listed.memories.map((m) => m.id), [id]);
    assert.equal(listed.next_cursor, null);

    const forgotten = await memory.forget(id, { reason: "no longer true" });
    assert.equal(forgotten.changed, true);
    assert.equal(forgotten.memory.state, "soft_deleted");

    const after = await memory.retrieve({ message: "when does the shop deploy its releases on Friday?", project });
    assert.ok(!after.memories.some((m) => m.id === id), "a forgotten memory is not retrieved");
    assert.ok(!after.block.includes(fact));
    assert.equal((await memory.list({ namespace_prefix: `devai/project/${project}` })).memories.length, 0);
    assert.equal(
      (await memory.list({ namespace_prefix: `devai/project/${project}`, state: "soft_deleted" })).memories.length,
      1,
    );

    const restored = await memory.restore(id);
    assert.equal(restored.memory.state, "active");
    const back = await memory.retrieve({ message: "when does the shop deploy its releases on Friday?", project });
    assert.ok(back.memories.some((m) => m.id === id), "restored memories are retrieved again");
  });
});

Deno.test("http e2e: every memory route through the SDK", async () => {
  await withServer(async (server) => {
    const memory = await userClient(server, newTenant());
    const project = `api-${crypto.randomUUID().slice(0, 8)}`;
    const { memory: m } = await memory.remember({
      content: "Use pnpm for installs in this repository",
      project,
      metadata: { category: "preferences" },
    });

    assert.equal((await memory.get(m.id)).memory.id, m.id);

    const corrected = await memory.correct(m.id, {
      content: "Use bun for installs in this repository",
      reason: "switched",
    });
    assert.equal(corrected.superseded.id, m.id);
    assert.equal(corrected.superseded.superseded_by, corrected.memory.id);
    assert.equal(corrected.superseded.is_valid, false);
    const current = corrected.memory.id;

    const history = await memory.history(m.id, { limit: 10 });
    assert.equal(history.memory_id, m.id);
    assert.deepEqual(new Set(history.history.map((h) => h.event)), new Set(["ADD", "MERGE"]));

    const explained = await memory.explain(m.id);
    assert.equal(explained.current_id, current);
    assert.equal(explained.superseded_by.at(-1)?.memory.id, current);

    const pinned = await memory.pin(current);
    assert.equal(pinned.memory.pinned, true);
    assert.equal((await memory.pin(current)).changed, false, "pin is idempotent");
    assert.equal((await memory.unpin(current)).memory.pinned, false);
    // What the user stated or corrected never decays (priority highest), even unpinned: nothing is weak.
    const weak = await memory.weak({ limit: 5 });
    assert.deepEqual(weak.memories, []);
    // The control: another tenant's low-priority memory that has weakened is listed by the same call.
    const other = newTenant();
    const seeding = testSql(1);
    const weakOne = await seedMemory(seeding, other, {
      content: "The staging cache is flushed every Sunday night.",
      namespace: `devai/project/${project}/notes`,
      priority: "low",
      strength: 0.2,
    }).finally(() => seeding.end());
    const theirs = await (await userClient(server, other)).weak({ limit: 5 });
    assert.deepEqual(theirs.memories.map((w) => w.memory.id), [weakOne.id]);
    assert.equal((await memory.confirm(current)).memory.pinned, true);

    const stats = await memory.stats({ top_namespaces: 5 });
    assert.equal(stats.total, 2);
    assert.equal(stats.validity.superseded, 1);

    const asJson = await memory.export("json");
    assert.equal(asJson.format, "json");
    assert.equal(asJson.counts.memories, 2);
    const asMarkdown = await memory.export("markdown");
    assert.equal(asMarkdown.format, "markdown");
    assert.equal(asMarkdown.files.length, 2);
    assert.ok(asMarkdown.files.every((f) => f.content.startsWith("---\n")));

    // memory.query with the agent allowlist kept in the database (seed 001 §5).
    const q = await memory.query({
      agent: "supervisor",
      query: "what is used for installs in this repository?",
      categories: ["preferences"],
      project,
    });
    assert.equal(q.agent, "supervisor");
    assert.deepEqual(q.results.map((r) => r.id), [current], "the current preference, not the superseded one");
    await rejects(
      memory.query({ agent: "tester", query: "installs", categories: ["preferences"] }),
      403,
      "category_not_allowed",
    );

    // Validation errors arrive as MemoryApiError with the zod issues.
    const bad = await rejects(memory.retrieve({ message: "x", top_k: 10_000 }), 400, "invalid_request");
    assert.ok(bad.issues.some((i) => i.path.includes("top_k")), JSON.stringify(bad.issues));
    await rejects(memory.get(crypto.randomUUID()), 404, "not_found");
    await rejects(memory.get("not-a-uuid"), 400, "invalid_id");
  });
});

Deno.test("http e2e: an agent token through the SDK: issued with the session, acts for the tenant as its agent, listed without its secret, revoked → 401", async () => {
  await withServer(async (server) => {
    const tenant = newTenant();
    const user = await userClient(server, tenant);
    const issued = await user.issueAgentToken({ agent: "coder", label: "Claude Code on the laptop" });
    assert.match(issued.token, /^dvm_/);
    assert.ok(issued.token.startsWith(issued.token_prefix));

    const agent = createMemoryClient({ supabaseUrl: server.url, accessToken: issued.token });
    const project = `tok-${crypto.randomUUID().slice(0, 8)}`;
    const { memory: m } = await agent.remember({
      content: "The agent token's tenant keeps its fixtures in tests/fixtures",
      project,
    });
    assert.equal((await user.get(m.id)).memory.id, m.id, "the agent wrote into the user's own tenant");
    await rejects(agent.listAgentTokens(), 403, "forbidden_credential");

    const listed = await user.listAgentTokens();
    assert.deepEqual(listed.map((t) => [t.id, t.agent, t.label]), [[issued.id, "coder", "Claude Code on the laptop"]]);
    assert.ok(listed.every((t) => !("token" in t)), "a listing never carries a token");

    const revoked = await user.revokeAgentToken(issued.id);
    assert.equal(revoked.changed, true);
    assert.ok(revoked.token.revoked_at);
    assert.equal((await user.revokeAgentToken(issued.id)).changed, false);
    await rejects(agent.get(m.id), 401, "invalid_token");
    await rejects(user.issueAgentToken({ agent: "no-such-agent" }), 403, "unknown_agent");
  });
});

Deno.test("http e2e: extract is queued (202) and the job finishes; service role acts for the tenant it names", async () => {
  await withServer(async (server) => {
    const tenant = newTenant();
    const memory = await userClient(server, tenant);
    const queued = await memory.extract({
      session_id: `s-${crypto.randomUUID()}`,
      messages: [
        { role: "user", content: "Remember that the staging database is refreshed every Monday." },
        { role: "assistant", content: "Noted." },
      ],
    });
    assert.ok(queued.job_id);
    assert.equal(queued.deduplicated, false);

    // The server's worker drains every 200 ms: wait for the job to end, then for its memory.
    const status = await waitUntil(
      async () => {
        const s = await memory.jobStatus(queued.job_id);
        return s.status === "done" || s.status === "dead" ? s : undefined;
      },
      "the extract job to finish",
      { deadlineMs: 10_000 },
    );
    assert.equal(status.status, "done", JSON.stringify(status));

    // The service role names the tenant; it sees what the extraction (and its dedup job) wrote.
    const service = createMemoryClient({
      supabaseUrl: server.url,
      accessToken: await serviceToken(),
      tenantId: tenant,
    });
    const listed = await waitUntil(
      async () => {
        const l = await service.list();
        return l.memories.length > 0 ? l : undefined;
      },
      "the dedup job's memory",
      { deadlineMs: 5_000 },
    );
    assert.ok(
      listed.memories.some((m) => /staging database/i.test(m.content)),
      JSON.stringify(listed.memories.map((m) => m.content)),
    );
    // A user token cannot name another tenant.
    const other = createMemoryClient({
      supabaseUrl: server.url,
      accessToken: await userToken(tenant),
      tenantId: newTenant(),
    });
    await rejects(other.list(), 403, "forbidden_tenant");
  }, { worker: { intervalMs: 200 } });
});

Deno.test("http e2e: an unreachable server is a MemoryApiError with status 0", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const memory = createMemoryClient({
    supabaseUrl: `http://127.0.0.1:${port}`,
    accessToken: await userToken(newTenant()),
  });
  await rejects(memory.stats(), 0, "network_error");
});

Deno.test("http e2e: compact under the trigger is a no-op; over it, the oldest part becomes a summary", async () => {
  await withServer(async (server) => {
    const memory = await userClient(server, newTenant());
    const session_id = `c-${crypto.randomUUID()}`;
    const short = await memory.compact({ session_id, messages: [{ role: "user", content: "hello" }] });
    assert.equal(short.compacted, false);
    assert.equal(short.messages.length, 1);

    const messages = [
      { role: "system" as const, content: "You are a coding agent." },
      ...Array.from({ length: 40 }, (_, i) => ({
        role: (i % 2 === 0 ? "user" : "assistant") as "user" | "assistant",
        content: `Step ${i}: we refactored module ${i} of the billing service and ran its tests. `.repeat(20),
      })),
    ];
    const long = await memory.compact({ session_id, messages, trigger_tokens: 4_000, target_chunk_tokens: 2_000 });
    assert.equal(long.compacted, true);
    if (long.compacted) {
      assert.ok(long.tokens_after < long.tokens_before, `${long.tokens_after} < ${long.tokens_before}`);
      assert.ok(long.summary.length > 0);
      assert.ok(long.compacted_messages > 0);
      assert.equal(long.messages[0]?.role, "system", "the system prompt is kept first");
    }
  });
});

Deno.test("http e2e: dedup queues candidates (202) with their validation stats", async () => {
  await withServer(async (server) => {
    const memory = await userClient(server, newTenant());
    const queued = await memory.dedup({
      candidates: [{
        content: "The team reviews pull requests within one working day",
        type: "semantic",
        namespace: "devai/global/process",
        source: "pattern",
        priority: "medium",
        importance: 3,
      }],
    });
    assert.ok(queued.job_id);
    assert.equal(typeof queued.stats.accepted, "number");
  }, { worker: false });
});
