// A name and its canonically equivalent spelling are one name (migration 20261210400000,
// _shared/name-form.ts): a project or namespace a client sends in NFD (what macOS hands over) is
// the one it names in NFC, over HTTP and MCP alike. `한글` in NFD is conjoining jamo, all letters:
// it was taken as another project, a second scope, without a word; `café` in NFD (e + U+0301) was
// refused outright, a mark being no letter. Tenants and projects stay apart in either form. The
// worker's extraction stores a model's namespace and entity names in NFC too.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { STRUCTURED_CONTENT_HEADER } from "../supabase/functions/memory-mcp/results.ts";
import { userHeaders, userToken } from "./support/auth.ts";
import { functionJson, type RunningServer, startTestServer } from "./support/http_server.ts";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant } from "./support/seed.ts";
import { hashVector, reply } from "./fake_openai.ts";
import { drainAll, writeEnv } from "./write_helpers.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const HANGUL = "\ud55c\uae00"; // 한글 in NFC: two syllables
const CAFE = "caf\u00e9";
const nfd = (s: string) => s.normalize("NFD");

let server: RunningServer;
const ids = (r: { body: { memories?: { id: string }[] } }) => (r.body.memories ?? []).map((m) => m.id).sort();

async function remember(tenant: string, body: Record<string, unknown>) {
  const r = await functionJson(server, "memory/remember", await userHeaders(tenant), body);
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body.memory as { id: string; namespace: string };
}

async function listed(tenant: string, query: string) {
  const r = await functionJson(server, `memory?${query}`, await userHeaders(tenant));
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return ids(r);
}

async function found(tenant: string, project: string, message: string) {
  const r = await functionJson(server, "memory-retrieve", await userHeaders(tenant), {
    message,
    project,
    mode: "keyword",
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return ids(r);
}

Deno.test({ name: "start the server", ...opts }, async () => {
  server = await startTestServer({ worker: false });
});

Deno.test({ name: "a project sent in NFD is the project in NFC: one scope, stored in NFC", ...opts }, async () => {
  assert.notEqual(nfd(HANGUL), HANGUL);
  const t = newTenant();
  const a = await remember(t, { content: "Deploys go through the staging lane", project: HANGUL });
  const b = await remember(t, { content: "The staging lane deploys at noon", project: nfd(HANGUL) });
  assert.equal(b.namespace, `devai/project/${HANGUL}/notes`);
  const both = [a.id, b.id].sort();
  assert.deepEqual(await listed(t, `project=${encodeURIComponent(HANGUL)}`), both);
  assert.deepEqual(await listed(t, `project=${encodeURIComponent(nfd(HANGUL))}`), both);
  assert.deepEqual(await listed(t, `namespace_prefix=${encodeURIComponent(nfd(`devai/project/${HANGUL}`))}`), both);
  assert.deepEqual(await found(t, nfd(HANGUL), "staging lane"), both);
});

Deno.test({ name: "a namespace with a mark in NFD is taken, in NFC, over HTTP and MCP", ...opts }, async () => {
  const t = newTenant();
  const http = await remember(t, {
    content: "Coffee orders go to the café channel",
    namespace: nfd(`devai/user/${CAFE}`),
  });
  assert.equal(http.namespace, `devai/user/${CAFE}`);
  const client = new Client({ name: "devai-memory-tests", version: "0.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${server.functionsUrl}/memory-mcp`), {
      requestInit: {
        headers: { authorization: `Bearer ${await userToken(t)}`, [STRUCTURED_CONTENT_HEADER]: "true" },
      },
    }),
  );
  try {
    const r = await client.callTool({
      name: "remember_fact",
      arguments: { content: "The café channel is muted at night", project: nfd(`a/${CAFE}`) },
    }) as { isError?: boolean; structuredContent?: { memory?: { namespace: string } } };
    assert.ok(!r.isError, JSON.stringify(r));
    assert.equal(r.structuredContent?.memory?.namespace, `devai/project/a~${CAFE}/notes`);
  } finally {
    await client.close();
  }
});

Deno.test({ name: "a project's memories, asked for in NFD, reach no other project or tenant", ...opts }, async () => {
  const t = newTenant();
  const other = newTenant();
  const own = await remember(t, { content: "The billing service retries thrice", project: `a/${CAFE}` });
  await remember(t, { content: "The billing service retries once", project: "a/cafe" });
  await remember(t, { content: "The billing service retries twice", project: `a/${CAFE}-x` });
  const stranger = await remember(other, { content: "The billing service never retries", project: `a/${CAFE}` });
  // Its own project, sent in NFD: its memory, and none of the projects whose names begin alike.
  assert.deepEqual(await found(t, nfd(`a/${CAFE}`), "billing service retries"), [own.id]);
  assert.deepEqual(await listed(t, `project=${encodeURIComponent(nfd(`a/${CAFE}`))}`), [own.id]);
  // Another tenant's same project, in either form: its own memory only.
  assert.deepEqual(await found(other, nfd(`a/${CAFE}`), "billing service retries"), [stranger.id]);
  assert.deepEqual(await listed(other, `project=${encodeURIComponent(nfd(`a/${CAFE}`))}`), [stranger.id]);
});

// The worker's extraction: a session of a macOS client (project in NFD) consolidated by a model that
// names its namespace and an entity in NFD. The fact is filed in the project's scope, in NFC, and the
// entity is stored under its NFC name (the entity key trigger), as every entity is.
Deno.test(
  { name: "the worker's extraction: a model's namespace and entity names in NFD are stored in NFC", ...opts },
  async () => {
    const env = await writeEnv();
    try {
      const t = newTenant();
      const fact = "The caf\u00e9 service deploys from the release branch.";
      env.fake.setEmbedding(fact, hashVector("cafe release"));
      env.fake.onChat(
        "The conversation is given as numbered messages",
        reply.json({
          stored: [{
            content: fact,
            type: "semantic",
            namespace: nfd(`devai/project/${HANGUL}/deploy`),
            source: "discovery",
            priority: "high",
            importance: 4,
            sources: [0],
            entities: [{ name: nfd(`Caf\u00e9 Service`), type: "service" }],
          }],
          filtered: [],
        }),
      );
      const api = memoryApi(env.sql);
      const r = await api("POST", "/memory/episodes", {
        as: t,
        body: { session_id: "mac", project: nfd(HANGUL), messages: [{ role: "user", content: nfd(fact) }] },
      });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      assert.equal((await api("POST", "/memory/sessions/mac/end", { as: t })).status, 202);
      const report = await drainAll(env.deps, t);
      assert.deepEqual([report.done, report.dead], [1, 0], JSON.stringify(report.jobs));
      const [stored] = await env.sql<{ namespace: string; names: string[] }[]>`
      select m.namespace, array(select e.canonical_name from public.memory_entity_links l
                                  join public.memory_entities e on e.id = l.entity_id
                                 where l.memory_id = m.id and l.source = 'llm') as names
        from public.devai_memories m where m.owner_id = ${t} and m.content = ${fact}`;
      assert.equal(stored?.namespace, `devai/project/${HANGUL}/deploy`);
      assert.deepEqual(stored?.names, ["Caf\u00e9 Service"]);
    } finally {
      await env.close();
    }
  },
);

Deno.test({ name: "stop the server", ...opts }, async () => {
  await server.close();
});
