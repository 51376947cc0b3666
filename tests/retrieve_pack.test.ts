// Pure logic of memory-retrieve: ranking, exact budget packing, grouping, truncation line, delta.
import assert from "node:assert/strict";
import { countTokens } from "../supabase/functions/_shared/tokens.ts";
import {
  deltaHeaderLine,
  formatDeltaBullets,
  MAX_DELTA_BULLETS,
} from "../supabase/functions/_shared/retrieval/delta.ts";
import {
  type FormatMemory,
  renderBlock,
  sectionOf,
  truncationLine,
} from "../supabase/functions/_shared/retrieval/format.ts";
import { packIntoBudget, packTexts } from "../supabase/functions/_shared/retrieval/pack.ts";
import { rankMemories, scoreMemory } from "../supabase/functions/_shared/retrieval/rank.ts";

const ctx = { root: "devai", project: "taskforge" };

function mem(i: number, over: Partial<FormatMemory & { relevance: number; strength: number; priority: string }> = {}) {
  return {
    id: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
    content: `memory number ${i}: the task-api uses JWT auth and tfapi_ keys for project access ${"x".repeat(i % 7)}`,
    memory_type: "semantic",
    namespace: "devai/project/taskforge/arch",
    source: null as string | null,
    relevance: 0.9,
    strength: 1,
    priority: "medium",
    ...over,
  };
}

Deno.test("rank: relevance × strength dominates, boosts only break near-ties", () => {
  const ranked = rankMemories([
    mem(1, { relevance: 0.95, strength: 0.5 }), // 0.475
    mem(2, { relevance: 0.8, strength: 1 }), // 0.8
    mem(3, { relevance: 0.9, strength: 0.9 }), // 0.81
    { ...mem(4, { relevance: 0.79, strength: 1, priority: "highest" }) }, // 0.79 + 0.05 = 0.84
    { ...mem(5, { relevance: 0.6, strength: 1, priority: "highest" }), pinned: true, max_relation_strength: 1 }, // 0.72
  ]);
  assert.deepEqual(ranked.map((m) => m.id.slice(-1)), ["4", "3", "2", "5", "1"]);
  // A weak match never overtakes a clearly better one, whatever its boosts.
  const weak = scoreMemory({
    id: "a",
    relevance: 0.7,
    strength: 1,
    priority: "highest",
    pinned: true,
    max_relation_strength: 1,
  });
  const strong = scoreMemory({ id: "b", relevance: 0.9, strength: 1, priority: "low" });
  assert.ok(strong > weak);
});

Deno.test("rank: relation boost orders otherwise equal memories", () => {
  const ranked = rankMemories([mem(1), { ...mem(2), max_relation_strength: 0.9 }]);
  assert.equal(ranked[0]!.id, mem(2).id);
});

Deno.test("format: sections by type/source/scope, seed order, rank order inside", () => {
  assert.equal(sectionOf(mem(1, { memory_type: "procedural" }), ctx), "patterns");
  assert.equal(sectionOf(mem(1, { source: "pattern" }), ctx), "patterns");
  assert.equal(sectionOf(mem(1, { source: "error_resolution" }), ctx), "fixes");
  assert.equal(sectionOf(mem(1, { memory_type: "episodic" }), ctx), "fixes");
  assert.equal(sectionOf(mem(1), ctx), "project");
  assert.equal(sectionOf(mem(1, { namespace: "devai/user/preferences" }), ctx), "user");
  assert.equal(sectionOf(mem(1, { namespace: "devai/global/tools" }), ctx), "general");
  // Not the project of the request (prefix lookalike): never "Project Knowledge".
  assert.equal(sectionOf(mem(1, { namespace: "devai/project/taskforge2/arch" }), ctx), "general");

  const block = renderBlock({
    memories: [
      mem(1, { content: "fix: 503 means broken import", source: "error_resolution" }),
      mem(2, { content: "task-api uses JWT auth" }),
      mem(3, { content: "activate deployment via REST", memory_type: "procedural" }),
      mem(4, { content: "InputFile from node-appwrite/file" }),
    ],
    truncated: 0,
  }, { root: "devai", project: "TaskForge".toLowerCase() });
  assert.equal(
    block,
    [
      "## Relevant Memories",
      "",
      "### Project Knowledge (taskforge)",
      "- task-api uses JWT auth",
      "- InputFile from node-appwrite/file",
      "",
      "### Patterns",
      "- activate deployment via REST",
      "",
      "### Past Fixes",
      "- fix: 503 means broken import",
    ].join("\n"),
  );
});

Deno.test("pack: the final block never exceeds the budget, for every budget from 1 to the full size", () => {
  const ranked = rankMemories(Array.from({ length: 30 }, (_, i) =>
    mem(i + 1, {
      relevance: 0.99 - i * 0.01,
      memory_type: i % 5 === 0 ? "procedural" : i % 7 === 0 ? "episodic" : "semantic",
      namespace: i % 3 === 0
        ? "devai/user/preferences"
        : i % 4 === 0
        ? "devai/global/tools"
        : "devai/project/taskforge/arch",
      content: `fact ${i}: ${"the quick brown fox jumps. ".repeat(1 + (i % 6))}\nsecond line ${i}`,
    })));
  const full = packIntoBudget({ ranked, budgetTokens: 32_000 }, ctx);
  assert.equal(full.truncatedCount, 0);
  assert.equal(full.injected.length, 30);
  let previousInjected = 0;
  for (let budget = 1; budget <= full.tokenCount + 5; budget += budget < 60 ? 1 : 7) {
    const p = packIntoBudget({
      ranked,
      budgetTokens: budget,
      deltaHeader: deltaHeaderLine(3),
      deltaBullets: ["- +created: [Tasks] ship v1 (imp=4)", "- ↑updated: [Goals] ship by Sep"],
      related: [{ id: "r1", anchor_id: ranked[0]!.id, content: "a related fact" }],
    }, ctx);
    assert.ok(p.tokenCount <= budget, `budget ${budget}: ${p.tokenCount} tokens`);
    assert.equal(p.tokenCount, countTokens(p.block), "token_count is the exact count of the block");
    assert.equal(p.truncatedCount, 30 - p.injected.length);
    if (p.truncatedCount > 0 && p.block !== "") {
      assert.ok(
        p.block.endsWith(truncationLine(p.truncatedCount)),
        `budget ${budget}: truncation line with N=${p.truncatedCount}`,
      );
    } else {
      assert.ok(!p.block.includes("[truncated"));
    }
    // Every injected memory is in the block, one line each (the best one possibly shortened).
    for (const m of p.injected) {
      const line = `- ${m.content.replace(/\s*\n\s*/g, " ")}`;
      if (p.shortened.includes(m.id)) {
        const shown = p.block.split("\n").find((l) => l.startsWith("- ") && l.endsWith("…"));
        assert.ok(shown && line.startsWith(shown.slice(0, -1)), `budget ${budget}: ${shown} is a start of ${line}`);
      } else assert.ok(p.block.includes(line));
    }
    // The best memory leads whenever anything is injected.
    if (p.injected.length > 0) {
      assert.equal(p.injected[0]!.id, ranked[0]!.id, `budget ${budget}: the best memory is kept`);
    }
    assert.ok(p.injected.length >= previousInjected - 1, "bigger budgets do not lose memories");
    previousInjected = Math.max(previousInjected, p.injected.length);
  }
});

Deno.test("pack: tiny budgets give an empty block, never an over-budget one", () => {
  const ranked = rankMemories([mem(1), mem(2)]);
  for (const budget of [1, 2, 3, 4, 5]) {
    const p = packIntoBudget({ ranked, budgetTokens: budget }, ctx);
    assert.ok(p.tokenCount <= budget);
    assert.equal(p.injected.length, 0);
    assert.equal(p.truncatedCount, 2);
  }
});

Deno.test("pack: a memory that does not fit is skipped, later shorter ones still go in", () => {
  const ranked = [
    mem(1, { content: "short one" }),
    mem(2, { content: "very long ".repeat(300) }),
    mem(3, { content: "short two" }),
  ];
  const p = packIntoBudget({ ranked, budgetTokens: 60 }, ctx);
  assert.deepEqual(p.injected.map((m) => m.content), ["short one", "short two"]);
  assert.equal(p.truncatedCount, 1);
  assert.ok(p.block.endsWith("[truncated - 1 more memories available]"));
});

Deno.test("pack: the best memory is never left out for lower ones: it is shortened at a word boundary (…) to fit", () => {
  const best = mem(1, {
    content:
      "The billing service deploys through the blue-green pipeline every Friday afternoon after the full regression suite has passed on staging",
  });
  const ranked = [
    best,
    mem(2, { content: "short lower hit" }),
    mem(3, { content: "another short one" }),
    mem(4, { content: "and a third" }),
    mem(5, { content: "and a fourth" }),
  ];
  for (const budget of [30, 40]) {
    const p = packIntoBudget({ ranked, budgetTokens: budget }, ctx);
    assert.ok(p.tokenCount <= budget && p.tokenCount === countTokens(p.block), `budget ${budget}: ${p.tokenCount}`);
    assert.deepEqual(p.injected.map((m) => m.id), [best.id], `budget ${budget}: only the best one, not the lower hits`);
    assert.deepEqual(p.shortened, [best.id]);
    const line = p.block.split("\n").find((l) => l.startsWith("- "))!;
    assert.match(line, /^- The billing service deploys\b.*[a-z]…$/, line);
    assert.ok(best.content.startsWith(line.slice(2, -1)), "a prefix of the memory, cut between words");
    assert.ok(p.block.endsWith(truncationLine(4)));
  }
  // With room for it whole, it is not shortened.
  const roomy = packIntoBudget({ ranked, budgetTokens: 500 }, ctx);
  assert.deepEqual(roomy.shortened, []);
  assert.equal(roomy.injected.length, 5);
});

Deno.test("packTexts: with shortenFirst, memory.query's best bullet is shortened rather than dropped", () => {
  const items = [
    "[testing] integration tests need the staging database and a seeded tenant with three projects",
    "[testing] short",
  ];
  const p = packTexts(items, (s) => s, 12, { shortenFirst: true });
  assert.equal(p.kept[0], items[0]);
  assert.ok(p.texts[0]!.endsWith("…") && items[0]!.startsWith(p.texts[0]!.slice(0, -1)), p.texts[0]);
  assert.ok(p.tokenCount <= 12);
  assert.deepEqual(
    packTexts(items, (s) => s, 12).kept,
    [items[1]],
    "without it the best is skipped (full rows are never cut)",
  );
});

Deno.test("pack: delta header first, then memories; related bullets only under injected anchors", () => {
  const ranked = [mem(1, { content: "anchor fact" }), mem(2, { content: "second fact" })];
  const p = packIntoBudget({
    ranked,
    budgetTokens: 500,
    deltaHeader: deltaHeaderLine(7),
    deltaBullets: ["- +created: [Tasks] ship v1 (imp=4)"],
    related: [
      { id: "x", anchor_id: ranked[0]!.id, content: "linked fact one" },
      { id: "y", anchor_id: "not-injected", content: "orphan" },
      { id: "z", anchor_id: ranked[1]!.id, content: "linked fact two" },
      { id: "w", anchor_id: ranked[1]!.id, content: "linked fact three (over the 2 limit)" },
    ],
  }, ctx);
  assert.equal(
    p.block,
    [
      "## Relevant Memories",
      "",
      "Memory updates since rev 7:",
      "- +created: [Tasks] ship v1 (imp=4)",
      "",
      "### Project Knowledge (taskforge)",
      "- anchor fact",
      "  - related: linked fact one",
      "- second fact",
      "  - related: linked fact two",
    ].join("\n"),
  );
});

Deno.test("packTexts: joined texts fit exactly, order kept", () => {
  const items = Array.from({ length: 20 }, (_, i) => `[tasks] item ${i} ${"word ".repeat(i)}`);
  for (let budget = 1; budget < 300; budget += 3) {
    const p = packTexts(items, (s) => s, budget);
    assert.ok(p.tokenCount <= budget);
    assert.equal(p.tokenCount, countTokens(p.kept.join("\n")));
    assert.equal(p.truncatedCount, items.length - p.kept.length);
  }
});

Deno.test("delta: at most 3 bullets in the seed's format", () => {
  const bullets = formatDeltaBullets([
    { revision: 9, event: "created", summary: "Preferred name is Ana", meta: { category: "personal", importance: 2 } },
    { revision: 8, event: "updated", summary: "Ship v1 by Sep", meta: { category: "goals" } },
    {
      revision: 7,
      event: "merged",
      summary: "Combined 2 notes about lactose intolerance",
      meta: { memory_type: "semantic" },
    },
    { revision: 6, event: "soft_deleted", summary: "old", meta: null },
  ]);
  assert.equal(bullets.length, MAX_DELTA_BULLETS);
  assert.deepEqual(bullets, [
    "- +created: [Personal] Preferred name is Ana (imp=2)",
    "- ↑updated: [Goals] Ship v1 by Sep",
    "- ↔merged: [Semantic] Combined 2 notes about lactose intolerance",
  ]);
  assert.equal(deltaHeaderLine(4), "Memory updates since rev 4:");
});

Deno.test("pack: a budget with room for the heading and the truncation line, not for the best memory's first words, gives an empty block", () => {
  const ranked = rankMemories(
    [1, 2, 3].map((i) =>
      mem(i, { relevance: 1 - i / 10, content: `${"Interdisciplinary ".repeat(3)}considerations ${i}` })
    ),
  );
  let empties = 0;
  for (let budget = 1; budget <= 200; budget++) {
    const p = packIntoBudget({ ranked, budgetTokens: budget }, ctx);
    if (p.injected.length > 0) break;
    // Nothing injected: no heading over "[truncated - 3 more memories available]" either.
    assert.equal(p.block, "", `budget ${budget}`);
    assert.equal(p.truncatedCount, 3);
    empties++;
  }
  assert.ok(empties > 0 && empties < 200, "some budgets fit nothing, a larger one fits the best memory");
});
