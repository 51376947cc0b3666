// Pure write-path logic: the writing-constraint validator (seed 001 §9), namespace scoping, caps,
// the rule-based extractor and the dedup decision resolution (id mapping, protections).
import assert from "node:assert/strict";
import { type Candidate, prepareCandidates } from "../supabase/functions/_shared/candidates.ts";
import { callerNamespace, defaultScope, modelNamespace } from "../supabase/functions/_shared/scopes.ts";
import { validateContent } from "../supabase/functions/_shared/writing-constraints.ts";
import { extractByRules, toThirdPerson } from "../supabase/functions/_shared/rule-extractor.ts";
import { decideWithoutLlm, type Neighbour, resolveDecision } from "../supabase/functions/_shared/dedup-decision.ts";
import { createHandler as createWorkerHandler } from "../supabase/functions/memory-worker/handler.ts";
import { serviceToken, userToken } from "./support/auth.ts";
import { testConfig } from "./support/config.ts";

const c = (content: string, extra: Partial<Candidate> = {}): Candidate => ({
  content,
  type: "semantic",
  namespace: "devai/global/x",
  source: "discovery",
  priority: "low",
  importance: 3,
  ...extra,
});

Deno.test("validator: trims to two sentences, rejects too long / pronouns / empty", () => {
  assert.deepEqual(validateContent("semantic", "  The API uses JWT.  "), {
    ok: true,
    content: "The API uses JWT.",
    trimmed: false,
  });
  const three = validateContent("semantic", "The API uses JWT. Tokens expire in 1h. Refresh uses index.ts helpers.");
  assert.deepEqual(three, { ok: true, content: "The API uses JWT. Tokens expire in 1h.", trimmed: true });
  assert.equal(
    validateContent("semantic", "Config lives in v1.2 of app.config.ts, e.g. the db section.").ok,
    true,
    "dots inside tokens are not sentence ends",
  );
  assert.deepEqual(validateContent("semantic", "x".repeat(281)), { ok: false, reason: "too_long" });
  assert.deepEqual(validateContent("semantic", `${"Long sentence ".repeat(15)}. Short one.`).ok, true);
  assert.deepEqual(validateContent("semantic", "I prefer tabs."), { ok: false, reason: "pronoun" });
  assert.deepEqual(validateContent("semantic", "You should use our staging DB."), { ok: false, reason: "pronoun" });
  assert.equal(
    validateContent("episodic", "We fixed the deploy.").ok,
    true,
    "the pronoun rule is for semantic memories",
  );
  assert.deepEqual(validateContent("semantic", "   "), { ok: false, reason: "empty" });
  // A model's merged text with a right-to-left override and a zero-width space is stored without them.
  assert.deepEqual(validateContent("semantic", "The API uses \u202eJWT\u200b tokens."), {
    ok: true,
    content: "The API uses JWT tokens.",
    trimmed: false,
  });
});

// The worker's extraction: a model's namespace in NFD (한글 as jamo, café as e + U+0301) is the
// request's project in NFC, not another project to move it out of (_shared/name-form.ts).
Deno.test("namespaces: a model's or a caller's namespace in NFD is read in NFC", () => {
  const hangul = "\ud55c\uae00";
  assert.deepEqual(modelNamespace(`project/${hangul}/arch`.normalize("NFD"), "devai", { project: hangul }), {
    namespace: `devai/project/${hangul}/arch`,
    rewritten: false,
  });
  assert.deepEqual(callerNamespace("devai/user/caf\u00e9".normalize("NFD"), "devai", {}), {
    ok: true,
    namespace: "devai/user/caf\u00e9",
  });
});

Deno.test("namespaces: a model's proposal stays in user, the request's project, or global only when asked", () => {
  const project = { project: "taskforge" };
  assert.deepEqual(modelNamespace("project/taskforge/arch", "devai", project), {
    namespace: "devai/project/taskforge/arch",
    rewritten: false,
  });
  assert.deepEqual(modelNamespace("devai/user/preferences", "devai", {}), {
    namespace: "devai/user/preferences",
    rewritten: false,
  });
  assert.equal(
    modelNamespace("devai/project/other/arch", "devai", project).namespace,
    "devai/project/taskforge/arch",
    "no cross-project writes",
  );
  assert.equal(modelNamespace("devai/../etc", "devai", {}).namespace, "devai/user", "invalid: the request's scope");
  assert.equal(modelNamespace("elsewhere/x", "devai", { project: "p" }).namespace, "devai/project/p");
  // The request's project spelling wins, so retrieval with the same project finds it.
  assert.equal(
    modelNamespace("project/taskforge/arch", "devai", { project: "TaskForge" }).namespace,
    "devai/project/TaskForge/arch",
  );
  // Global is not the default: without scope "global" a model's global lesson goes to the request's
  // scope, topic kept; with it, it stays global.
  assert.deepEqual(modelNamespace("devai/global/patterns", "devai", {}), {
    namespace: "devai/user/patterns",
    rewritten: true,
  });
  assert.equal(modelNamespace("devai/global/patterns", "devai", project).namespace, "devai/project/taskforge/patterns");
  assert.deepEqual(modelNamespace("devai/global/patterns", "devai", { scope: "global" }), {
    namespace: "devai/global/patterns",
    rewritten: false,
  });
  assert.equal(
    modelNamespace("devai/project/other", "devai", {}).namespace,
    "devai/user",
    "no project named: the user scope",
  );
  // A repository's owner/name is one segment, `/` written as `~`.
  assert.equal(
    modelNamespace("devai/project/acme~web/arch", "devai", { project: "acme/web" }).namespace,
    "devai/project/acme~web/arch",
  );
  assert.equal(
    modelNamespace("devai/project/acme/web", "devai", { project: "acme/web" }).namespace,
    "devai/project/acme~web/web",
  );
});

Deno.test("namespaces: the caller's own namespace is kept when valid for the request, refused otherwise", () => {
  assert.deepEqual(callerNamespace("devai/project/billing-service", "devai", {}), {
    ok: true,
    namespace: "devai/project/billing-service",
  });
  assert.deepEqual(callerNamespace("project/billing-service/arch", "devai", {}), {
    ok: true,
    namespace: "devai/project/billing-service/arch",
  });
  assert.deepEqual(callerNamespace("devai/global/tools", "devai", {}), { ok: true, namespace: "devai/global/tools" });
  assert.equal(
    callerNamespace("devai/project/a", "devai", { project: "b" }).ok,
    false,
    "another project than the request's",
  );
  assert.equal(callerNamespace("devai/elsewhere/x", "devai", {}).ok, false, "not one of the three scopes");
  assert.equal(callerNamespace("devai/project", "devai", {}).ok, false, "a project scope names its project");
  assert.equal(callerNamespace("devai/user/../x", "devai", {}).ok, false);
  assert.equal(defaultScope("devai", {}), "devai/user");
  assert.equal(defaultScope("devai", { project: "@acme/web" }), "devai/project/@acme~web");
  assert.equal(defaultScope("devai", { project: "p", scope: "global" }), "devai/global");
});

Deno.test("unsafe characters: a candidate is counted once, whichever of its content, summary or compressed form had them", () => {
  const nul = "\u0000";
  const out = prepareCandidates({
    stated: [],
    proposed: [[
      c("Deploys run from the main branch.", { summary: `Deploys from${nul} main` }),
      c("The release key lives in vault.", { compressed: `key:${nul}vault` }),
      c(`Tests run with${nul} deno.`, { summary: `Deno${nul} tests`, compressed: `tests:${nul}deno` }),
      c("CI runs on every push.", { summary: "CI on push" }),
    ]],
  }, { root: "devai", categories: [] });
  assert.deepEqual(out.candidates.map((k) => [k.summary, k.compressed]), [
    ["Deploys from main", undefined],
    [undefined, "key:vault"],
    ["Deno tests", "tests:deno"],
    ["CI on push", undefined],
  ]);
  // memory-dedup reported 1 here: only the content's NUL was counted.
  assert.equal(out.stats.unsafe_characters_removed, 3);
});

Deno.test("caps: at most 5 per chunk by priority, user-stated always kept, counted", () => {
  const many = Array.from({ length: 8 }, (_, i) => c(`Fact number ${i} about the build.`, { importance: (i % 5) + 1 }));
  const stated = c("The user wants conventional commits.", { source: "user_stated", priority: "highest" });
  const out = prepareCandidates({ stated: [stated], proposed: [[...many, c("I like it.")]] }, {
    root: "devai",
    categories: [],
  });
  assert.equal(out.candidates.length, 6);
  assert.equal(out.candidates[0]!.content, stated.content);
  assert.equal(out.stats.over_cap, 3);
  assert.equal(out.stats.rejected, 1);
  assert.equal(out.stats.reasons.pronoun, 1);
});

Deno.test("caps: each chunk is capped on its own (8 in one chunk and 0 in another keep 5, not 8)", () => {
  const eight = Array.from({ length: 8 }, (_, i) => c(`Chunk one fact ${i}.`));
  const three = Array.from({ length: 3 }, (_, i) => c(`Chunk two fact ${i}.`));
  assert.equal(
    prepareCandidates({ stated: [], proposed: [eight, []] }, { root: "devai", categories: [] }).candidates.length,
    5,
  );
  const out = prepareCandidates({ stated: [], proposed: [eight, three] }, { root: "devai", categories: [] });
  assert.equal(out.candidates.length, 8);
  assert.equal(out.candidates.filter((x) => x.content.startsWith("Chunk one")).length, 5);
  assert.equal(out.stats.over_cap, 3);
  // A fact capped away in chunk one does not shadow the same fact in chunk two.
  const again = prepareCandidates({ stated: [], proposed: [eight, [c("Chunk one fact 7.")]] }, {
    root: "devai",
    categories: [],
  });
  assert.ok(again.candidates.some((x) => x.content === "Chunk one fact 7."));
});

Deno.test("provenance: a model cannot make a candidate user-stated (demoted, capped, counted)", () => {
  const claims = Array.from(
    { length: 7 },
    (_, i) =>
      c(`Claimed fact ${i}.`, { source: i % 2 ? "user_stated" : "correction", priority: "highest", importance: 5 }),
  );
  const out = prepareCandidates({ stated: [], proposed: [claims] }, { root: "devai", categories: [] });
  assert.equal(out.candidates.length, 5, "model claims do not skip the per-chunk cap");
  assert.ok(
    out.candidates.every((x) => x.source === "discovery" && x.priority === "high"),
    JSON.stringify(out.candidates),
  );
  assert.equal(out.stats.demoted, 7);
  // The same words found by the rules (the user's own) stay user-stated and uncapped.
  const stated = prepareCandidates({ stated: claims, proposed: [] }, { root: "devai", categories: [] });
  assert.equal(stated.candidates.length, 7);
  assert.ok(stated.candidates.every((x) => x.priority === "highest"));
});

Deno.test("categories: a configured category is kept, an unknown one dropped and counted", () => {
  const out = prepareCandidates({
    stated: [],
    proposed: [[
      c("The sprint goal is the v2 API.", { category: "tasks" }),
      c("The build uses esbuild.", { category: "made_up" }),
      c("The CI runs on push.", { category: null }),
    ]],
  }, { root: "devai", categories: ["tasks", "projects"] });
  assert.deepEqual(out.candidates.map((x) => x.category), ["tasks", undefined, undefined]);
  assert.equal(out.stats.category_dropped, 1);
});

Deno.test("rules: 'remember' statements and 'no, X not Y' corrections, third person", () => {
  assert.equal(
    toThirdPerson("I prefer tabs and my editor is vim"),
    "the user prefers tabs and the user's editor is vim",
  );
  const out = extractByRules([
    { role: "user", content: "do you remember the port?" },
    { role: "assistant", content: "Remember that I am an assistant." },
    { role: "user", content: "Thanks. Remember: the staging DB is read-only" },
    { role: "user", content: "No, the config is in deploy/app.yaml not app.yaml" },
    { role: "user", content: "no thanks" },
  ], { namespace: "devai/project/tf" });
  assert.deepEqual(out.map((x) => [x.content, x.source, x.namespace]), [
    ["The staging DB is read-only.", "user_stated", "devai/project/tf"],
    ["Correction from the user: the config is in deploy/app.yaml not app.yaml.", "correction", "devai/project/tf"],
  ]);
});

const neighbours: Neighbour[] = [
  {
    id: "id-a",
    content: "A",
    similarity: 0.9,
    memory_type: "semantic",
    namespace: "devai/global/x",
    source: "discovery",
    priority: "low",
    pinned: false,
  },
  {
    id: "id-b",
    content: "B",
    similarity: 0.85,
    memory_type: "semantic",
    namespace: "devai/global/x",
    source: "user_stated",
    priority: "highest",
    pinned: false,
  },
];

Deno.test("decide: small ids map back to real ids; unknown or missing ids and protected targets become ADD", () => {
  const cand = c("The API uses JWT auth.");
  assert.deepEqual(
    resolveDecision({ action: "UPDATE", target: 0, content: "The API uses JWT auth via jose." }, cand, neighbours)
      .resolved,
    { action: "UPDATE", targetId: "id-a", content: "The API uses JWT auth via jose." },
  );
  assert.deepEqual(resolveDecision({ action: "DELETE", target: 0 }, cand, neighbours).resolved, {
    action: "DELETE",
    targetId: "id-a",
    content: cand.content,
  });
  assert.equal(resolveDecision({ action: "DELETE", target: 5 }, cand, neighbours).override, "unknown_target");
  assert.equal(resolveDecision({ action: "UPDATE", target: -1 }, cand, neighbours).resolved.action, "ADD");
  assert.equal(resolveDecision({ action: "UPDATE" }, cand, neighbours).override, "missing_target");
  assert.equal(resolveDecision({ action: "NOOP", target: 9 }, cand, neighbours).override, "unknown_target");
  assert.equal(resolveDecision({ action: "DELETE", target: 1 }, cand, neighbours).override, "protected_target");
  assert.equal(resolveDecision({ action: "UPDATE", target: 1, content: "x" }, cand, neighbours).resolved.action, "ADD");
  // Merged text that breaks the writing rules falls back to the candidate's own words.
  assert.deepEqual(
    resolveDecision({ action: "UPDATE", target: 0, content: "I merged it." }, cand, neighbours).resolved,
    { action: "UPDATE", targetId: "id-a", content: cand.content },
  );
  // User-stated candidates: always stored, never rewritten.
  const stated = c("The user wants tabs.", { source: "user_stated", priority: "highest" });
  assert.equal(resolveDecision({ action: "NOOP", target: 0 }, stated, neighbours).resolved.action, "ADD");
  assert.deepEqual(
    resolveDecision({ action: "UPDATE", target: 0, content: "Something else." }, stated, neighbours).resolved,
    { action: "UPDATE", targetId: "id-a", content: "The user wants tabs." },
  );
  assert.deepEqual(decideWithoutLlm(cand, [{ ...neighbours[0]!, similarity: 0.96 }]), {
    action: "NOOP",
    targetId: "id-a",
  });
  assert.equal(decideWithoutLlm(cand, neighbours).action, "ADD");
});

Deno.test("memory-worker endpoint: service_role only", async () => {
  const config = testConfig();
  // deno-lint-ignore no-explicit-any
  const handler = createWorkerHandler({ sql: undefined as any, config, embedder: undefined as any });
  const url = "http://localhost/functions/v1/memory-worker";
  const user = await handler(
    new Request(url, { method: "POST", headers: { authorization: `Bearer ${await userToken(crypto.randomUUID())}` } }),
  );
  assert.equal(user.status, 403);
  const none = await handler(new Request(url, { method: "POST" }));
  assert.equal(none.status, 401);
  // What pg_net sends (memory_private.kick_memory_worker): JSON, checked like every route's body.
  const post = async (body: string) =>
    await handler(
      new Request(url, {
        method: "POST",
        headers: { authorization: `Bearer ${await serviceToken()}`, "content-type": "application/json" },
        body,
      }),
    );
  const codeOf = async (res: Response) => [res.status, (await res.json()).error.code];
  assert.deepEqual(await codeOf(await post('{"max_jobs": 0}')), [400, "invalid_request"]);
  assert.deepEqual(await codeOf(await post("max_jobs=5")), [400, "malformed_json"]);
  // MAX_BODY_BYTES holds here too: a longer body is refused, not read whole.
  const long = `{"max_jobs": 0${" ".repeat(config.maxBodyBytes)}}`;
  assert.deepEqual(await codeOf(await post(long)), [413, "payload_too_large"]);
});
