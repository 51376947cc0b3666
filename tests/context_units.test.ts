// Living context's pure parts: the offline compressor and stored forms, tier shares and budgets,
// packing into tiers (exact budgets, pathological memories, compression choice, flow of unused
// budget, determinism), code lineage verdicts and stale citations, tier selection, and the usage
// factor of ranking. docs/context.md.
import assert from "node:assert/strict";
import {
  contentDigest,
  formsOf,
  offlineForms,
  offlineIndexKey,
  storedCompression,
} from "../supabase/functions/_shared/context/compress.ts";
import { judgeLineage, sameRepo, staleCitation } from "../supabase/functions/_shared/context/lineage.ts";
import { packTiers, type TierCandidate } from "../supabase/functions/_shared/context/pack-tiers.ts";
import { CONTEXT_HEADING } from "../supabase/functions/_shared/context/render.ts";
import { AssembleRequest } from "../supabase/functions/_shared/context/schemas.ts";
import { selectTiers } from "../supabase/functions/_shared/context/select.ts";
import type { CandidateRef, MemoryDetails } from "../supabase/functions/_shared/context/gather.ts";
import {
  ACTIVITY_SHARES,
  DEFAULT_SHARES,
  sharesFor,
  tierBudgets,
  TIERS,
} from "../supabase/functions/_shared/context/tiers.ts";
import {
  INSIGHT_WEIGHT,
  rankMemories,
  scoreMemory,
  usageFactor,
} from "../supabase/functions/_shared/retrieval/rank.ts";
import { countTokens } from "../supabase/functions/_shared/tokens.ts";

const candidate = (id: string, content: string, extra: Partial<TierCandidate> = {}): TierCandidate => ({
  id,
  content,
  forms: { ...offlineForms(content), by: "rules" },
  ...extra,
});

const LONG = "The checkout service validates every cart line against the inventory service before it reserves stock, " +
  "and a reservation that is not confirmed within fifteen minutes is released by the sweeper job. ";

Deno.test("compression: the offline forms are deterministic, shorter level by level, and keyed in snake_case", () => {
  const text =
    "The team decided to use PostgreSQL as the primary database because of its strong support for JSON operations. " +
    "MySQL was considered and rejected.";
  const a = offlineForms(text), b = offlineForms(text);
  assert.deepEqual(a, b);
  assert.equal(
    a.summary,
    "The team decided to use PostgreSQL as the primary database because of its strong support for JSON operations.",
  );
  assert.ok(a.compressed.startsWith("PostgreSQL: "), a.compressed);
  assert.ok(countTokens(a.compressed) < countTokens(a.summary) && countTokens(a.summary) < countTokens(text));
  assert.match(a.index, /^[a-z0-9_]+$/);
  assert.equal(
    offlineForms("Replaced JWT with sessions due to token size issues").compressed,
    "JWT→sessions: token size",
  );
  assert.equal(offlineIndexKey("In src/auth/login.ts never decode the JWT on the client."), "login_jwt");
  // A memory of 30+ words in one sentence is summarised to 30 words.
  const words = Array.from({ length: 50 }, (_, i) => `word${i}`).join(" ");
  assert.equal(offlineForms(words).summary.split(" ").length, 30);
});

Deno.test("compression: a model's forms are used for the content they were made from, offline ones otherwise", () => {
  const content = "Auth moved from JWT to server-side sessions because the tokens grew past the cookie size limit.";
  const stored = storedCompression(content, {
    summary: "Replaced JWT with sessions (token size)",
    compressed: "auth: JWT→sessions (size)",
    index_key: "auth_refactor",
  });
  assert.deepEqual(stored, {
    summary: "Replaced JWT with sessions (token size)",
    compressed: "auth: JWT→sessions (size)",
    index: "auth_refactor",
    by: "llm",
    for: contentDigest(content),
  });
  const forms = formsOf(content, { compression: stored });
  assert.equal(forms.by, "llm");
  assert.equal(forms.compressed, "auth: JWT→sessions (size)");
  // Edited in place (Studio) since: the stored forms describe other words.
  assert.equal(formsOf(`${content} Sessions live in Redis.`, { compression: stored }).by, "rules");
  // Only some forms from the model: the rest offline.
  const partial = formsOf(content, { compression: storedCompression(content, { index_key: "auth_refactor" }) });
  assert.equal(partial.by, "mixed");
  assert.equal(partial.index, "auth_refactor");
  assert.equal(partial.compressed, offlineForms(content).compressed);
  assert.equal(storedCompression(content, {}), undefined);
  // A model's forms are stored text: the characters stored text may not hold are removed.
  assert.equal(
    storedCompression(content, { summary: "Sessions \u202Ereplaced\u202C JWT" })?.summary,
    "Sessions replaced JWT",
  );
  assert.equal(storedCompression(content, { index_key: "\u200B" }), undefined);
});

Deno.test("tiers: shares sum to one; debugging widens critical to 3,000 of 8,000 and narrows background to 1,500", () => {
  for (const shares of [DEFAULT_SHARES, ...Object.values(ACTIVITY_SHARES)]) {
    assert.ok(Math.abs(TIERS.reduce((s, t) => s + shares[t], 0) - 1) < 1e-9);
  }
  assert.deepEqual(tierBudgets(8000, sharesFor()), { critical: 2000, relevant: 3000, background: 2000, index: 1000 });
  assert.deepEqual(tierBudgets(8000, sharesFor("debugging")), {
    critical: 3000,
    relevant: 2500,
    background: 1500,
    index: 1000,
  });
  for (const n of [200, 201, 333, 7999, 32000]) {
    const b = tierBudgets(n, sharesFor("review"));
    assert.equal(TIERS.reduce((s, t) => s + b[t], 0), n);
  }
});

Deno.test("packing: token_count is exact and within budget for every budget, even with memories longer than a tier", () => {
  const giant = LONG.repeat(30).trim(); // ~1,000 tokens, one memory
  const pool = [
    candidate("c1", giant, { tag: "decision" }),
    candidate("c2", "src/auth/login.ts: sessions live server-side in Redis; never decode the JWT in the client.", {
      tag: "file",
    }),
    ...Array.from(
      { length: 40 },
      (_, i) => candidate(`r${i}`, `${LONG}Variant ${i} mentions order-${i} and the queue order_events_${i}.`),
    ),
  ];
  for (const budget of [200, 250, 500, 1000, 2000, 8000, 32000]) {
    for (const activity of [undefined, "debugging", "docs"] as const) {
      const packed = packTiers({
        budget,
        shares: sharesFor(activity),
        critical: pool.slice(0, 2),
        relevant: pool.slice(2, 30),
        background: pool.slice(30),
        stale: [{
          id: "s1",
          forms: { ...offlineForms("old note"), by: "rules" },
          stale: { file: "src/old.ts", reason: "deleted" },
        }],
      });
      assert.ok(packed.tokenCount <= budget, `budget ${budget}: ${packed.tokenCount}`);
      assert.equal(packed.tokenCount, countTokens(packed.text));
      assert.ok(packed.text.startsWith(CONTEXT_HEADING));
      for (const t of TIERS) {
        const section = packed.text.split("\n\n").find((s) =>
          s.startsWith(`### ${t[0]!.toUpperCase()}${t.slice(1)}`)
        ) ?? "";
        assert.equal(packed.tiers[t].token_count, countTokens(section), `${t} at ${budget}`);
      }
      // The giant memory never takes more than its tier: compressed, summarised or shortened.
      const c1 = packed.placed.find((p) => p.id === "c1");
      if (c1) {
        assert.ok(c1.tokens <= packed.tiers[c1.tier].budget, `c1 in ${c1.tier} at ${budget}: ${c1.tokens} tokens`);
      }
      if (budget >= 8000) assert.ok(c1, `the giant memory is placed, in some form, at ${budget}`);
    }
  }
});

Deno.test("packing: unused budget flows to the next tier; levels drop under pressure and rise with room", () => {
  const relevant = Array.from(
    { length: 24 },
    (_, i) => candidate(`r${i}`, `The shipment_${i} table belongs to the fulfilment service. ${LONG}`),
  );
  // Nothing critical: relevant gets critical's share too.
  const roomy = packTiers({ budget: 8000, shares: DEFAULT_SHARES, critical: [], relevant, background: [], stale: [] });
  const available = 8000 - countTokens(CONTEXT_HEADING);
  assert.equal(
    roomy.tiers.relevant.budget,
    tierBudgets(available, DEFAULT_SHARES).relevant + tierBudgets(available, DEFAULT_SHARES).critical,
  );
  // With room, every relevant memory is upgraded from its summary to the full text.
  const roomyLevels = roomy.placed.filter((p) => p.tier === "relevant").map((p) => p.level);
  assert.ok(roomyLevels.length > 0, "relevant memories are placed");
  assert.deepEqual(roomyLevels, roomyLevels.map(() => "full"));
  // Under pressure: summaries first, then compressed forms, so more memories fit than in full.
  const tight = packTiers({ budget: 500, shares: DEFAULT_SHARES, critical: [], relevant, background: [], stale: [] });
  const levels = tight.placed.filter((p) => p.tier === "relevant").map((p) => p.level);
  assert.ok(levels.includes("summary") && levels.includes("compressed"), levels.join(","));
  const fullCost = countTokens(`- ${relevant[0]!.content.trim()}`);
  assert.ok(
    levels.length > Math.floor(tight.tiers.relevant.budget / fullCost),
    `${levels.length} memories in ${tight.tiers.relevant.budget} tokens`,
  );
  // What fits nowhere is an index pointer.
  assert.ok(tight.placed.some((p) => p.tier === "index"));
  assert.ok(tight.text.includes("Ask me about: "));
  // Background starts compressed and never goes beyond its summary.
  const bg = packTiers({
    budget: 8000,
    shares: DEFAULT_SHARES,
    critical: [],
    relevant: [],
    background: relevant.slice(0, 3),
    stale: [],
  });
  assert.deepEqual(bg.placed.filter((p) => p.tier === "background").map((p) => p.level), [
    "summary",
    "summary",
    "summary",
  ]);
});

Deno.test("packing: the same input renders the same text; a contradiction is one bullet with both sides", () => {
  const pair = candidate("a", "Deploys go out on Fridays.", {
    tag: "unresolved",
    pair: {
      id: "b",
      content: "Deploys are frozen on Fridays.",
      forms: { ...offlineForms("Deploys are frozen on Fridays."), by: "rules" },
    },
  });
  const input = {
    budget: 1000,
    shares: DEFAULT_SHARES,
    critical: [pair],
    relevant: [candidate("r", "Releases use blue-green slots.")],
    background: [],
    stale: [],
  };
  const one = packTiers(input), two = packTiers(input);
  assert.equal(one.text, two.text);
  assert.ok(one.text.includes("- [unresolved] Deploys go out on Fridays. ⟷ Deploys are frozen on Fridays."), one.text);
  assert.deepEqual(one.placed.filter((p) => p.tier === "critical").map((p) => p.id), ["a", "b"]);
  assert.equal(one.tiers.critical.memories, 2);
});

Deno.test("packing: a memory whose bullet repeats words already shown gets no index pointer to them", () => {
  const packed = packTiers({
    budget: 1000,
    shares: DEFAULT_SHARES,
    critical: [],
    relevant: [candidate("a", "Installs use pnpm, never npm."), candidate("b", "Installs use pnpm, never npm.")],
    background: [candidate("c", "Releases use blue-green slots.")],
    stale: [],
  });
  assert.equal(packed.text.split("Installs use pnpm").length - 1, 1, packed.text);
  assert.deepEqual(packed.placed.map((p) => [p.id, p.tier]), [["a", "relevant"], ["c", "background"]]);
});

Deno.test("lineage: a branch's notes are facts on that branch, on the default branch, or once merged", () => {
  const note = { branch: "feat/sessions", commit: "abc1234def" };
  assert.equal(judgeLineage({}, {}), "project");
  assert.equal(judgeLineage({ branch: "main" }, { branch: "feat/x" }), "project");
  assert.equal(judgeLineage(note, {}), "unmerged"); // no branch given: the default branch
  assert.equal(judgeLineage(note, { branch: "main" }), "unmerged");
  assert.equal(judgeLineage(note, { branch: "feat/sessions" }), "current_branch");
  assert.equal(judgeLineage(note, { branch: "main", merged_branches: ["feat/sessions"] }), "merged");
  assert.equal(judgeLineage(note, { branch: "main", ancestor_commits: ["abc1234def0000"] }), "merged");
  assert.equal(judgeLineage(note, { branch: "main", ancestor_commits: ["abc12"] }), "unmerged"); // too short to match
  assert.equal(judgeLineage({ branch: "trunk" }, { default_branch: "trunk" }), "project");
  assert.equal(judgeLineage({ branch: "main" }, { default_branch: "trunk" }), "unmerged");
  // Another repository's branch names say nothing here.
  assert.equal(
    judgeLineage({ repo: "acme/api", branch: "feat/sessions" }, { repo: "acme/web", branch: "feat/sessions" }),
    "unmerged",
  );
  assert.equal(
    judgeLineage({ repo: "https://github.com/Acme/Web.git", branch: "feat/sessions" }, {
      repo: "acme/web",
      branch: "feat/sessions",
    }),
    "current_branch",
  );
  assert.ok(sameRepo("git@github.com:acme/web.git", "github.com/acme/web"));
});

Deno.test("lineage: a memory citing a deleted or renamed file is stale", () => {
  assert.equal(staleCitation(["src/a.ts"], {}), undefined);
  assert.deepEqual(staleCitation(["src/a.ts", "./src/old.ts"], { deleted_files: ["src/old.ts"] }), {
    file: "src/old.ts",
    reason: "deleted",
  });
  assert.deepEqual(staleCitation(["src/a.ts"], { renamed_files: [{ from: "src/a.ts", to: "src/b.ts" }] }), {
    file: "src/a.ts",
    reason: "renamed",
    to: "src/b.ts",
  });
});

Deno.test("selection: critical takes contradictions, the current file's decisions and the error's fixes; lineage and staleness leave memories out", () => {
  const memory = (id: string, content: string, extra: Partial<MemoryDetails> = {}): MemoryDetails => ({
    id,
    content,
    memory_type: "semantic",
    namespace: "devai/project/p/notes",
    strength: 1,
    priority: "medium",
    importance: 3,
    pinned: false,
    source: null,
    metadata: {},
    created_at: new Date(0),
    category: null,
    max_relation_strength: null,
    cited_files: [],
    retrieval_count: 0,
    citation_count: 0,
    ignore_count: 0,
    ...extra,
  });
  const details = new Map([
    [
      "d1",
      memory("d1", "login.ts keeps sessions server-side.", { category: "decisions", cited_files: ["src/login.ts"] }),
    ],
    ["f1", memory("f1", "login.ts was split out of app.ts.", { cited_files: ["src/login.ts"] })],
    ["e1", memory("e1", "TS2345 in login.ts: pass the session, not its id.", { category: "errors_and_fixes" })],
    ["w1", memory("w1", "WIP on another branch: try refresh tokens.", { metadata: { branch: "feat/refresh" } })],
    ["s1", memory("s1", "old.ts handles logout.", { cited_files: ["src/old.ts"] })],
    ["b1", memory("b1", "Errors are Result values.", { category: "conventions" })],
    ["x1", memory("x1", "The login page uses the design system.")],
  ]);
  const refs: CandidateRef[] = [
    { id: "d1", kind: "file", weight: 1, detail: "src/login.ts" },
    { id: "f1", kind: "file", weight: 1, detail: "src/login.ts" },
    { id: "e1", kind: "error", weight: 0.4, coverage: 0.3 },
    { id: "w1", kind: "search", weight: 0.9 },
    { id: "s1", kind: "search", weight: 0.8 },
    { id: "b1", kind: "background", weight: 0.6 },
    { id: "x1", kind: "search", weight: 0.5 },
  ];
  const sel = selectTiers({
    refs,
    details,
    signals: { current_file: "src/login.ts", deleted_files: ["src/old.ts"] },
    activity: "debugging",
  });
  assert.deepEqual(sel.critical.map((c) => [c.id, c.tag]), [["d1", "decision"], ["e1", "fix"], ["f1", "file"]]);
  assert.deepEqual(sel.relevant.map((c) => c.id), ["x1"]);
  assert.deepEqual(sel.background.map((c) => c.id), ["b1"]);
  assert.deepEqual(sel.excluded.map((e) => [e.id, e.reason]).sort(), [["s1", "stale_file"], ["w1", "unmerged_branch"]]);
  assert.deepEqual(sel.stale.map((s) => s.id), ["s1"]);
});

Deno.test("selection: an insight counts at INSIGHT_WEIGHT of its relevance in assembly, as in retrieval", () => {
  const memory = (id: string, memory_type: string): MemoryDetails => ({
    id,
    content: `${id}: the user reviews migrations before merging.`,
    memory_type,
    namespace: "devai/user/notes",
    strength: 1,
    priority: "medium",
    importance: 3,
    pinned: false,
    source: null,
    metadata: {},
    created_at: new Date(0),
    category: null,
    max_relation_strength: null,
    cited_files: [],
    retrieval_count: 0,
    citation_count: 0,
    ignore_count: 0,
  });
  const details = new Map([["i1", memory("i1", "insight")], ["s1", memory("s1", "semantic")]]);
  const refs: CandidateRef[] = [{ id: "i1", kind: "search", weight: 0.9 }, { id: "s1", kind: "search", weight: 0.6 }];
  const sel = selectTiers({ refs, details, signals: {} });
  assert.deepEqual(sel.relevant.map((c) => c.id), ["s1", "i1"], "0.9 x 0.5 ranks below 0.6");
  const insight = sel.scored.get("i1")!;
  const asFact = {
    id: "i1",
    relevance: 0.9,
    strength: 1,
    priority: "medium",
    pinned: false,
    max_relation_strength: null,
  };
  assert.equal(insight.score, scoreMemory(asFact) - 0.9 * (1 - INSIGHT_WEIGHT));
});

Deno.test("ranking: memories injected often and never cited sink, cited ones rise (usage factor)", () => {
  assert.equal(usageFactor(undefined), 1);
  assert.equal(usageFactor({ citation_count: 0, ignore_count: 0 }), 1);
  assert.ok(Math.abs(usageFactor({ citation_count: 0, ignore_count: 10 }) - (1 - 0.5 * 10 / 13)) < 1e-12);
  assert.ok(Math.abs(usageFactor({ citation_count: 5, ignore_count: 0 }) - (1 + 0.25 * 5 / 8)) < 1e-12);
  const base = { relevance: 0.8, strength: 1, priority: "medium" };
  const ranked = rankMemories([
    { id: "a", ...base, usage: { citation_count: 0, ignore_count: 8 } },
    { id: "b", ...base },
    { id: "c", ...base, usage: { citation_count: 4, ignore_count: 1 } },
  ]);
  assert.deepEqual(ranked.map((m) => m.id), ["c", "b", "a"]);
});

Deno.test("request: budgets 200-32,000, known activities and well-shaped signals; the 400 names the field", () => {
  const issues = (body: unknown) => {
    const r = AssembleRequest.safeParse(body);
    return r.success ? [] : r.error.issues.map((i) => i.path.join("."));
  };
  assert.deepEqual(issues({}), []);
  assert.equal(AssembleRequest.parse({}).budget, 8000);
  assert.deepEqual(issues({ budget: 200 }), []);
  assert.deepEqual(issues({ budget: 32000 }), []);
  assert.deepEqual(issues({ budget: 199 }), ["budget"]);
  assert.deepEqual(issues({ budget: 32001 }), ["budget"]);
  assert.deepEqual(issues({ signals: { activity: "napping" } }), ["signals.activity"]);
  assert.deepEqual(issues({ signals: { open_files: "src/a.ts" } }), ["signals.open_files"]);
  assert.deepEqual(issues({ signals: { branch: "bad..name" } }), ["signals.branch"]);
  assert.deepEqual(issues({ signals: { renamed_files: [{ from: "a.ts" }] } }), ["signals.renamed_files.0.to"]);
  assert.deepEqual(issues({ signals: { cursor: 3 } }), ["signals"]);
  assert.equal(AssembleRequest.parse({ signals: { current_file: "./src/a.ts" } }).signals?.current_file, "src/a.ts");
});

Deno.test("ranking: an exact tie goes to the newer memory, whatever the ids (the same memories rank alike in any database)", () => {
  const alike = { relevance: 0.5, strength: 0.8, priority: "medium" };
  const older = { ...alike, id: "00000000-0000-4000-8000-000000000001", created_at: new Date("2026-11-01T00:00:00Z") };
  const newer = { ...alike, id: "ffffffff-0000-4000-8000-000000000001", created_at: new Date("2026-11-02T00:00:00Z") };
  assert.deepEqual(rankMemories([older, newer]).map((m) => m.id), [newer.id, older.id]);
  assert.deepEqual(rankMemories([newer, older]).map((m) => m.id), [newer.id, older.id]);
  // Without a time, the id decides, as before.
  assert.deepEqual(
    rankMemories([{ ...alike, id: "b" }, { ...alike, id: "a" }]).map((m) => m.id),
    ["a", "b"],
  );
});
