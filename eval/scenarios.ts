// Signal scenarios (eval/README.md#signal-scenarios): coding sessions with a file open, an error on
// screen or a branch checked out, asked after the retrieval methods, against the same loaded dev
// set plus a few branch notes (eval/data/scenarios/branch-notes.jsonl, loaded with their branch
// and commit in metadata). For each scenario, at each budget: the share of its answering memories
// that POST context/assemble injects (critical, relevant or background tier) against what plain
// POST memory-retrieve injects at the same budget with the message alone; the share that
// POST context/predict prefetches from the signal alone; and whether another branch's unmerged
// notes leak into either.
import { namespaceOf } from "./dataset.ts";
import type { LoadedDataset } from "./load.ts";
import { callFunction, type EvalContext } from "./methods/method.ts";

export const SCENARIO_KINDS = ["file", "error", "branch"] as const;
export type ScenarioKind = typeof SCENARIO_KINDS[number];
const SCENARIOS_DIR = new URL("./data/scenarios/", import.meta.url);

export interface Scenario {
  id: string;
  tenant: string;
  project: string;
  kind: ScenarioKind;
  message: string;
  signals: Record<string, unknown> & { current_file?: string; recent_errors?: string[]; branch?: string };
  /** Memories (dev set or branch notes) the session needs. Empty: a leak check only. */
  answer_ids: string[];
  /** Branch notes that must not be injected on this branch. */
  unmerged_ids?: string[];
}

export interface BranchNote {
  id: string;
  tenant: string;
  scope: string;
  category: string;
  branch: string;
  commit: string;
  content: string;
}

async function readJsonl<T>(file: URL): Promise<T[]> {
  return (await Deno.readTextFile(file)).split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l) as T);
}

export async function loadScenarios(): Promise<{ scenarios: Scenario[]; notes: BranchNote[] }> {
  const notes = await readJsonl<BranchNote>(new URL("branch-notes.jsonl", SCENARIOS_DIR));
  const scenarios: Scenario[] = [];
  for await (const entry of Deno.readDir(SCENARIOS_DIR)) {
    if (entry.name.endsWith(".jsonl") && entry.name !== "branch-notes.jsonl") {
      scenarios.push(...await readJsonl<Scenario>(new URL(entry.name, SCENARIOS_DIR)));
    }
  }
  return { scenarios: scenarios.sort((a, b) => a.id.localeCompare(b.id)), notes };
}

/** Every id exists and is the scenario's tenant's, visible from its project; each kind has its signal. */
export function validateScenarios(
  scenarios: readonly Scenario[],
  notes: readonly BranchNote[],
  memories: readonly { id: string; tenant: string; scope: string }[],
): string[] {
  const problems: string[] = [];
  const known = new Map([...memories, ...notes].map((m) => [m.id, m]));
  const seen = new Set<string>();
  for (const s of scenarios) {
    if (seen.has(s.id)) problems.push(`${s.id}: duplicate id`);
    seen.add(s.id);
    if (!SCENARIO_KINDS.includes(s.kind)) problems.push(`${s.id}: unknown kind ${s.kind}`);
    const signal = s.kind === "file"
      ? s.signals.current_file
      : s.kind === "error"
      ? s.signals.recent_errors?.[0]
      : s.signals.branch;
    if (!signal) problems.push(`${s.id}: a ${s.kind} scenario needs its signal`);
    if (s.answer_ids.length === 0 && !s.unmerged_ids?.length) {
      problems.push(`${s.id}: neither answers nor unmerged notes: it measures nothing`);
    }
    for (const id of [...s.answer_ids, ...(s.unmerged_ids ?? [])]) {
      const m = known.get(id);
      if (!m) problems.push(`${s.id}: unknown memory ${id}`);
      else if (m.tenant !== s.tenant || !["user", "global", s.project].includes(m.scope)) {
        problems.push(`${s.id}: ${id} is not visible from ${s.tenant}/${s.project}`);
      }
    }
  }
  const noteIds = new Set<string>();
  for (const n of notes) {
    if (noteIds.has(n.id) || memories.some((m) => m.id === n.id)) problems.push(`${n.id}: duplicate id`);
    noteIds.add(n.id);
  }
  return problems;
}

/** Loads the branch notes through POST memory/remember with their lineage; returns id → uuid. */
export async function loadBranchNotes(
  ctx: EvalContext,
  notes: readonly BranchNote[],
  loaded: LoadedDataset,
): Promise<void> {
  for (const n of notes) {
    const res = await callFunction<{ memory: { id: string } }>(ctx, n.tenant, "memory/remember", {
      content: n.content,
      namespace: namespaceOf(ctx.root, n.scope),
      metadata: { category: n.category, branch: n.branch, commit: n.commit },
    });
    loaded.uuidOf.set(n.id, res.memory.id);
    loaded.idOf.set(res.memory.id, n.id);
  }
}

export interface ScenarioRecord {
  id: string;
  kind: ScenarioKind;
  answers: number;
  /** Per budget: answers injected by assemble / by plain retrieve, unmerged notes injected by each, assemble's tokens. */
  budgets: Record<
    string,
    { assemble: number; retrieve: number; assemble_leaks: number; retrieve_leaks: number; tokens: number }
  >;
  /** Answers among context/predict's predictions from the signal alone. */
  predicted: number;
  prediction_confidence: number;
}

interface AssembleAnswer {
  token_count: number;
  memories: { id: string; tier: string }[];
}
interface RetrieveAnswer {
  memories: { id: string; injected: boolean }[];
}
interface PredictAnswer {
  predicted_memories: { id: string }[];
  confidence: number;
}

const LINEAGE_KEYS = ["branch", "merged_branches", "ancestor_commits", "default_branch"];

export async function runScenarios(
  ctx: EvalContext,
  loaded: LoadedDataset,
  scenarios: readonly Scenario[],
  budgets: readonly number[],
): Promise<ScenarioRecord[]> {
  const uuid = (id: string) => loaded.uuidOf.get(id)!;
  const records: ScenarioRecord[] = [];
  for (const s of scenarios) {
    const answers = new Set(s.answer_ids.map(uuid));
    const unmerged = new Set((s.unmerged_ids ?? []).map(uuid));
    const count = (ids: readonly string[], of: Set<string>) => ids.filter((id) => of.has(id)).length;
    const lineage = Object.fromEntries(Object.entries(s.signals).filter(([k]) => LINEAGE_KEYS.includes(k)));
    const record: ScenarioRecord = {
      id: s.id,
      kind: s.kind,
      answers: answers.size,
      budgets: {},
      predicted: 0,
      prediction_confidence: 0,
    };
    for (const budget of budgets) {
      const a = await callFunction<AssembleAnswer>(ctx, s.tenant, "context/assemble", {
        budget,
        message: s.message,
        project: s.project,
        signals: s.signals,
      });
      const injected = a.memories.filter((m) => m.tier !== "index").map((m) => m.id);
      const r = await callFunction<RetrieveAnswer>(ctx, s.tenant, "memory-retrieve", {
        message: s.message,
        project: s.project,
        budget_tokens: budget,
        top_k: 50,
        now: ctx.now.toISOString(),
      });
      const retrieved = r.memories.filter((m) => m.injected).map((m) => m.id);
      record.budgets[String(budget)] = {
        assemble: count(injected, answers),
        retrieve: count(retrieved, answers),
        assemble_leaks: count(injected, unmerged),
        retrieve_leaks: count(retrieved, unmerged),
        tokens: a.token_count,
      };
    }
    const signal = s.kind === "file"
      ? { file_opened: s.signals.current_file }
      : s.kind === "error"
      ? { error: s.signals.recent_errors![0] }
      : { branch: s.signals.branch };
    const p = await callFunction<PredictAnswer>(ctx, s.tenant, "context/predict", {
      ...signal,
      project: s.project,
      signals: lineage,
    });
    record.predicted = count(p.predicted_memories.map((m) => m.id), answers);
    record.prediction_confidence = p.confidence;
    records.push(record);
  }
  return records;
}

export interface ScenarioFigures {
  scenarios: number;
  /** Mean share of answers injected, over scenarios with answers. */
  assemble: number;
  retrieve: number;
  /** Mean share of answers context/predict prefetched. */
  predicted: number;
  /** Unmerged notes injected, summed. */
  assemble_leaks: number;
  retrieve_leaks: number;
  mean_tokens: number;
}

function figures(records: readonly ScenarioRecord[], budget: string): ScenarioFigures {
  const answered = records.filter((r) => r.answers > 0);
  const mean = (
    xs: number[],
  ) => (xs.length > 0 ? Math.round((xs.reduce((a, b) => a + b, 0) / xs.length) * 1000) / 1000 : NaN);
  return {
    scenarios: records.length,
    assemble: mean(answered.map((r) => r.budgets[budget]!.assemble / r.answers)),
    retrieve: mean(answered.map((r) => r.budgets[budget]!.retrieve / r.answers)),
    predicted: mean(answered.map((r) => r.predicted / r.answers)),
    assemble_leaks: records.reduce((s, r) => s + r.budgets[budget]!.assemble_leaks, 0),
    retrieve_leaks: records.reduce((s, r) => s + r.budgets[budget]!.retrieve_leaks, 0),
    mean_tokens: Math.round(mean(records.map((r) => r.budgets[budget]!.tokens))),
  };
}

/** Per budget: overall and per kind. */
export function scenarioFigures(
  records: readonly ScenarioRecord[],
  budgets: readonly number[],
): Record<string, Record<string, ScenarioFigures>> {
  return Object.fromEntries(budgets.map((b) => [
    String(b),
    Object.fromEntries([
      ["all", figures(records, String(b))],
      ...SCENARIO_KINDS.map((k) => [k, figures(records.filter((r) => r.kind === k), String(b))]),
    ]),
  ]));
}
