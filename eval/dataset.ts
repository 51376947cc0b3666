// The retrieval dev set (eval/data/, described in eval/README.md): its types, how it is read, and
// every rule it must keep. The same validation runs in the dataset test and at the start of
// `npm run eval`, so a broken edit is caught before anything is measured.
import { validateContent } from "../supabase/functions/_shared/writing-constraints.ts";
import { sharedStems } from "./content-words.ts";

export const DATA_DIR = new URL("./data/", import.meta.url);

export const QUESTION_CATEGORIES = [
  "single_hop",
  "multi_hop",
  "temporal",
  "paraphrase",
  "identifier",
  "no_answer",
] as const;
export type QuestionCategory = typeof QUESTION_CATEGORIES[number];

/** The least each category must hold for its figures to mean something. */
export const CATEGORY_MINIMUMS: Readonly<Record<QuestionCategory, number>> = {
  single_hop: 100,
  multi_hop: 50,
  temporal: 40,
  paraphrase: 50,
  identifier: 40,
  no_answer: 30,
};
export const MIN_MEMORIES = 2000;
export const MIN_QUESTIONS = 300;
export const MIN_TENANTS = 3;
export const MIN_PROJECTS = 6;

/** Coding categories a memory carries in metadata.category. */
export const MEMORY_CATEGORIES = [
  "architecture",
  "conventions",
  "commands",
  "build",
  "testing",
  "deployment",
  "dependencies",
  "errors_and_fixes",
  "decisions",
  "preferences",
  "workflows",
  "procedural",
] as const;
export type MemoryCategory = typeof MEMORY_CATEGORIES[number];

export type MemoryType = "semantic" | "episodic" | "procedural";
/** A project name, or the tenant's user scope, or its global scope. */
export type Scope = string;

export interface EvalMemory {
  /** Stable: `<scope>-NNNN` for projects, `<tenant>-user-NNNN` / `<tenant>-global-NNNN`. */
  id: string;
  tenant: string;
  scope: Scope;
  memory_type: MemoryType;
  category: MemoryCategory;
  /** Days before the dataset's `now` the memory was written. */
  created_days_ago: number;
  content: string;
  /** The memory this one corrects: loaded with POST memory/{id}/correct, so the chain is real. */
  replaces?: string;
}

export interface EvalQuestion {
  id: string;
  tenant: string;
  /** The project the agent works in: retrieval sees its scope plus the user and global scopes. */
  project: string;
  category: QuestionCategory;
  text: string;
  /** Memories that answer it; for a replaced fact, only the current one. Empty for no_answer. */
  answer_ids: string[];
  /** Temporal questions: the phrase as written, and what it means in days before `now` (inclusive). */
  time_phrase?: string;
  time_window_days?: [number, number];
}

export interface EvalTenant {
  name: string;
  /** The tenant's uuid: the `sub` of its user token. */
  id: string;
  description: string;
  projects: { name: string; stack: string }[];
}

export interface EvalDataset {
  /** The eval's fixed "now": created_at = now − created_days_ago. */
  now: string;
  tenants: EvalTenant[];
  memories: EvalMemory[];
  questions: EvalQuestion[];
}

async function readJsonLines<T>(url: URL): Promise<T[]> {
  const text = await Deno.readTextFile(url);
  return text.split("\n").filter((line) => line.trim() !== "").map((line, i) => {
    try {
      return JSON.parse(line) as T;
    } catch (err) {
      throw new Error(`${url.pathname}:${i + 1}: ${(err as Error).message}`);
    }
  });
}

/** Reads eval/data/: tenants.json, memories/*.jsonl (one file per scope) and questions/*.jsonl. */
export async function loadDataset(dir: URL = DATA_DIR): Promise<EvalDataset> {
  const meta = JSON.parse(await Deno.readTextFile(new URL("tenants.json", dir))) as {
    now: string;
    tenants: EvalTenant[];
  };
  const readAll = async <T>(sub: string): Promise<T[]> => {
    const folder = new URL(`${sub}/`, dir);
    const names: string[] = [];
    for await (const e of Deno.readDir(folder)) if (e.isFile && e.name.endsWith(".jsonl")) names.push(e.name);
    const out: T[] = [];
    for (const name of names.sort()) out.push(...await readJsonLines<T>(new URL(name, folder)));
    return out;
  };
  return {
    now: meta.now,
    tenants: meta.tenants,
    memories: await readAll("memories"),
    questions: await readAll("questions"),
  };
}

const FIRST_OR_SECOND_PERSON = /\b(i|me|my|mine|myself|we|us|our|ours|ourselves|you|your|yours|yourself|yourselves)\b/i;

/**
 * A token that names something exactly: a path, a file name, an error code, a package@version,
 * an env var, a function or type name, or anything in `backticks`. Identifier questions must
 * contain one that an answer has.
 */
export function identifierTokens(text: string): string[] {
  const quoted = [...text.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
  return quoted.concat(
    (text.replace(/`[^`]+`/g, " ").match(/[\p{L}\p{N}_@$:./#-]+/gu) ?? [])
      .map((t) => t.replace(/^[.:#-]+|[.:,#-]+$/g, ""))
      .filter((t) =>
        /[/_@]/.test(t) || /\.[a-z]{1,5}$/i.test(t) || /^[A-Z][A-Z0-9]{2,}$/.test(t) || /\p{L}\d|\d\p{L}/u.test(t) ||
        /[a-z][A-Z]/.test(t) || /\(\)$/.test(t) || /^[A-Z]{2,}-\d+$/.test(t) ||
        /^\p{L}\w*(\.\w+)+$/u.test(t) || /^\d{5,}$/.test(t) || /^[a-z0-9]+(-[a-z0-9]+){2,}$/.test(t)
      ),
  );
}

/** Every rule the set keeps; returns the problems found (empty: valid). */
export function validateDataset(ds: EvalDataset): string[] {
  const problems: string[] = [];
  const fail = (msg: string) => problems.push(msg);

  if (Number.isNaN(Date.parse(ds.now))) fail(`now is not a date: ${ds.now}`);
  const tenants = new Map(ds.tenants.map((t) => [t.name, t]));
  if (tenants.size !== ds.tenants.length) fail("tenant names are not unique");
  if (new Set(ds.tenants.map((t) => t.id)).size !== ds.tenants.length) fail("tenant ids are not unique");
  const projectCount = ds.tenants.reduce((n, t) => n + t.projects.length, 0);
  if (ds.tenants.length < MIN_TENANTS) fail(`${ds.tenants.length} tenants, at least ${MIN_TENANTS} wanted`);
  if (projectCount < MIN_PROJECTS) fail(`${projectCount} projects, at least ${MIN_PROJECTS} wanted`);
  const scopesOf = (tenant: string) =>
    new Set([...(tenants.get(tenant)?.projects.map((p) => p.name) ?? []), "user", "global"]);

  // Memories.
  const byId = new Map<string, EvalMemory>();
  for (const m of ds.memories) {
    if (byId.has(m.id)) fail(`duplicate memory id ${m.id}`);
    byId.set(m.id, m);
  }
  if (ds.memories.length < MIN_MEMORIES) fail(`${ds.memories.length} memories, at least ${MIN_MEMORIES} wanted`);
  const replacedBy = new Map<string, string>();
  const seenContent = new Map<string, string>();
  for (const m of ds.memories) {
    const where = `memory ${m.id}`;
    if (!/^[a-z0-9-]+-\d{4}$/.test(m.id)) fail(`${where}: id must look like <scope>-NNNN`);
    if (!tenants.has(m.tenant)) fail(`${where}: unknown tenant ${m.tenant}`);
    else if (!scopesOf(m.tenant).has(m.scope)) {
      fail(`${where}: scope ${m.scope} is not a project of ${m.tenant}, user or global`);
    }
    if (!["semantic", "episodic", "procedural"].includes(m.memory_type)) fail(`${where}: memory_type ${m.memory_type}`);
    if (!(MEMORY_CATEGORIES as readonly string[]).includes(m.category)) fail(`${where}: category ${m.category}`);
    if (!Number.isInteger(m.created_days_ago) || m.created_days_ago < 0) {
      fail(`${where}: created_days_ago ${m.created_days_ago}`);
    }
    const checked = validateContent(m.memory_type, m.content);
    if (!checked.ok) fail(`${where}: content breaks the writing constraints (${checked.reason})`);
    else if (checked.trimmed || checked.content !== m.content) {
      fail(`${where}: content would be trimmed (more than 2 sentences or untidy whitespace)`);
    }
    // Quoted text (an error message, a log line) may say "you"; the memory's own words may not.
    if (FIRST_OR_SECOND_PERSON.test(m.content.replace(/"[^"]*"/g, ""))) {
      fail(`${where}: content is not in the third person`);
    }
    // remember answers an exact duplicate with "created: false": every text must be new to its tenant.
    const key = `${m.tenant}\u0000${m.content.toLowerCase().replace(/\s+/g, " ").trim()}`;
    if (seenContent.has(key)) fail(`${where}: same content as ${seenContent.get(key)}`);
    seenContent.set(key, m.id);
    if (m.replaces !== undefined) {
      const old = byId.get(m.replaces);
      if (!old) fail(`${where}: replaces unknown ${m.replaces}`);
      else {
        if (old.tenant !== m.tenant || old.scope !== m.scope) {
          fail(`${where}: replaces ${old.id} of another tenant or scope`);
        }
        if (old.memory_type !== m.memory_type || old.category !== m.category) {
          fail(`${where}: a correction keeps the type and category of ${old.id}`);
        }
        if (old.created_days_ago <= m.created_days_ago) fail(`${where}: replaces ${old.id}, which is not older`);
        if (replacedBy.has(old.id)) fail(`${where}: ${old.id} is already replaced by ${replacedBy.get(old.id)}`);
        replacedBy.set(old.id, m.id);
      }
    }
  }
  for (const t of ds.tenants) {
    for (const scope of ["user", "global"]) {
      if (!ds.memories.some((m) => m.tenant === t.name && m.scope === scope)) {
        fail(`tenant ${t.name} has no ${scope} memories`);
      }
    }
  }

  // Questions.
  const questionIds = new Set<string>();
  const counts = Object.fromEntries(QUESTION_CATEGORIES.map((c) => [c, 0])) as Record<QuestionCategory, number>;
  for (const q of ds.questions) {
    const where = `question ${q.id}`;
    if (questionIds.has(q.id)) fail(`duplicate question id ${q.id}`);
    questionIds.add(q.id);
    if (!(QUESTION_CATEGORIES as readonly string[]).includes(q.category)) {
      fail(`${where}: category ${q.category}`);
      continue;
    }
    counts[q.category]++;
    if (!tenants.get(q.tenant)?.projects.some((p) => p.name === q.project)) {
      fail(`${where}: ${q.project} is not a project of ${q.tenant}`);
    }
    if (!q.text?.trim()) fail(`${where}: no text`);
    const visible = new Set([q.project, "user", "global"]);
    const answers = q.answer_ids.map((id) => byId.get(id));
    q.answer_ids.forEach((id, i) => {
      const a = answers[i];
      if (!a) return fail(`${where}: answer ${id} does not exist`);
      if (a.tenant !== q.tenant) fail(`${where}: answer ${id} belongs to tenant ${a.tenant}`);
      if (!visible.has(a.scope)) {
        fail(`${where}: answer ${id} (scope ${a.scope}) is not visible from project ${q.project}`);
      }
      if (replacedBy.has(id)) {
        fail(`${where}: answer ${id} was replaced by ${replacedBy.get(id)}; name the current memory`);
      }
    });
    if (new Set(q.answer_ids).size !== q.answer_ids.length) fail(`${where}: an answer is listed twice`);
    if (q.category === "no_answer") {
      if (q.answer_ids.length > 0) fail(`${where}: a no_answer question lists answers`);
    } else if (q.answer_ids.length === 0) fail(`${where}: no answer_ids`);
    if (q.category === "multi_hop" && q.answer_ids.length < 2) fail(`${where}: multi_hop needs at least 2 answers`);
    if (q.category === "temporal") {
      const w = q.time_window_days;
      if (!q.time_phrase?.trim() || !w || w.length !== 2 || w[0] > w[1]) {
        fail(`${where}: temporal needs time_phrase and time_window_days [from, to]`);
      } else {
        for (const a of answers) {
          if (a && (a.created_days_ago < w[0] || a.created_days_ago > w[1])) {
            fail(
              `${where}: answer ${a.id} (${a.created_days_ago} days ago) is outside ${q.time_phrase} [${w[0]}, ${
                w[1]
              }]`,
            );
          }
        }
      }
    } else if (q.time_phrase !== undefined || q.time_window_days !== undefined) {
      fail(`${where}: only temporal questions carry a time phrase`);
    }
    if (q.category === "paraphrase") {
      for (const a of answers) {
        const shared = a ? sharedStems(q.text, a.content) : [];
        if (shared.length > 0) fail(`${where}: shares content words with ${a!.id}: ${shared.join(", ")}`);
      }
    }
    if (q.category === "identifier") {
      const tokens = identifierTokens(q.text);
      const found = tokens.some((t) => answers.some((a) => a?.content.toLowerCase().includes(t.toLowerCase())));
      if (!found) fail(`${where}: names no identifier that an answer contains (found: ${tokens.join(", ") || "none"})`);
    }
  }
  if (ds.questions.length < MIN_QUESTIONS) fail(`${ds.questions.length} questions, at least ${MIN_QUESTIONS} wanted`);
  for (const c of QUESTION_CATEGORIES) {
    if (counts[c] < CATEGORY_MINIMUMS[c]) fail(`${counts[c]} ${c} questions, at least ${CATEGORY_MINIMUMS[c]} wanted`);
  }
  return problems;
}

/** Namespace of a memory of `scope`, as the memory API stores it (see eval/README.md). */
export function namespaceOf(root: string, scope: Scope): string {
  if (scope === "user") return `${root}/user/preferences`;
  if (scope === "global") return `${root}/global/facts`;
  return `${root}/project/${scope}/notes`;
}
