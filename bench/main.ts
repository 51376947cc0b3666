// `npm run bench` entry point (scripts/bench.sh provisions the database and calls this).
//
//   deno run -A --config supabase/functions/deno.json bench/main.ts [--size 10k|100k|1m]
//        [--suites retrieval,lifecycle,handler,write,graph,background,hostile,context,peer] [--seed 42] [--no-load] [--quick]
//
// Writes bench/results/<suite>.json (machine, versions, settings, figures), prints a table and
// redraws the SVG charts in bench/results/ from every results file present.
import { Corpus, loadCorpus, SIZES } from "./corpus.ts";
import { connect, installBenchSchema, pauseScheduledJobs, serverSettings, versions, withSetting } from "./benchdb.ts";
import { fmt, formatTable, log, now } from "./lib.ts";
import { MODES, type RetrievalResult, runRetrieval } from "./suites/retrieval.ts";
import { runLifecycle } from "./suites/lifecycle.ts";
import { runHandler } from "./suites/handler.ts";
import { withReplica } from "./replica.ts";
import { runWrite } from "./suites/write.ts";
import { runGraph } from "./suites/graph.ts";
import { runHostile } from "./suites/hostile.ts";
import { runPeer } from "./suites/peer.ts";
import { runBackground } from "./suites/background.ts";
import { runContext } from "./suites/context.ts";
import { machineInfo, writeResult } from "./report.ts";
import { renderCharts } from "./chart.ts";

const ALL_SUITES = [
  "retrieval",
  "lifecycle",
  "handler",
  "write",
  "graph",
  "background",
  "hostile",
  "context",
  "peer",
] as const;
type SuiteName = typeof ALL_SUITES[number];

interface Args {
  size: string;
  suites: SuiteName[];
  seed: number;
  load: boolean;
  quick: boolean;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { size: "100k", suites: [...ALL_SUITES], seed: 42, load: true, quick: false };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const v = argv[i + 1];
    if (k === "--size" && v) {
      a.size = v.toLowerCase();
      i++;
    } else if (k === "--suites" && v) {
      const names = v.split(",").map((s) => s.trim()).filter(Boolean);
      for (const n of names) {
        if (!(ALL_SUITES as readonly string[]).includes(n)) {
          throw new Error(`unknown suite ${n}; known: ${ALL_SUITES.join(", ")}`);
        }
      }
      a.suites = names as SuiteName[];
      i++;
    } else if (k === "--seed" && v) {
      a.seed = Number(v);
      i++;
    } else if (k === "--no-load") a.load = false;
    else if (k === "--quick") a.quick = true;
    else if (k === "--help" || k === "-h") {
      console.log(
        "usage: npm run bench -- [--size 10k|100k|1m] [--suites retrieval,lifecycle,handler,write,graph,background,hostile,context,peer] [--seed N] [--no-load] [--quick]",
      );
      Deno.exit(0);
    } else throw new Error(`unknown argument ${k}`);
  }
  if (!(a.size in SIZES)) throw new Error(`--size must be one of ${Object.keys(SIZES).join(", ")}`);
  return a;
}

/** Resumes the schedules the run paused (benchdb.ts's pauseScheduledJobs), also when it fails. */
let resumeJobs: (() => Promise<void>) | undefined;

async function main() {
  const args = parseArgs(Deno.args);
  const url = Deno.env.get("DATABASE_URL");
  if (!url) throw new Error("DATABASE_URL is not set (scripts/bench.sh sets it to the bench cluster)");
  const size = SIZES[args.size] ?? 100_000;
  // Time limits: the retrieval loops check a deadline (a slow machine ends with fewer samples, n in
  // the tables says how many); the other suites are bounded by their counts.
  const retrievalBudgetMin = size >= 1_000_000 ? 40 : size >= 100_000 ? 6 : 3;
  const started = now();
  let deadline = started + 60 * 60_000;
  const sql = connect(url, 10);
  resumeJobs = await pauseScheduledJobs(sql);
  const machine = await machineInfo();
  const ver = { ...(await versions(sql)), deno: Deno.version.deno, v8: Deno.version.v8 };
  const corpus = new Corpus(size, args.seed, Date.parse("2026-11-22T00:00:00Z"));
  log(
    `size ${args.size} (${size} rows, ${corpus.tenants.length} tenants, ${corpus.clusters} clusters), suites ${
      args.suites.join(",")
    }`,
  );

  let load = null;
  if (args.load) {
    load = await loadCorpus(url, corpus);
  } else {
    const [c] = await sql<{ n: number }[]>`select count(*)::int as n from public.devai_memories`;
    if ((c?.n ?? 0) < size) {
      throw new Error(`--no-load: table has ${c?.n} rows, expected at least ${size} (load with the same --size first)`);
    }
  }
  await installBenchSchema(sql);
  const settings = await serverSettings(sql);
  const common = {
    size: args.size,
    rows: size,
    seed: args.seed,
    tenants: corpus.tenants.length,
    clusters: corpus.clusters,
    machine,
    versions: ver,
    settings,
    load,
    startedAt: new Date().toISOString(),
  };
  const printed: string[] = [];
  const skipped: string[] = [];

  for (const suite of args.suites) {
    const t0 = now();
    deadline = t0 + (suite === "retrieval" ? retrievalBudgetMin : 10) * 60_000;
    log(`suite ${suite}`);
    let result: unknown;
    if (suite === "retrieval") {
      const r = await runRetrieval(sql, corpus, {
        recallQueries: args.quick ? 15 : size >= 100_000 ? 30 : 40,
        latencyQueries: args.quick ? 30 : size >= 100_000 ? 60 : 100,
        efSearch: [20, 40, 100, 200],
        threshold: 0.7,
        deadline,
      });
      result = r;
      printed.push(retrievalTables(r, args.size));
    } else if (suite === "lifecycle") {
      const r = await runLifecycle(sql, url, corpus);
      result = r;
      printed.push(r.table);
    } else if (suite === "handler") {
      const r = await withReplica(
        url,
        (readUrl) =>
          withSetting(
            sql,
            "rate_limit_read_per_minute",
            0,
            () =>
              runHandler(sql, url, corpus, {
                deadline,
                queries: args.quick ? 30 : 100,
                readUrl,
                rounds: args.quick ? 1 : 4,
              }),
          ),
      );
      result = r;
      printed.push(r.table);
    } else if (suite === "write") {
      const r = await runWrite(sql, url, corpus, { deadline, candidates: args.quick ? 20 : 100 });
      result = r;
      printed.push(r.table);
    } else if (suite === "graph") {
      const r = await runGraph(sql, url, corpus, {
        deadline,
        batches: args.quick ? 20 : 50,
        lookups: args.quick ? 30 : 100,
      });
      result = r;
      printed.push(r.table);
    } else if (suite === "background") {
      const r = await runBackground(sql, url, {
        seed: args.seed,
        tenantSize: 10_000,
        checkpointSamples: args.quick ? 10 : 30,
      });
      result = r;
      printed.push(r.table);
    } else if (suite === "hostile") {
      // Its probe tenant sends GETs back to back (faster than the read limit's burst since
      // statements are prepared); the hostile requests keep their heavy limit.
      const r = await withSetting(sql, "rate_limit_read_per_minute", 0, () => runHostile(sql, url, corpus));
      result = r;
      printed.push(r.table);
    } else if (suite === "context") {
      const r = await withSetting(
        sql,
        "rate_limit_read_per_minute",
        0,
        () => runContext(sql, url, { deadline, requests: args.quick ? 20 : 60, seed: args.seed }),
      );
      result = r;
      printed.push(r.table);
    } else if (suite === "peer") {
      const r = await runPeer(sql, url, corpus, {
        deadline,
        queries: args.quick ? 30 : 100,
        adds: args.quick ? 10 : 40,
      });
      result = r;
      if (r.skipped) skipped.push(`peer: ${r.skipped}`);
      printed.push(r.skipped ? `peer: SKIPPED: ${r.skipped}` : r.table);
    }
    const file = await writeResult(suite, {
      suite,
      ...common,
      elapsedSeconds: Math.round((now() - t0) / 100) / 10,
      result,
    });
    log(`wrote ${file}`);
  }
  await resumeJobs();
  resumeJobs = undefined;
  await sql.end();
  await renderCharts();
  console.log(
    `\n# devai-memory bench: size ${args.size} (${size} rows), ${machine.cpuModel}, ${machine.cores} cores, ${machine.memoryGb} GB; postgres ${ver.postgres}, pgvector ${ver.pgvector}, deno ${ver.deno}`,
  );
  console.log(
    `durability: synchronous_commit = ${settings.synchronous_commit}${
      settings.synchronous_commit === "off"
        ? " on the bench's own cluster (a crash may lose the last commits; the dev and test clusters run with on)"
        : ""
    }`,
  );
  if (load) {
    console.log(
      `load: COPY ${fmt(load.generateAndCopySeconds, 1)} s, index builds ${
        Object.entries(load.indexBuildSeconds).map(([k, v]) => `${k} ${fmt(v, 1)} s`).join(", ")
      }, table ${load.tableSizeMb} MB, hnsw ${load.hnswSizeMb} MB`,
    );
  }
  for (const p of printed) console.log("\n" + p);
  console.log(`\ntotal ${fmt((now() - started) / 1000, 0)} s`);
  if (skipped.length > 0) {
    // Only the peer can be missing (mem0 from npm, Node): the run is incomplete, and says so.
    console.error(`\nINCOMPLETE: ${skipped.join("; ")}`);
    Deno.exit(2);
  }
}

export function retrievalTables(r: RetrievalResult, size: string): string {
  const sc = formatTable(
    ["scenario", "eligible rows", "% of corpus", "match_memories' path", "scopes"],
    r.scenarios.map((s) => [s.name, String(s.eligible), fmt(s.selectivityPct, 3), s.plan, s.scopes.join(" + ")]),
  );
  const lat = formatTable(
    ["scenario", "function", "clients", "side", "n", "p50 ms", "p95 ms", "p99 ms", "q/s"],
    r.latency.map((
      l,
    ) => [
      l.scenario,
      l.fn,
      String(l.clients),
      l.side,
      String(l.summary.n),
      fmt(l.summary.p50),
      fmt(l.summary.p95),
      fmt(l.summary.p99),
      l.qps === undefined ? "" : fmt(l.qps, 1),
    ]),
  );
  const short: Record<string, string> = {
    "as shipped": "as shipped",
    "hnsw, iterative off": "hnsw off",
    "hnsw, relaxed_order": "hnsw relaxed",
  };
  const header = ["scenario", "mode", ...r.efSearchValues.map((ef) => `ef_search ${ef}`)];
  const rows = r.scenarios.flatMap((s) =>
    MODES.map((m) => [
      s.name,
      short[m] ?? m,
      ...r.efSearchValues.map((ef) => {
        const p = r.recall.find((x) => x.scenario === s.name && x.efSearch === ef && x.mode === m);
        return p ? `${fmt(p.recallAt15, 3)} (${fmt(p.meanRowsReturned, 1)} rows, ${fmt(p.clientMsP50, 1)} ms)` : "-";
      }),
    ])
  );
  const naive = r.recall.filter((x) => x.mode === "naive (seed)");
  const naiveTable = formatTable(
    ["scenario", "recall@15", "rows", "rows from other scopes (LIKE)", "p50 ms"],
    naive.map((
      p,
    ) => [
      p.scenario,
      fmt(p.recallAt15, 3),
      fmt(p.meanRowsReturned, 1),
      String(p.foreignScopeRows ?? 0),
      fmt(p.clientMsP50),
    ]),
  );
  return [
    `## retrieval @ ${size}: scenarios`,
    sc,
    `\n## match_memories latency (as tenant, RLS on, as shipped; client = round trip around the query, server = clock_timestamp() delta inside bench.timed_match)`,
    lat,
    `\n## recall@15 vs exact (exact = every in-scope vector compared); in brackets: mean rows returned, client p50 ms (as postgres); "as shipped" runs with its own ef_search (${r.recommendation.shipped})`,
    formatTable(header, rows),
    ...r.notes.map((n) => `note: ${n}`),
    `\n## naive seed function (LIKE prefix, no iterative scan, ef_search 40)`,
    naiveTable,
    `\nsmallest sufficient hnsw.ef_search: ${
      r.recommendation.efSearch ?? "none of the tested values"
    } (${r.recommendation.rule})`,
    r.recommendation.shippedSuffices
      ? `=> match_memories' hnsw.ef_search = ${r.recommendation.shipped} is at or above it`
      : `=> match_memories' hnsw.ef_search = ${r.recommendation.shipped} is BELOW what this corpus needs (${
        r.recommendation.efSearch ?? "more than the largest tested"
      }): raise it`,
    `evidence: ${r.recommendation.evidence}`,
  ].join("\n");
}

if (import.meta.main) {
  try {
    await main();
  } catch (e) {
    console.error(e instanceof Error ? e.stack ?? e.message : e);
    await resumeJobs?.().catch(() => {});
    Deno.exit(1);
  }
}
