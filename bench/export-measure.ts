// Measures one export of the big tenant (bench/export-load.ts) through the HTTP API of a running
// local server (scripts/serve.ts), while the five small tenants retrieve in a loop: the export's
// status, time to its first byte (the copy and the first page), total time, bytes, and whether the
// body is whole; every 250 ms the copy's size on disk (memory_private.export_rows), the server's
// resident memory (VmRSS of SERVER_PID) and the oldest backend_xmin's age; the small tenants'
// retrievals before and during the export counted by latency band.
// deno run -A --config supabase/functions/deno.json bench/export-measure.ts <db url> <functions url> <server pid> <json|markdown|tar>
import postgres from "postgres";
import { LOCAL_DEV_JWT_SECRET, signLocalToken } from "../scripts/serve/local_tokens.ts";
import { BIG_TENANT, SMALL_TENANTS } from "./export-tenants.ts";

const [dbUrl, fnUrl, serverPid, format = "json"] = Deno.args;
const sql = postgres(dbUrl!, { max: 2, onnotice: () => {} });
const token = (sub: string) =>
  signLocalToken(LOCAL_DEV_JWT_SECRET, { role: "authenticated", sub, aud: "authenticated" });
const rss = async () => {
  const status = await Deno.readTextFile(`/proc/${serverPid}/status`);
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
};

interface Sample {
  t: number;
  copyMb: number;
  rssMb: number;
  xminAge: number;
}
const samples: Sample[] = [];
let sampling = true;
const t0 = performance.now();
const sampler = (async () => {
  while (sampling) {
    const [row] = await sql<{ mb: number; age: number }[]>`
      select pg_total_relation_size('memory_private.export_rows')::float8 / 1048576 as mb,
             coalesce((select max(age(backend_xmin)) from pg_stat_activity where backend_xmin is not null), 0)::int as age`;
    samples.push({ t: performance.now() - t0, copyMb: row!.mb, rssMb: await rss(), xminAge: row!.age });
    await new Promise((r) => setTimeout(r, 250));
  }
})();

/** The small tenants' retrievals, each with its latency, from `from` until `stop()`. */
const latencies: { t: number; ms: number; status: number }[] = [];
let retrieving = true;
const retrievers = SMALL_TENANTS.map(async (tenant, i) => {
  const auth = `Bearer ${await token(tenant)}`;
  for (let n = 0; retrieving; n++) {
    const start = performance.now();
    const res = await fetch(`${fnUrl}/memory-retrieve`, {
      method: "POST",
      headers: { authorization: auth, "content-type": "application/json" },
      body: JSON.stringify({ message: `how do we run the migrations checks ${i} ${n % 7}`, project: "task_forge" }),
    });
    await res.arrayBuffer();
    latencies.push({ t: start - t0, ms: performance.now() - start, status: res.status });
    await new Promise((r) => setTimeout(r, 100));
  }
});

function bands(from: number, to: number) {
  const rows = latencies.filter((l) => l.t >= from && l.t < to);
  const ms = rows.map((l) => l.ms).sort((a, b) => a - b);
  return {
    requests: rows.length,
    not_200: rows.filter((l) => l.status !== 200).length,
    over_100ms: ms.filter((x) => x > 100).length,
    over_500ms: ms.filter((x) => x > 500).length,
    over_1000ms: ms.filter((x) => x > 1000).length,
    over_5000ms: ms.filter((x) => x > 5000).length,
    p50_ms: Math.round(ms[Math.floor(ms.length / 2)] ?? 0),
    max_ms: Math.round(ms.at(-1) ?? 0),
  };
}

await new Promise((r) => setTimeout(r, 20_000)); // the small tenants' baseline
const exportStart = performance.now() - t0;
const query = format === "json" ? "format=json" : "format=markdown";
const res = await fetch(`${fnUrl}/memory/export?${query}`, {
  headers: {
    authorization: `Bearer ${await token(BIG_TENANT)}`,
    ...(format === "tar" ? { accept: "application/x-tar" } : {}),
  },
});
const firstByte = performance.now() - t0 - exportStart;
let bytes = 0;
let tail = new Uint8Array();
let error: string | undefined;
if (res.body) {
  try {
    for await (const chunk of res.body) {
      bytes += chunk.length;
      tail = chunk.slice(-200);
    }
  } catch (err) {
    error = String(err);
  }
}
const exportEnd = performance.now() - t0;
await new Promise((r) => setTimeout(r, 5_000));
retrieving = false;
sampling = false;
await Promise.all([sampler, ...retrievers]);
const during = samples.filter((s) => s.t >= exportStart && s.t <= exportEnd);
const peak = (f: (s: Sample) => number) => Math.round(Math.max(0, ...during.map(f)) * 10) / 10;
const before = samples.filter((s) => s.t < exportStart);
console.log(JSON.stringify(
  {
    format,
    status: res.status,
    retry_after: res.headers.get("retry-after"),
    first_byte_s: Math.round(firstByte / 100) / 10,
    total_s: Math.round((exportEnd - exportStart) / 100) / 10,
    bytes,
    tail: new TextDecoder().decode(tail).slice(-120),
    error,
    copy_peak_mb: peak((s) => s.copyMb),
    copy_after_mb: Math.round((samples.at(-1)?.copyMb ?? 0) * 10) / 10,
    rss_before_mb: Math.round(Math.max(0, ...before.map((s) => s.rssMb))),
    rss_peak_mb: peak((s) => s.rssMb),
    xmin_age_peak: peak((s) => s.xminAge),
    retrieval_before: bands(0, exportStart),
    retrieval_during: bands(exportStart, exportEnd),
  },
  null,
  1,
));
await sql.end();
