// The eval's figures: computed from the per-question records, printed as tables, kept as JSON.
import { type EvalDataset, QUESTION_CATEGORIES, type QuestionCategory } from "./dataset.ts";
import { mean, percentile, type QualityFigures, qualityOf } from "./metrics.ts";
import type { ScenarioFigures, ScenarioRecord } from "./scenarios.ts";

export interface MethodRecord {
  /** Dataset ids, best first. */
  ranked: string[];
  ms: number;
}

export interface BlockRecord {
  /** Dataset ids of the memories above the threshold, best first, and of those in the block. */
  returned: string[];
  injected: string[];
  token_count: number;
  ms: number;
}

export interface QuestionRecord {
  id: string;
  category: QuestionCategory;
  answer_ids: string[];
  methods: Record<string, MethodRecord>;
  block?: BlockRecord;
}

export interface BlockFigures {
  n: number;
  /** Mean share of the answering memories that the block contains. */
  answers_injected: number;
  /** Mean number of memories above the threshold, and of memories in the block. */
  returned: number;
  injected: number;
  tokens_mean: number;
  tokens_p95: number;
}

export interface EvalReport {
  started_at: string;
  seconds: number;
  embedding_model: string;
  /** Search settings this run tried (eval/run.ts --set, --weights). */
  overrides?: Record<string, string>;
  dataset: {
    now: string;
    tenants: number;
    projects: number;
    memories: number;
    replaced: number;
    questions: Record<string, number>;
  };
  load: { seconds: number; memories_per_second: number };
  methods: Record<string, {
    description: string;
    overall: QualityFigures;
    by_category: Partial<Record<QuestionCategory, QualityFigures>>;
    latency_ms: { p50: number; p95: number; n: number };
  }>;
  /** Signal scenarios (eval/scenarios.ts): per budget, overall and per kind. */
  signal_scenarios?: {
    budgets: number[];
    figures: Record<string, Record<string, ScenarioFigures>>;
    scenarios: ScenarioRecord[];
  };
  default_retrieve?: {
    request: string;
    by_category: Partial<Record<QuestionCategory, BlockFigures>>;
    /** no_answer questions whose call returned no memory above the threshold. */
    no_answer_empty: { count: number; of: number; share: number };
    latency_ms: { p50: number; p95: number; n: number };
  };
  questions: QuestionRecord[];
}

const ANSWERABLE = QUESTION_CATEGORIES.filter((c) => c !== "no_answer");

function latency(ms: number[]): { p50: number; p95: number; n: number } {
  return { p50: percentile(ms, 50), p95: percentile(ms, 95), n: ms.length };
}

export function methodFigures(
  records: QuestionRecord[],
  method: string,
  description: string,
): EvalReport["methods"][string] {
  const rows = records.filter((r) => r.methods[method]).map((r) => ({
    category: r.category,
    ranked: r.methods[method]!.ranked,
    relevant: new Set(r.answer_ids),
  }));
  const by_category: Partial<Record<QuestionCategory, QualityFigures>> = {};
  for (const c of ANSWERABLE) {
    const inCategory = rows.filter((r) => r.category === c);
    if (inCategory.length > 0) by_category[c] = qualityOf(inCategory);
  }
  return {
    description,
    overall: qualityOf(rows),
    by_category,
    latency_ms: latency(records.filter((r) => r.methods[method]).map((r) => r.methods[method]!.ms)),
  };
}

export function blockFigures(records: QuestionRecord[], request: string): EvalReport["default_retrieve"] {
  const withBlock = records.filter((r) => r.block);
  const by_category: Partial<Record<QuestionCategory, BlockFigures>> = {};
  for (const c of QUESTION_CATEGORIES) {
    const rs = withBlock.filter((r) => r.category === c);
    if (rs.length === 0) continue;
    const tokens = rs.map((r) => r.block!.token_count);
    by_category[c] = {
      n: rs.length,
      answers_injected: c === "no_answer"
        ? NaN
        : mean(rs.map((r) => r.answer_ids.filter((id) => r.block!.injected.includes(id)).length / r.answer_ids.length)),
      returned: mean(rs.map((r) => r.block!.returned.length)),
      injected: mean(rs.map((r) => r.block!.injected.length)),
      tokens_mean: mean(tokens),
      tokens_p95: percentile(tokens, 95),
    };
  }
  const noAnswer = withBlock.filter((r) => r.category === "no_answer");
  const empty = noAnswer.filter((r) => r.block!.returned.length === 0).length;
  return {
    request,
    by_category,
    no_answer_empty: { count: empty, of: noAnswer.length, share: noAnswer.length ? empty / noAnswer.length : NaN },
    latency_ms: latency(withBlock.map((r) => r.block!.ms)),
  };
}

export function datasetSummary(ds: EvalDataset): EvalReport["dataset"] {
  const questions: Record<string, number> = {};
  for (const q of ds.questions) questions[q.category] = (questions[q.category] ?? 0) + 1;
  return {
    now: ds.now,
    tenants: ds.tenants.length,
    projects: ds.tenants.reduce((n, t) => n + t.projects.length, 0),
    memories: ds.memories.length,
    replaced: ds.memories.filter((m) => m.replaces).length,
    questions,
  };
}

// ---------------------------------------------------------------------------------------------
// Text tables

const f2 = (x: number) => (Number.isNaN(x) ? "-" : x.toFixed(2));
const f1 = (x: number) => (Number.isNaN(x) ? "-" : x.toFixed(1));
const pct = (x: number) => (Number.isNaN(x) ? "-" : `${(x * 100).toFixed(0)}%`);

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  return [line(header), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}

export function formatReport(r: EvalReport): string {
  const out: string[] = [];
  const d = r.dataset;
  out.push(
    `retrieval eval: ${d.memories} memories (${d.replaced} of them corrections), ${d.tenants} tenants, ${d.projects} projects; ` +
      `${Object.values(d.questions).reduce((a, b) => a + b, 0)} questions; embedder ${r.embedding_model}; now ${d.now}`,
  );
  out.push(
    `loaded through the memory API in ${f1(r.load.seconds)} s (${
      f1(r.load.memories_per_second)
    } memories/s); whole run ${f1(r.seconds)} s`,
  );
  const names = Object.keys(r.methods);
  const cats = ANSWERABLE.filter((c) => names.some((m) => r.methods[m]!.by_category[c]));

  for (const [metric, key] of [["recall@10", "recall_at_10"], ["MRR", "mrr"]] as const) {
    const first = r.methods[names[0]!];
    const ns = [first?.overall.n, ...cats.map((c) => first?.by_category[c]?.n)];
    out.push("", `${metric} by method and category (questions: ${ns.join(" / ")})`);
    out.push(table(
      ["method", "all", ...cats],
      names.map((m) => [
        m,
        f2(r.methods[m]!.overall[key]),
        ...cats.map((c) => f2(r.methods[m]!.by_category[c]?.[key] ?? NaN)),
      ]),
    ));
  }

  out.push("", "every metric, per method");
  const rows: string[][] = [];
  for (const m of names) {
    const fig = r.methods[m]!;
    for (const [c, q] of [["all", fig.overall], ...cats.map((c) => [c, fig.by_category[c]] as const)] as const) {
      if (!q) continue;
      rows.push([
        c === "all" ? m : "",
        c,
        String(q.n),
        f2(q.recall_at_5),
        f2(q.recall_at_10),
        f2(q.recall_at_20),
        f2(q.mrr),
        f2(q.ndcg_at_10),
      ]);
    }
  }
  out.push(table(["method", "category", "n", "R@5", "R@10", "R@20", "MRR", "nDCG@10"], rows));

  const b = r.default_retrieve;
  if (b) {
    out.push("", `default memory-retrieve call (${b.request}): what the block holds`);
    out.push(table(
      ["category", "n", "answers in block", "above threshold", "in block", "tokens mean", "tokens p95"],
      QUESTION_CATEGORIES.filter((c) => b.by_category[c]).map((c) => {
        const x = b.by_category[c]!;
        return [
          c,
          String(x.n),
          c === "no_answer" ? "-" : `${(x.answers_injected * 100).toFixed(0)}%`,
          f1(x.returned),
          f1(x.injected),
          f1(x.tokens_mean),
          String(x.tokens_p95),
        ];
      }),
    ));
    out.push(
      `no_answer: ${b.no_answer_empty.count} of ${b.no_answer_empty.of} questions (${
        (b.no_answer_empty.share * 100).toFixed(0)
      }%) returned nothing above the threshold`,
    );
  }

  const sc = r.signal_scenarios;
  if (sc) {
    out.push(
      "",
      `signal scenarios (${sc.scenarios.length}: file open, error on screen, branch): answering memories injected by context/assemble vs plain memory-retrieve (message only) at the same budget; prefetched by context/predict from the signal alone; another branch's unmerged notes injected`,
    );
    out.push(table(
      ["budget", "kind", "n", "assemble", "retrieve", "predict", "leaks assemble", "leaks retrieve", "tokens mean"],
      sc.budgets.flatMap((b) =>
        Object.entries(sc.figures[String(b)]!).map(([kind, x]) => [
          String(b),
          kind,
          String(x.scenarios),
          pct(x.assemble),
          pct(x.retrieve),
          pct(x.predicted),
          String(x.assemble_leaks),
          String(x.retrieve_leaks),
          String(x.mean_tokens),
        ])
      ),
    ));
  }

  out.push(
    "",
    "latency per question, ms (as each method is called: HTTP for memory-retrieve, SQL as the tenant otherwise)",
  );
  out.push(table(["method", "p50", "p95", "n"], [
    ...names.map((
      m,
    ) => [m, f1(r.methods[m]!.latency_ms.p50), f1(r.methods[m]!.latency_ms.p95), String(r.methods[m]!.latency_ms.n)]),
    ...(b
      ? [["memory-retrieve (default call)", f1(b.latency_ms.p50), f1(b.latency_ms.p95), String(b.latency_ms.n)]]
      : []),
  ]));
  return out.join("\n");
}
