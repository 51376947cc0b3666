// The retrieval dev set (eval/data/) keeps its rules: unique ids, answers that exist and that the
// question's tenant and project can see, per-category minimums, paraphrase questions with no
// content word in common with their answers, contents within the service's writing constraints,
// corrections that replace an older memory of the same scope. And the validator catches each
// kind of mistake, so a passing run means something.
import assert from "node:assert/strict";
import { type EvalDataset, identifierTokens, loadDataset, validateDataset } from "../eval/dataset.ts";
import { contentStems, sharedStems } from "../eval/content-words.ts";

const dataset = await loadDataset();

function mutated(change: (ds: EvalDataset) => void): string[] {
  const copy = structuredClone(dataset);
  change(copy);
  return validateDataset(copy);
}

const question = (ds: EvalDataset, category: string) => ds.questions.find((q) => q.category === category)!;

Deno.test("eval dataset: eval/data/ keeps every rule of the set", () => {
  assert.deepEqual(validateDataset(dataset), []);
});

Deno.test("eval dataset: the validator reports duplicate ids and answers that do not exist", () => {
  assert.ok(
    mutated((ds) => ds.memories.push({ ...ds.memories[0]!, content: "A second memory with a reused id." }))
      .some((p) => p.startsWith(`duplicate memory id ${dataset.memories[0]!.id}`)),
  );
  assert.ok(
    mutated((ds) => question(ds, "single_hop").answer_ids.push("acme-web-9999"))
      .some((p) => p.includes("answer acme-web-9999 does not exist")),
  );
});

Deno.test("eval dataset: the validator reports answers of another tenant or another project", () => {
  const other = dataset.memories.find((m) => m.tenant !== dataset.questions[0]!.tenant)!;
  assert.ok(
    mutated((ds) => ds.questions[0]!.answer_ids.push(other.id)).some((p) =>
      p.includes(`belongs to tenant ${other.tenant}`)
    ),
  );
  const q = dataset.questions.find((q) => q.category === "single_hop")!;
  const sibling = dataset.memories.find((m) =>
    m.tenant === q.tenant && !["user", "global", q.project].includes(m.scope)
  )!;
  assert.ok(
    mutated((ds) => ds.questions.find((x) => x.id === q.id)!.answer_ids.push(sibling.id))
      .some((p) => p.includes(`is not visible from project ${q.project}`)),
  );
});

Deno.test("eval dataset: the validator reports a replaced memory named as an answer", () => {
  const correction = dataset.memories.find((m) => m.replaces)!;
  assert.ok(
    mutated((ds) => question(ds, "single_hop").answer_ids.push(correction.replaces!))
      .some((p) => p.includes(`was replaced by ${correction.id}`)),
  );
});

Deno.test("eval dataset: the validator reports contents that break the writing constraints", () => {
  const problems = mutated((ds) => {
    ds.memories[0]!.content = "x".repeat(281);
    ds.memories[1]!.content = "One. Two sentences. Three sentences.";
    ds.memories[2]!.content = "We deploy on Fridays.";
  });
  assert.ok(
    problems.some((p) =>
      p.startsWith(`memory ${dataset.memories[0]!.id}: content breaks the writing constraints (too_long)`)
    ),
  );
  assert.ok(problems.some((p) => p.startsWith(`memory ${dataset.memories[1]!.id}: content would be trimmed`)));
  assert.ok(problems.some((p) => p.startsWith(`memory ${dataset.memories[2]!.id}:`) && /pronoun|third person/.test(p)));
});

Deno.test("eval dataset: the validator reports a paraphrase question that shares a word with its answer", () => {
  const q = question(dataset, "paraphrase");
  const answer = dataset.memories.find((m) => m.id === q.answer_ids[0])!;
  const word = answer.content.split(/\s+/).find((w) => contentStems(w).size > 0)!;
  const problems = mutated((ds) => ds.questions.find((x) => x.id === q.id)!.text += ` ${word}`);
  assert.ok(
    problems.some((p) => p.startsWith(`question ${q.id}: shares content words with ${answer.id}`)),
    problems.join("\n"),
  );
});

Deno.test("eval dataset: the validator reports temporal answers outside the time window and category minimums", () => {
  const q = question(dataset, "temporal");
  assert.ok(
    mutated((ds) => ds.questions.find((x) => x.id === q.id)!.time_window_days = [9000, 9001])
      .some((p) => p.startsWith(`question ${q.id}: answer`) && p.includes("is outside")),
  );
  assert.ok(
    mutated((ds) => ds.questions = ds.questions.filter((x) => x.category !== "no_answer"))
      .some((p) => p === "0 no_answer questions, at least 30 wanted"),
  );
});

Deno.test("eval dataset: content words are stemmed and stop words dropped, as the english text search config does", () => {
  assert.deepEqual([...contentStems("The deployments were running on the caches")].sort(), ["cach", "deploy", "run"]);
  assert.deepEqual(sharedStems("Which caching layer?", "Catalog responses are cached"), ["cach"]);
  assert.deepEqual(sharedStems("How do shoppers log in?", "Sign-in uses magic links"), []);
});

Deno.test("eval dataset: identifier tokens are paths, codes, packages and names, not plain words", () => {
  assert.deepEqual(
    identifierTokens(
      "Why did ERR_PNPM_OUTDATED_LOCKFILE fail in apps/web/src/lib/stripe.ts with prisma@5.19.1, TS2345 and getProduct?",
    ),
    ["ERR_PNPM_OUTDATED_LOCKFILE", "apps/web/src/lib/stripe.ts", "prisma@5.19.1", "TS2345", "getProduct"],
  );
  assert.deepEqual(identifierTokens("How do we deploy the storefront?"), []);
});

Deno.test("eval signal scenarios: every answer and unmerged note exists and is visible from the scenario's project; each kind has its signal", async () => {
  const { loadScenarios, validateScenarios } = await import("../eval/scenarios.ts");
  const { scenarios, notes } = await loadScenarios();
  assert.ok(scenarios.length >= 30, `${scenarios.length} scenarios`);
  for (const kind of ["file", "error", "branch"]) {
    assert.ok(scenarios.filter((s) => s.kind === kind).length >= 10, kind);
  }
  assert.deepEqual(validateScenarios(scenarios, notes, dataset.memories), []);
  const broken = structuredClone(scenarios);
  broken[0]!.answer_ids.push("acme-web-9999");
  broken[1]!.signals = {};
  const other = dataset.memories.find((m) => m.tenant !== broken[2]!.tenant)!;
  broken[2]!.answer_ids.push(other.id);
  const problems = validateScenarios(broken, notes, dataset.memories);
  assert.ok(problems.some((p) => p.includes("unknown memory acme-web-9999")), problems.join("; "));
  assert.ok(problems.some((p) => p.startsWith(`${broken[1]!.id}: a `)), problems.join("; "));
  assert.ok(problems.some((p) => p.includes(`${other.id} is not visible`)), problems.join("; "));
});
