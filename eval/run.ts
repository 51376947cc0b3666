// `npm run eval` (scripts/eval.sh provisions the database): retrieval quality on the dev set.
//
//   DATABASE_URL=<a database it may fill> deno run -A --config supabase/functions/deno.json eval/run.ts \
//     [--methods vector,fts_sql,supabase_hybrid] [--no-block] [--set rrf_k=20,keyword_min_coverage=0.4]
//     [--weights local-hash-512-v1=1:0.35:0.5] [--no-scenarios] [--budgets 2000,8000]
// --set and --weights try other search settings (public.memory_settings; the fusion weights of an
// embedding model as keyword:vector:graph) for this run only; the report records them.
//
// 1. validates eval/data/ (the same rules as tests/eval_dataset.test.ts);
// 2. starts the functions server in process on a free port (scripts/serve.ts) and signs a user
//    token per tenant with the server's secret;
// 3. loads every memory through the memory API, then backdates them (eval/load.ts);
// 4. asks every question with every method and records the ranked lists, then once more with the
//    default memory-retrieve call (what an agent gets: the block);
// 5. the signal scenarios (eval/scenarios.ts): branch notes loaded, then context/assemble vs plain
//    memory-retrieve at each budget, and context/predict;
// 6. prints the tables and writes eval/results/eval-<model>-<time>.json and eval/results/latest.json.
// Embeddings: the offline embedder unless EMBEDDING_* / OPENAI_API_KEY configure a provider
// (supabase/functions/_shared/env.ts); the SQL methods embed with the same one.
import { createEmbedder } from "../supabase/functions/_shared/embeddings.ts";
import type { RetrieveResponse } from "../supabase/functions/_shared/retrieval/schemas.ts";
import { startServer } from "../scripts/serve.ts";
import { flushSearchWrites } from "../supabase/functions/_shared/retrieval/write-behind.ts";
import { signLocalToken } from "../scripts/serve/local_tokens.ts";
import { type EvalDataset, loadDataset, validateDataset } from "./dataset.ts";
import { backdate, type LoadedDataset, loadThroughApi, restoreLoaded } from "./load.ts";
import { METHODS } from "./methods/index.ts";
import { inStableOrder } from "./methods/memory-retrieve.ts";
import { callFunction, type EvalContext, type RetrievalMethod } from "./methods/method.ts";
import { installSupabaseHybrid } from "./methods/supabase-hybrid.ts";
import { loadBranchNotes, loadScenarios, runScenarios, scenarioFigures, validateScenarios } from "./scenarios.ts";
import {
  blockFigures,
  datasetSummary,
  type EvalReport,
  formatReport,
  methodFigures,
  type QuestionRecord,
} from "./report.ts";

const RESULTS_DIR = new URL("./results/", import.meta.url);

function argValue(name: string): string | undefined {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Deno.args[i + 1] : undefined;
}

function selectedMethods(): RetrievalMethod[] {
  const wanted = argValue("methods")?.split(",").map((s) => s.trim()).filter(Boolean);
  if (!wanted) return [...METHODS];
  const unknown = wanted.filter((w) => !METHODS.some((m) => m.name === w));
  if (unknown.length > 0) {
    throw new Error(`unknown method(s) ${unknown.join(", ")}; known: ${METHODS.map((m) => m.name).join(", ")}`);
  }
  return METHODS.filter((m) => wanted.includes(m.name));
}

const log = (line: string) => console.error(`[eval] ${line}`);

/** --set a=1,b=2 and --weights model=k:v:g, applied to the eval database before any question. */
async function applyOverrides(sql: EvalContext["sql"]): Promise<Record<string, string>> {
  const applied: Record<string, string> = {};
  for (const pair of (argValue("set") ?? "").split(",").filter(Boolean)) {
    const [name, value] = pair.split("=");
    const updated = await sql`update public.memory_settings set value = ${
      Number(value)
    } where name = ${name!} returning name`;
    if (updated.length === 0) throw new Error(`--set: no setting named ${name}`);
    applied[name!] = value!;
  }
  for (const pair of (argValue("weights") ?? "").split(",").filter(Boolean)) {
    const [model, w] = pair.split("=");
    const [k, v, g] = (w ?? "").split(":").map(Number);
    await sql`
      insert into public.memory_search_weights (embedding_model, keyword, vector, graph) values (${model!}, ${k!}, ${v!}, ${g!})
      on conflict (embedding_model) do update set keyword = excluded.keyword, vector = excluded.vector, graph = excluded.graph`;
    applied[`weights:${model}`] = w!;
  }
  if (Object.keys(applied).length > 0) log(`settings for this run: ${JSON.stringify(applied)}`);
  return applied;
}

async function askEveryQuestion(
  ds: EvalDataset,
  ctx: EvalContext,
  loaded: LoadedDataset,
  records: QuestionRecord[],
  methods: RetrievalMethod[],
  withBlock: boolean,
): Promise<void> {
  const idOf = (uuid: string) => loaded.idOf.get(uuid) ?? `unknown:${uuid}`;
  for (const method of methods) {
    await backdate(ctx.sql, ds, loaded);
    ds.questions.forEach((_q, i) => records[i]!.methods[method.name] = { ranked: [], ms: NaN });
    for (const [i, q] of ds.questions.entries()) {
      const t0 = performance.now();
      const ranked = await method.rank(q, ctx);
      records[i]!.methods[method.name] = { ranked: ranked.map(idOf), ms: performance.now() - t0 };
      await undoReinforcement(ctx, loaded, ranked);
    }
    log(`${method.name}: ${ds.questions.length} questions asked`);
  }
  if (!withBlock) return;
  await backdate(ctx.sql, ds, loaded);
  for (const [i, q] of ds.questions.entries()) {
    const t0 = performance.now();
    const res = await callFunction<RetrieveResponse>(ctx, q.tenant, "memory-retrieve", {
      message: q.text,
      project: q.project,
      now: ctx.now.toISOString(),
    });
    const returned = inStableOrder(res.memories);
    records[i]!.block = {
      returned: returned.map((m) => idOf(m.id)),
      injected: returned.filter((m) => m.injected).map((m) => idOf(m.id)),
      token_count: res.token_count,
      ms: performance.now() - t0,
    };
    await undoReinforcement(ctx, loaded, res.memories.map((m) => m.id));
  }
  log(`default memory-retrieve call: ${ds.questions.length} questions asked`);
}

/**
 * Every question is asked of the memory as loaded: the reinforcement its retrieval wrote behind
 * the answer (docs/operations.md#write-behind-reinforcement-and-search-events; at the wall
 * clock, so two runs would rank later questions differently) is written now, by the in-process
 * server's pool, and undone.
 */
async function undoReinforcement(ctx: EvalContext, loaded: LoadedDataset, uuids: readonly string[]): Promise<void> {
  await flushSearchWrites(ctx.sql);
  await restoreLoaded(ctx.sql, loaded, uuids);
}

async function main(): Promise<void> {
  const started = performance.now();
  const startedAt = new Date().toISOString();
  const methods = selectedMethods();
  const withBlock = !Deno.args.includes("--no-block");
  const ds = await loadDataset();
  const withScenarios = !Deno.args.includes("--no-scenarios");
  const budgets = (argValue("budgets") ?? "2000,8000").split(",").map(Number);
  const { scenarios, notes } = await loadScenarios();
  const problems = [...validateDataset(ds), ...validateScenarios(scenarios, notes, ds.memories)];
  if (problems.length > 0) throw new Error(`eval/data is not valid:\n  ${problems.join("\n  ")}`);
  const databaseUrl = Deno.env.get("DATABASE_URL");
  if (!databaseUrl) throw new Error("set DATABASE_URL to a database the eval may fill (npm run eval provisions one)");

  const server = await startServer({ port: 0, databaseUrl, worker: false, scheduler: false, logRequests: false, log });
  try {
    const secret = server.config.jwt.secret;
    if (!secret) throw new Error("the eval signs its own tenant tokens: configure an HS256 secret, not JWKS_URL");
    const tokens = new Map<string, string>();
    for (const t of ds.tenants) {
      tokens.set(t.name, await signLocalToken(secret, { role: "authenticated", sub: t.id, aud: "authenticated" }));
    }
    const tenantIds = new Map(ds.tenants.map((t) => [t.name, t.id]));
    const embedder = createEmbedder(server.config);
    const ctx: EvalContext = {
      functionsUrl: server.functionsUrl,
      sql: server.sql,
      embedder,
      root: server.config.namespaceRoot,
      now: new Date(ds.now),
      tokenOf: (t) => tokens.get(t)!,
      tenantIdOf: (t) => tenantIds.get(t)!,
    };
    const [{ n } = { n: 0 }] = await server.sql<{ n: number }[]>`select count(*)::int as n from public.devai_memories`;
    if (n > 0) {
      throw new Error(`the eval database already holds ${n} memories: give the eval an empty, migrated database`);
    }
    await installSupabaseHybrid(server.sql);
    // The eval is one tenant loading thousands of memories back to back through the API: the
    // per-tenant rate limits (docs/operations.md#rate-limits) are off in its own database.
    await server.sql`
      update public.memory_settings set value = 0
       where name in ('rate_limit_read_per_minute', 'rate_limit_write_per_minute', 'rate_limit_heavy_per_minute')`;
    const overrides = await applyOverrides(server.sql);

    log(`loading ${ds.memories.length} memories through the memory API (embedder ${embedder.model}) ...`);
    const loaded = await loadThroughApi(ds, ctx, (done) => log(`  ${done} loaded`));
    await backdate(server.sql, ds, loaded);
    await server.sql`analyze public.devai_memories`;
    await server.sql`select memory_private.refresh_keyword_common_terms()`; // the devai-keyword-statistics job's work
    log(`loaded in ${loaded.seconds.toFixed(1)} s`);

    const records: QuestionRecord[] = ds.questions.map((q) => ({
      id: q.id,
      category: q.category,
      answer_ids: q.answer_ids,
      methods: {},
    }));
    await askEveryQuestion(ds, ctx, loaded, records, methods, withBlock);
    let signalScenarios: EvalReport["signal_scenarios"];
    if (withScenarios) {
      // After the methods: the branch notes must not change their figures.
      await loadBranchNotes(ctx, notes, loaded);
      await backdate(server.sql, ds, loaded);
      const scenarioRecords = await runScenarios(ctx, loaded, scenarios, budgets);
      signalScenarios = { budgets, figures: scenarioFigures(scenarioRecords, budgets), scenarios: scenarioRecords };
      log(`signal scenarios: ${scenarios.length} asked at budgets ${budgets.join(", ")}`);
    }

    const report: EvalReport = {
      started_at: startedAt,
      seconds: (performance.now() - started) / 1000,
      embedding_model: embedder.model,
      ...(Object.keys(overrides).length > 0 ? { overrides } : {}),
      dataset: datasetSummary(ds),
      load: { seconds: loaded.seconds, memories_per_second: ds.memories.length / loaded.seconds },
      methods: Object.fromEntries(methods.map((m) => [m.name, methodFigures(records, m.name, m.description)])),
      default_retrieve: withBlock
        ? blockFigures(records, "message + project (+ the dataset's now), every other field at its default")
        : undefined,
      ...(signalScenarios ? { signal_scenarios: signalScenarios } : {}),
      questions: records,
    };
    console.log(formatReport(report));
    await Deno.mkdir(RESULTS_DIR, { recursive: true });
    const stamp = startedAt.replace(/[:.]/g, "-");
    const json = JSON.stringify(report, null, 1);
    const file = new URL(`eval-${embedder.model.replace(/[^A-Za-z0-9._-]/g, "_")}-${stamp}.json`, RESULTS_DIR);
    await Deno.writeTextFile(file, json);
    await Deno.writeTextFile(new URL("latest.json", RESULTS_DIR), json);
    log(`results: ${file.pathname}`);
  } finally {
    await server.close();
  }
}

if (import.meta.main) {
  try {
    await main();
  } catch (err) {
    console.error(`[eval] ${(err as Error).message}`);
    Deno.exit(1);
  }
}
