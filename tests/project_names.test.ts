// Project names people really use: a repository's owner/name (`acme/web`) or a scoped package
// (`@acme/web`). A project's scope is one namespace segment with `/` written as `~`, so `a/b`,
// `a_b` and `a%b` are three projects whose memories never meet, in retrieval, listing or dedup.
import assert from "node:assert/strict";
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

Deno.test({ name: "project names: close the pool", ...opts }, async () => {
  await sql.end();
});
