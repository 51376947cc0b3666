// SVG line charts drawn by hand (no plotting library): latency vs corpus size, recall vs ef_search.
import { readResults, RESULTS_DIR } from "./report.ts";
import type { RetrievalResult } from "./suites/retrieval.ts";

export interface Series {
  name: string;
  points: [number, number][];
  dashed?: boolean;
}

const COLORS = [
  "#1f77b4",
  "#d62728",
  "#2ca02c",
  "#ff7f0e",
  "#9467bd",
  "#8c564b",
  "#e377c2",
  "#17becf",
  "#7f7f7f",
  "#bcbd22",
];

function esc(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

export function lineChart(
  opts: {
    title: string;
    xLabel: string;
    yLabel: string;
    series: Series[];
    logX?: boolean;
    yMin?: number;
    yMax?: number;
    xTicks?: number[];
  },
): string {
  const W = 760, H = 440, L = 70, R = 250, T = 40, B = 60;
  const pw = W - L - R, ph = H - T - B;
  const xs = opts.series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = opts.series.flatMap((s) => s.points.map((p) => p[1])).filter((y) => Number.isFinite(y));
  const fx = (x: number) => (opts.logX ? Math.log10(x) : x);
  const x0 = Math.min(...xs.map(fx)), x1 = Math.max(...xs.map(fx));
  const y0 = opts.yMin ?? 0, y1 = opts.yMax ?? Math.max(1e-9, ...ys) * 1.1;
  const px = (x: number) => L + (x1 === x0 ? pw / 2 : ((fx(x) - x0) / (x1 - x0)) * pw);
  const py = (y: number) => T + ph - ((y - y0) / (y1 - y0 || 1)) * ph;
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
  );
  out.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  out.push(`<text x="${L}" y="22" font-size="15" font-weight="bold">${esc(opts.title)}</text>`);
  for (let i = 0; i <= 5; i++) {
    const y = y0 + ((y1 - y0) * i) / 5;
    out.push(`<line x1="${L}" x2="${L + pw}" y1="${py(y)}" y2="${py(y)}" stroke="#e5e5e5"/>`);
    out.push(`<text x="${L - 6}" y="${py(y) + 4}" text-anchor="end">${y >= 10 ? y.toFixed(0) : y.toFixed(2)}</text>`);
  }
  for (const x of opts.xTicks ?? [...new Set(xs)].sort((a, b) => a - b)) {
    out.push(`<line x1="${px(x)}" x2="${px(x)}" y1="${T}" y2="${T + ph}" stroke="#f0f0f0"/>`);
    out.push(`<text x="${px(x)}" y="${T + ph + 16}" text-anchor="middle">${x >= 1000 ? `${x / 1000}k` : x}</text>`);
  }
  out.push(
    `<line x1="${L}" x2="${L + pw}" y1="${T + ph}" y2="${
      T + ph
    }" stroke="black"/><line x1="${L}" x2="${L}" y1="${T}" y2="${T + ph}" stroke="black"/>`,
  );
  out.push(`<text x="${L + pw / 2}" y="${H - 18}" text-anchor="middle">${esc(opts.xLabel)}</text>`);
  out.push(`<text transform="translate(18 ${T + ph / 2}) rotate(-90)" text-anchor="middle">${esc(opts.yLabel)}</text>`);
  opts.series.forEach((s, i) => {
    const c = COLORS[i % COLORS.length];
    const pts = s.points.filter((p) => Number.isFinite(p[1])).sort((a, b) => a[0] - b[0]);
    if (pts.length) {
      out.push(
        `<polyline fill="none" stroke="${c}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ""} points="${
          pts.map((p) => `${px(p[0]).toFixed(1)},${py(p[1]).toFixed(1)}`).join(" ")
        }"/>`,
      );
      for (const p of pts) {
        out.push(`<circle cx="${px(p[0]).toFixed(1)}" cy="${py(p[1]).toFixed(1)}" r="3" fill="${c}"/>`);
      }
    }
    const ly = T + 10 + i * 18;
    out.push(
      `<line x1="${L + pw + 15}" x2="${L + pw + 40}" y1="${ly}" y2="${ly}" stroke="${c}" stroke-width="2"${
        s.dashed ? ' stroke-dasharray="6 4"' : ""
      }/>`,
    );
    out.push(`<text x="${L + pw + 46}" y="${ly + 4}">${esc(s.name)}</text>`);
  });
  out.push("</svg>");
  return out.join("\n") + "\n";
}

/** Redraws bench/results/latency-vs-size.svg and recall-vs-ef_search.svg from the results files. */
export async function renderCharts(): Promise<string[]> {
  const files = await readResults();
  const bySize = files.filter((f) => /^retrieval-[0-9a-z]+\.json$/.test(f.name)).map((f) => ({
    rows: Number(f.data.rows),
    r: f.data.result as RetrievalResult,
  })).filter((x) => x.r?.latency);
  const written: string[] = [];
  if (bySize.length) {
    const series: Series[] = [];
    const add = (name: string, pick: (r: RetrievalResult) => number | undefined, dashed = false) =>
      series.push({ name, dashed, points: bySize.map((b) => [b.rows, pick(b.r) ?? NaN] as [number, number]) });
    const lat = (r: RetrievalResult, sc: string, clients: number, side: string, fn = "match_memories") =>
      r.latency.find((l) => l.scenario === sc && l.clients === clients && l.side === side && l.fn === fn)?.summary;
    add("mix, 1 client p50", (r) => lat(r, "mix", 1, "client")?.p50);
    add("mix, 1 client p95", (r) => lat(r, "mix", 1, "client")?.p95, true);
    add("mix, 8 clients p50", (r) => lat(r, "mix", 8, "client")?.p50);
    add("mix, 8 clients p95", (r) => lat(r, "mix", 8, "client")?.p95, true);
    add("tenant-wide p50 (server)", (r) => lat(r, "tenant-wide", 1, "server")?.p50);
    add("tenant-wide naive p50 (server)", (r) => lat(r, "tenant-wide", 1, "server", "naive (seed)")?.p50, true);
    const svg = lineChart({
      title: "match_memories latency vs corpus size",
      xLabel: "corpus rows (log scale)",
      yLabel: "ms",
      series,
      logX: true,
    });
    await Deno.writeTextFile(`${RESULTS_DIR}latency-vs-size.svg`, svg);
    written.push("latency-vs-size.svg");
  }
  // Recall vs ef_search: the largest size measured.
  const latest = bySize.sort((a, b) => b.rows - a.rows)[0];
  if (latest) {
    const r = latest.r;
    const series: Series[] = [];
    for (const sc of r.scenarios) {
      for (const mode of ["hnsw, relaxed_order", "hnsw, iterative off"] as const) {
        series.push({
          name: `${sc.name} ${mode === "hnsw, relaxed_order" ? "relaxed" : "off"}`,
          dashed: mode !== "hnsw, relaxed_order",
          points: r.recall.filter((p) => p.scenario === sc.name && p.mode === mode).map((p) =>
            [p.efSearch, p.recallAt15] as [number, number]
          ),
        });
      }
    }
    const svg = lineChart({
      title: `recall@15 of the HNSW path vs hnsw.ef_search (${latest.rows} rows)`,
      xLabel: "hnsw.ef_search",
      yLabel: "recall@15 vs exact",
      series,
      yMin: 0,
      yMax: 1.02,
      xTicks: r.efSearchValues,
    });
    await Deno.writeTextFile(`${RESULTS_DIR}recall-vs-ef_search.svg`, svg);
    written.push("recall-vs-ef_search.svg");
  }
  return written;
}

if (import.meta.main) console.log(await renderCharts());
