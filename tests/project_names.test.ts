// Project names people really use: a repository's owner/name (`acme/web`) or a scoped package
// (`@acme/web`). A project's scope is one namespace segment with `/` written as `~`, so `a/b`,
// `a_b` and `a%b` are three projects whose memories never meet, in retrieval, listing or dedup.
import assert from "node:assert/strict";
import { createHandler as createDedup } from "../supabase/functions/memory-dedup/handler.ts";
import { createHandler as createRetrieve } from "../supabase/functions/memory-retrieve/handler.ts";
import { localEmbedder } from "../supabase/functions/_shared/embeddings.ts";
import {
  projectFromSegment,
  projectName,
  projectScope,
  projectSegment,
} from "../supabase/functions/_shared/schemas.ts";
import { userHeaders } from "./support/auth.ts";
import { testConfig } from "./support/config.ts";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, testSql } from "./support/seed.ts";

const sql = testSql();
const api = memoryApi(sql);
const retrieve = createRetrieve({ sql, config: testConfig(), embedder: localEmbedder() });
const opts = { sanitizeResources: false, sanitizeOps: false };

Deno.test("project names: owner/name and @scope/name map to one segment and back; the mapping never merges two names", () => {
  for (
    const name of ["acme/web", "@acme/web", "a/b", "a_b", "a%b", "task_forge", "gitlab/group/sub/repo", "100%_done"]
  ) {
    assert.ok(projectName.safeParse(name).success, name);
    assert.equal(projectFromSegment(projectSegment(name)), name);
  }
  assert.equal(projectScope("devai", "@acme/web"), "devai/project/@acme~web");
  const segments = ["a/b", "a_b", "a%b", "a-b", "ab"].map(projectSegment);
  assert.equal(new Set(segments).size, segments.length);
  for (const bad of ["a//b", "/a", "a/", "a/../b", "./a", "a~b", "a b", "a\\b", ""]) {
    assert.equal(projectName.safeParse(bad).success, false, JSON.stringify(bad));
  }
});

Deno.test(
  { name: "project names: a/b, a_b and a%b each retrieve and list only their own memories", ...opts },
  async () => {
    const t = newTenant();
    const names = ["a/b", "a_b", "a%b", "a"];
    const ids = new Map<string, string>();
    for (const project of names) {
      const r = await api("POST", "/memory/remember", {
        as: t,
        body: { content: `The deploy key of project ${project} rotates monthly`, project },
      });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      assert.equal(r.body.memory.namespace, `${projectScope("devai", project)}/notes`);
      ids.set(project, r.body.memory.id);
    }
    for (const project of names) {
      const res = await retrieve(
        new Request("http://localhost/functions/v1/memory-retrieve", {
          method: "POST",
          headers: await userHeaders(t),
          body: JSON.stringify({ message: "When does the deploy key rotate?", project, threshold: 0 }),
        }),
      );
      assert.equal(res.status, 200);
      const body = await res.json();
      const found = body.memories.filter((m: { namespace: string }) => m.namespace.startsWith("devai/project/")).map((
        m: { id: string },
      ) => m.id);
      assert.deepEqual(
        found,
        [ids.get(project)],
        `project ${project}: ${JSON.stringify(body.memories.map((m: { namespace: string }) => m.namespace))}`,
      );
      assert.ok(body.block.includes(`### Project Knowledge (${project})`), body.block);

      const listed = await api("GET", `/memory?project=${encodeURIComponent(project)}`, { as: t });
      assert.equal(listed.status, 200);
      assert.deepEqual(
        listed.body.memories.map((m: { id: string }) => m.id),
        [ids.get(project)],
        `list ?project=${project}`,
      );
    }
    // project and namespace_prefix together: both apply.
    const both = await api("GET", `/memory?project=a%2Fb&namespace_prefix=devai/project/a_b`, { as: t });
    assert.deepEqual(both.body.memories, []);
    const bad = await api("GET", "/memory?project=a~b", { as: t });
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body.error.issues[0].path, ["project"]);
  },
);

Deno.test(
  { name: "project names: a write's answer names the project it filed under; errors say '/' is '~'", ...opts },
  async () => {
    // `devai/project/acme/web/notes` is a valid namespace of project `acme` (topic web/notes): the
    // server cannot tell that the caller meant acme/web, so its answer says where it went.
    const t = newTenant();
    const remember = (content: string, where: Record<string, string>) =>
      api("POST", "/memory/remember", { as: t, body: { content, ...where } });
    const slashed = await remember("The web app's CDN purges nightly", { namespace: "devai/project/acme/web/notes" });
    assert.equal(slashed.status, 201, JSON.stringify(slashed.body));
    assert.equal(slashed.body.project, "acme");
    const tilde = await remember("The web app's CDN purges at 02:00", { namespace: "devai/project/acme~web/notes" });
    assert.equal(tilde.body.project, "acme/web");
    assert.equal(
      (await remember("The web app's CDN purges at 02:00", { project: "acme/web" })).body.project,
      "acme/web",
    );
    const again = await remember("The web app's CDN purges at 02:00", { namespace: "devai/project/acme~web/notes" });
    assert.equal(again.status, 200);
    assert.deepEqual([again.body.created, again.body.project], [false, "acme/web"], "a duplicate's answer too");
    assert.equal((await remember("I prefer tabs", { scope: "user" })).body.project, null);

    const invalid = await remember("x", { namespace: "devai/notes" });
    assert.equal(invalid.status, 400);
    assert.match(
      invalid.body.error.issues[0].message,
      /'\/' inside a project name is written '~'.*devai\/project\/acme~web/,
    );

    // Where a request names both, the mismatch says which project the namespace is in, and how to write it.
    const dedup = createDedup({
      sql,
      config: testConfig(),
      embedder: localEmbedder(),
      kickWorker: () => Promise.resolve(),
    });
    const res = await dedup(
      new Request("http://localhost/functions/v1/memory-dedup", {
        method: "POST",
        headers: await userHeaders(t),
        body: JSON.stringify({
          project: "acme/web",
          candidates: [{
            content: "The web app builds with Vite",
            type: "semantic",
            source: "discovery",
            priority: "low",
            importance: 3,
            namespace: "devai/project/acme/web/build",
          }],
        }),
      }),
    );
    const refused = await res.json();
    assert.equal(res.status, 400, JSON.stringify(refused));
    assert.match(
      refused.error.issues[0].message,
      /namespace is in project 'acme' but the request's project is 'acme\/web' \(a '\/' inside a project name is written '~'/,
    );
    const [row] = await sql<
      { n: number }[]
    >`select count(*)::int as n from public.devai_memories where owner_id = ${t}`;
    assert.equal(row?.n, 3, "nothing written by the refused request");
  },
);

Deno.test({ name: "project names: close the pool", ...opts }, async () => {
  await sql.end();
});
