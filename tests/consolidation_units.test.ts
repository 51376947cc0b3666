// The pure parts of the background intelligence: the model-free pair checks (pair-prefilter.ts),
// what a verdict does under the dedup guardrails (pair-judge.ts), the dry run's counting
// (consolidation-apply.ts), which facts need consent (proposals.ts), which insights may be stored
// (insights.ts) and how retrieval weighs them (rank.ts). No database.
import assert from "node:assert/strict";
import { simulatePairs } from "../supabase/functions/_shared/consolidation-apply.ts";
import { scopeBaseOf } from "../supabase/functions/_shared/consolidation-pairs.ts";
import { acceptInsights } from "../supabase/functions/_shared/insights.ts";
import { actionFor, type JudgedPair, type PairMemory } from "../supabase/functions/_shared/pair-judge.ts";
import {
  lexicalOverlap,
  nearVerbatim,
  numericStep,
  worthJudging,
} from "../supabase/functions/_shared/pair-prefilter.ts";
import { sensitiveFieldOf } from "../supabase/functions/_shared/proposals.ts";
import { INSIGHT_WEIGHT, rankMemories } from "../supabase/functions/_shared/retrieval/rank.ts";

Deno.test("prefilter: near-verbatim needs the same words in order (give or take two), numbers and negations", () => {
  assert.ok(nearVerbatim("The project uses pnpm for installs.", "The project uses pnpm for installs"));
  assert.ok(nearVerbatim("Tests run with vitest in watch mode.", "Tests are run with vitest in watch mode."));
  assert.ok(nearVerbatim("The project uses pnpm for installs.", "This project uses pnpm for package installs."));
  // Vectors of these are 0.92 apart with the offline embedder: the words say otherwise.
  assert.ok(!nearVerbatim("The user prefers tabs over spaces.", "The user prefers spaces over tabs."));
  assert.ok(!nearVerbatim("CI runs on Node 18.", "CI runs on Node 20."));
  assert.ok(!nearVerbatim("The cache is flushed on deploy.", "The cache is not flushed on deploy."));
  assert.ok(!nearVerbatim("Deploys go out on Friday.", "Deploys go out on Friday after the staging soak test passes."));
});

Deno.test("prefilter: a numeric step or lexical overlap makes a pair worth judging; unrelated words do not", () => {
  assert.ok(numericStep("CI runs on Node 18.", "CI runs on Node 20."));
  assert.ok(numericStep("The API listens on port 3000.", "The API listens on port 8080."));
  assert.ok(!numericStep("CI runs on Node 18.", "CI runs on Node 18."));
  assert.ok(
    lexicalOverlap(
      "Deploys happen on Fridays with blue-green releases.",
      "Deployments happen every Friday using blue-green releases.",
    ) >= 0.25,
  );
  assert.ok(worthJudging("The project uses pnpm for installs.", "The project uses npm for installs."));
  assert.ok(!worthJudging("The staging database runs Postgres 17.", "Code review needs two approvals before merge."));
});

const mem = (id: string, over: Partial<PairMemory> = {}): PairMemory => ({
  id,
  content: id,
  memory_type: "semantic",
  namespace: "devai/project/shop/notes",
  source: "discovery",
  priority: "medium",
  pinned: false,
  access_count: 0,
  created_at: new Date(Date.parse("2026-11-01") + Number(id.replace(/\D/g, "") || 0) * 86_400_000),
  ...over,
});
const judged = (older: PairMemory, newer: PairMemory, verdict: JudgedPair["verdict"]): JudgedPair => ({
  older,
  newer,
  score: 0.9,
  verdict,
  reason: "",
});

Deno.test("guardrails: a user-stated or pinned memory is never merged away or superseded by a verdict", () => {
  const user = mem("m1", { source: "user_stated", priority: "highest" });
  const model = mem("m2");
  // Same fact: the user's survives, whichever is older.
  assert.deepEqual(pick(actionFor(judged(model, user, "same"))), { action: "merge", keep: "m1", drop: "m2" });
  assert.deepEqual(pick(actionFor(judged(user, model, "verbatim"))), { action: "merge", keep: "m1", drop: "m2" });
  // Both the user's: nothing.
  assert.deepEqual(actionFor(judged(user, mem("m3", { source: "correction", priority: "highest" }), "same")), {
    action: "none",
    why: "protected",
  });
  // A newer model fact never supersedes an older user-stated or pinned one.
  assert.deepEqual(actionFor(judged(user, model, "refines")), { action: "none", why: "protected" });
  assert.deepEqual(actionFor(judged(mem("m4", { pinned: true }), model, "refines")), {
    action: "none",
    why: "protected",
  });
  // Otherwise: newer refines older; the same fact keeps the more retrieved, then the older.
  assert.deepEqual(pick(actionFor(judged(mem("m5"), mem("m6"), "refines"))), {
    action: "supersede",
    keep: "m6",
    drop: "m5",
  });
  assert.deepEqual(pick(actionFor(judged(mem("m5"), mem("m6", { access_count: 3 }), "same"))), {
    action: "merge",
    keep: "m6",
    drop: "m5",
  });
  assert.deepEqual(pick(actionFor(judged(mem("m5"), mem("m6"), "same"))), { action: "merge", keep: "m5", drop: "m6" });
  assert.equal(actionFor(judged(mem("m5"), mem("m6"), "contradiction")).action, "contradiction");
  assert.deepEqual(actionFor(judged(mem("m5"), mem("m6"), "different")), { action: "none", why: "different" });
});

function pick(a: ReturnType<typeof actionFor>) {
  return a.action === "merge" || a.action === "supersede" ? { action: a.action, keep: a.keep.id, drop: a.drop.id } : a;
}

Deno.test("dry run counting: a memory merged away by one pair is gone for the next", () => {
  const [a, b, c] = [mem("m1"), mem("m2"), mem("m3")];
  const counts = simulatePairs(
    [{ older: a, newer: b, score: 0.97 }],
    [
      judged(b, c, "same"),
      judged(a, c, "refines"),
      judged(b, c, "contradiction"),
      judged(mem("m7", { source: "user_stated" }), c, "refines"),
    ],
  );
  assert.deepEqual(counts, { deduped: 1, merged: 1, contradictions_found: 0, protected_kept: 1 });
});

Deno.test("consent: facts about who and where the user is need consent; other facts do not", () => {
  assert.equal(sensitiveFieldOf("The user prefers to be called Ana."), "preferred_name");
  assert.equal(sensitiveFieldOf("The user's pronouns are she/her."), "pronouns");
  assert.equal(sensitiveFieldOf("The user lives in Porto."), "city");
  assert.equal(sensitiveFieldOf("The user prefers answers in German."), "language");
  assert.equal(sensitiveFieldOf("The user works at Acme Corp as a backend engineer."), "employer");
  assert.equal(sensitiveFieldOf("Ana lives in Lisbon since 2024."), "city");
  assert.equal(sensitiveFieldOf("The API server is located in eu-west-1."), undefined);
  assert.equal(sensitiveFieldOf("The retry logic works at the HTTP layer."), undefined);
  assert.equal(sensitiveFieldOf("The user prefers pnpm over npm."), undefined);
  assert.equal(sensitiveFieldOf("The project is written in TypeScript."), undefined);
});

Deno.test("insights: third person, no pronouns for either party, at most 280 characters, no secrets, no repeats", () => {
  const { kept, rejected } = acceptInsights({
    insights: [
      { summary: "The user trusts the agent more after it admits a mistake openly.", tags: ["trust"] },
      { summary: "I think the user likes short answers.", tags: [] },
      { summary: "The user is direct; he dislikes long explanations.", tags: [] },
      { summary: "The user " + "really ".repeat(50) + "likes tests.", tags: [] },
      { summary: "The user trusts the agent more after it admits a mistake openly.", tags: [] },
    ],
  });
  assert.deepEqual(kept.map((k) => k.content), ["The user trusts the agent more after it admits a mistake openly."]);
  assert.equal(rejected, 4);
});

Deno.test("retrieval: an insight counts at half its relevance, below a fact that answers as well", () => {
  const ranked = rankMemories([
    { id: "a", relevance: 0.8, strength: 1, priority: "low", memory_type: "insight" },
    { id: "b", relevance: 0.6, strength: 1, priority: "low", memory_type: "semantic" },
  ]);
  assert.deepEqual(ranked.map((m) => m.id), ["b", "a"]);
  assert.equal(ranked[1]!.score, 0.8 * INSIGHT_WEIGHT);
});

Deno.test("scopes: a namespace's scope base is its project, the user or the global scope", () => {
  assert.equal(scopeBaseOf("devai/project/acme~web/build/ci"), "devai/project/acme~web");
  assert.equal(scopeBaseOf("devai/user/preferences"), "devai/user");
  assert.equal(scopeBaseOf("devai/global/notes"), "devai/global");
});
