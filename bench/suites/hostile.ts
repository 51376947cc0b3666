// Suite 'hostile': the latency another tenant sees while one tenant sends the heaviest bodies the
// limits allow. The local functions server (scripts/serve.ts) runs in this process against the
// bench database, as `npm start` serves it (one event loop: a request that keeps the CPU busy
// stalls every other request). While each hostile request (and, for memory-extract, the worker
// drain it kicks) is in flight, the biggest corpus tenant repeats `GET memory?limit=1`, one request
// after the other; its latency before any hostile request is the baseline. Bodies: "ok\n"
// repeated and a comma run after "remember that" (the texts that backtracked quadratically before
// the text paths became linear), and an ordinary conversation, at the route's body limit, plus an
// ordinary 100 KB compaction. No LLM: compaction summarizes extractively, extraction uses the rules.
import { startServer } from "../../scripts/serve.ts";
import type { Sql } from "../benchdb.ts";
import type { Corpus } from "../corpus.ts";
import { fmt, formatTable, log, now, round, summarize, type Summary } from "../lib.ts";
import { benchEnv, signUserToken } from "./handler.ts";

export interface HostileResult {
  table: string;
  [k: string]: unknown;
}

interface Hostile {
  name: string;
  route: "memory-compact" | "memory-extract";
  text: (chars: number) => string;
}

const ORDINARY =
  "The deploy pipeline runs the integration suite before each release; failures page the on-call engineer. ";
const HOSTILE: Hostile[] = [
  { name: 'compact: "ok\\n" repeated', route: "memory-compact", text: (n) => "ok\n".repeat(Math.floor(n / 3)) },
  {
    name: "compact: comma run after 'remember that'",
    route: "memory-compact",
    text: (n) => `remember that the port is 5432${",".repeat(n)}x`,
  },
  {
    name: "compact: ordinary conversation",
    route: "memory-compact",
    text: (n) => ORDINARY.repeat(Math.floor(n / ORDINARY.length)),
  },
  {
    name: 'extract + worker: "ok\\n" repeated',
    route: "memory-extract",
    text: (n) => "ok\n".repeat(Math.floor(n / 3)),
  },
  {
    name: "extract + worker: comma run after 'remember that'",
    route: "memory-extract",
    text: (n) => `remember that the port is 5432${",".repeat(n)}x`,
  },
];

/** How many retrievals the burst sends at once, and how many `-word` exclusions each carries. */
export const BURST_REQUESTS = 60;
const BURST_EXCLUSIONS = 2_000;

/**
 * One tenant's burst of the costliest retrievals the limits allow (within its rate limit: 60 of a
 * burst of 300): thousands of exclusions, `as_of` (an exact scan of the tenant), graph depth 4,
 * top_k 50, no thresholds, all at once. Before each tenant had its share of the pool
 * (_shared/tenant-share.ts), another tenant's request waited behind the whole burst.
 */
async function burst(
  corpus: Corpus,
  functionsUrl: string,
  probeWhile: (until: Promise<unknown>) => Promise<number[]>,
) {
  const tenant = corpus.tenants[1] ?? corpus.tenants[0]!;
  const token = await signUserToken(tenant.id);
  const words = Array.from({ length: BURST_EXCLUSIONS }, (_, i) => `-x${i.toString(36)}`).join(" ");
  const body = JSON.stringify({
    message: `deploy build release ${words}`,
    as_of: "2030-01-01T00:00:00Z",
    threshold: 0,
    keyword_threshold: 0,
    top_k: 50,
    graph_depth: 4,
  });
  const t0 = now();
  const work = Promise.all(Array.from({ length: BURST_REQUESTS }, async () => {
    const res = await fetch(`${functionsUrl}/memory-retrieve`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body,
    });
    await res.text();
    return res.status;
  }));
  const during = await probeWhile(work);
  const statuses = await work;
  const ms = now() - t0;
  const name = `memory-retrieve: ${BURST_REQUESTS} at once, ${BURST_EXCLUSIONS} exclusions, as_of, graph depth 4`;
  log(`${name}: ${fmt(ms, 0)} ms; other tenant's GET max ${fmt(summarize(during).max)} ms`);
  return {
    name,
    bodyKb: round(new TextEncoder().encode(body).length / 1024, 0),
    requestMs: round(ms, 1),
    status: statuses.every((s) => s === 200) ? 200 : statuses.find((s) => s !== 200)!,
    during: summarize(during),
    probes: during.length,
  };
}

/** A body of one user message (plus a last turn for compaction) that fits in maxBytes. */
function bodyFor(h: Hostile, maxBytes: number, session: string): string {
  let chars = maxBytes;
  for (;;) {
    const messages = [
      { role: "user", content: h.text(chars) },
      ...(h.route === "memory-compact" ? [{ role: "user", content: "What next?" }] : []),
    ];
    const body = JSON.stringify(
      h.route === "memory-compact"
        ? { session_id: session, messages, trigger_tokens: 1000 }
        : { session_id: session, messages },
    );
    if (new TextEncoder().encode(body).length <= maxBytes) return body;
    chars = Math.floor(chars * 0.95);
  }
}

export async function runHostile(sql: Sql, url: string, corpus: Corpus): Promise<HostileResult> {
  const other = corpus.tenants[0];
  if (!other) throw new Error("no tenants");
  const env = benchEnv(url);
  // The suite times its own requests and the worker drain each 202 kicks. Jobs the earlier suites
  // left queued (the graph suite's embeddings for a remote provider the bench does not have, the
  // background suite's insights) would be drained first, failing and retrying, so they go.
  const left = await sql<{ kind: string }[]>`
    delete from public.memory_jobs where status in ('queued', 'running') returning kind`;
  if (left.length > 0) log(`hostile: removed ${left.length} jobs earlier suites left queued`);
  const server = await startServer({
    port: 0,
    databaseUrl: url,
    jwtSecret: env.SUPABASE_JWT_SECRET,
    env: { DB_POOL_MAX: "10" },
    worker: false, // the queue is drained by the kick after each 202, in this process
    scheduler: false,
    logRequests: false,
    log: () => {},
  });
  const probeToken = await signUserToken(other.id);
  const probe = async () => {
    const t0 = now();
    const res = await fetch(`${server.functionsUrl}/memory?limit=1`, {
      headers: { authorization: `Bearer ${probeToken}` },
    });
    await res.text();
    if (res.status !== 200) throw new Error(`GET memory answered ${res.status}`);
    return now() - t0;
  };
  /** Probes one after the other until `until` settles; returns their latencies. */
  const probeWhile = async (until: Promise<unknown>) => {
    let done = false;
    void until.finally(() => (done = true));
    const ms: number[] = [];
    while (!done) ms.push(await probe());
    return ms;
  };

  const rows: { name: string; bodyKb: number; requestMs: number; status: number; during: Summary; probes: number }[] =
    [];
  let baseline: Summary;
  try {
    for (let i = 0; i < 10; i++) await probe(); // warm-up
    const base: number[] = [];
    for (let i = 0; i < 50; i++) base.push(await probe());
    baseline = summarize(base);
    const limits = {
      "memory-compact": server.config.maxCompactBodyBytes,
      "memory-extract": server.config.maxExtractBodyBytes,
    };
    const cases = [
      ...HOSTILE.map((h) => ({ h, bytes: limits[h.route] })),
      { h: HOSTILE[2]!, bytes: 100 * 1024 },
    ];
    for (const { h, bytes } of cases) {
      const tenant = crypto.randomUUID(); // a tenant per request: the heavy rate limit is 20 at once
      const token = await signUserToken(tenant);
      const body = bodyFor(h, bytes, `bench-hostile-${crypto.randomUUID()}`);
      const t0 = now();
      const work = (async () => {
        const res = await fetch(`${server.functionsUrl}/${h.route}`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body,
        });
        const answer = await res.json();
        if (h.route === "memory-extract" && res.status === 202) {
          // The worker drain the 202 kicked runs in this process: wait for the job to end.
          const giveUp = now() + 120_000;
          for (;;) {
            const [job] = await sql<
              { status: string }[]
            >`select status from public.memory_jobs where id = ${answer.job_id}`;
            if (job && (job.status === "done" || job.status === "dead")) break;
            if (now() > giveUp) throw new Error(`extract job ${answer.job_id} still ${job?.status} after 120 s`);
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
        }
        return { status: res.status, ms: now() - t0 };
      })();
      const during = await probeWhile(work);
      const outcome = await work;
      const name = bytes === limits[h.route] ? h.name : `${h.name}, 100 KB`;
      rows.push({
        name,
        bodyKb: round(new TextEncoder().encode(body).length / 1024, 0),
        requestMs: round(outcome.ms, 1),
        status: outcome.status,
        during: summarize(during),
        probes: during.length,
      });
      log(
        `${name}: ${fmt(outcome.ms, 0)} ms (${outcome.status}); other tenant's GET max ${
          fmt(summarize(during).max)
        } ms`,
      );
    }
    rows.push(await burst(corpus, server.functionsUrl, probeWhile));
  } finally {
    await server.close();
  }
  const table = [
    `## hostile requests: another tenant's latency (GET memory?limit=1, one after the other, same local server) while one tenant's request runs; baseline p50/p95/max ${
      fmt(baseline!.p50)
    }/${fmt(baseline!.p95)}/${fmt(baseline!.max)} ms`,
    formatTable(
      ["request", "body KB", "status", "request ms", "other tenant p50 ms", "p95 ms", "max ms", "probes"],
      rows.map((
        r,
      ) => [
        r.name,
        String(r.bodyKb),
        String(r.status),
        fmt(r.requestMs, 1),
        fmt(r.during.p50),
        fmt(r.during.p95),
        fmt(r.during.max),
        String(r.probes),
      ]),
    ),
  ].join("\n");
  return { table, baseline: baseline!, rows };
}
