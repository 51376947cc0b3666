// Small shared helpers for the benchmark harness: seeded PRNG, statistics, timing, machine info.

/** sfc32-style 32-bit PRNG seeded through splitmix32; deterministic across runs and platforms. */
export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;
  private spare: number | null = null;

  constructor(...seeds: number[]) {
    let h = 0x9e3779b9;
    for (const s of seeds) h = splitmix32(h ^ Math.imul(s | 0, 0x85ebca6b));
    this.a = splitmix32(h + 1);
    this.b = splitmix32(h + 2);
    this.c = splitmix32(h + 3);
    this.d = splitmix32(h + 4) | 1;
    for (let i = 0; i < 12; i++) this.next();
  }

  /** Uniform in [0, 1). */
  next(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return (t >>> 0) / 4294967296;
  }

  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  pick<T>(items: readonly T[]): T {
    const v = items[this.int(items.length)];
    if (v === undefined) throw new Error("pick from an empty list");
    return v;
  }

  /** Standard normal (Box-Muller, caches the second value). */
  gauss(): number {
    if (this.spare !== null) {
      const s = this.spare;
      this.spare = null;
      return s;
    }
    let u = this.next();
    while (u <= 1e-12) u = this.next();
    const v = this.next();
    const r = Math.sqrt(-2 * Math.log(u));
    this.spare = r * Math.sin(2 * Math.PI * v);
    return r * Math.cos(2 * Math.PI * v);
  }

  /** RFC 4122 version-4 shaped UUID from the stream. */
  uuid(): string {
    const hex: string[] = [];
    for (let i = 0; i < 16; i++) hex.push(this.int(256).toString(16).padStart(2, "0"));
    hex[6] = "4" + (hex[6] ?? "00").slice(1);
    hex[8] = ((parseInt(hex[8] ?? "00", 16) & 0x3f) | 0x80).toString(16);
    return `${hex.slice(0, 4).join("")}-${hex.slice(4, 6).join("")}-${hex.slice(6, 8).join("")}-${
      hex.slice(8, 10).join("")
    }-${hex.slice(10).join("")}`;
  }
}

export function splitmix32(x: number): number {
  x = (x + 0x9e3779b9) | 0;
  x = Math.imul(x ^ (x >>> 16), 0x21f0aaad);
  x = Math.imul(x ^ (x >>> 15), 0x735a2d97);
  return (x ^ (x >>> 15)) >>> 0;
}

/** FNV-1a 32-bit hash of a string (stable seeds from names). */
export function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

export function normalize(v: Float32Array): Float32Array {
  let n = 0;
  for (let i = 0; i < v.length; i++) n += (v[i] ?? 0) * (v[i] ?? 0);
  n = Math.sqrt(n) || 1;
  for (let i = 0; i < v.length; i++) v[i] = (v[i] ?? 0) / n;
  return v;
}

export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let d = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] ?? 0, y = b[i] ?? 0;
    d += x * y;
    na += x * x;
    nb += y * y;
  }
  return d / (Math.sqrt(na) * Math.sqrt(nb) || 1);
}

/** pgvector text form with 6 decimals (enough for cosine at 1e-5). */
export function vectorLiteral(v: ArrayLike<number>): string {
  let s = "[";
  for (let i = 0; i < v.length; i++) {
    if (i) s += ",";
    s += (v[i] ?? 0).toFixed(6);
  }
  return s + "]";
}

export function parseVector(text: string): Float32Array {
  const parts = text.replace(/^\[|\]$/g, "").split(",");
  const out = new Float32Array(parts.length);
  parts.forEach((p, i) => (out[i] = Number(p)));
  return out;
}

export interface Summary {
  n: number;
  mean: number;
  p50: number;
  p95: number;
  p99: number;
  min: number;
  max: number;
}

/** Nearest-rank percentiles (p99 of fewer than 100 samples is the max). */
export function summarize(samples: readonly number[]): Summary {
  if (samples.length === 0) return { n: 0, mean: NaN, p50: NaN, p95: NaN, p99: NaN, min: NaN, max: NaN };
  const s = [...samples].sort((a, b) => a - b);
  const at = (p: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? NaN;
  const mean = s.reduce((x, y) => x + y, 0) / s.length;
  return {
    n: s.length,
    mean: round(mean),
    p50: round(at(50)),
    p95: round(at(95)),
    p99: round(at(99)),
    min: round(s[0] ?? NaN),
    max: round(s[s.length - 1] ?? NaN),
  };
}

export function round(x: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

export function now(): number {
  return performance.now();
}

export function log(msg: string): void {
  const t = new Date().toISOString().slice(11, 19);
  console.error(`[bench ${t}] ${msg}`);
}

/** Runs fn over items with `workers` concurrent loops; returns per-call ms and wall time. */
export async function runConcurrent<T>(
  items: readonly T[],
  workers: number,
  fn: (item: T, worker: number) => Promise<number>,
): Promise<{ ms: number[]; wallMs: number }> {
  const ms: number[] = [];
  let next = 0;
  const t0 = now();
  await Promise.all(Array.from({ length: workers }, async (_, w) => {
    while (next < items.length) {
      const item = items[next++] as T;
      ms.push(await fn(item, w));
    }
  }));
  return { ms, wallMs: now() - t0 };
}

/** Pads a table of strings for the terminal. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (r: readonly string[]) => r.map((c, i) => c.padEnd(widths[i] ?? 0)).join("  ").trimEnd();
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}

/** Markdown version of the same table. */
export function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const esc = (c: string) => c.replace(/\|/g, "\\|");
  return [
    `| ${header.map(esc).join(" | ")} |`,
    `|${header.map(() => "---").join("|")}|`,
    ...rows.map((r) => `| ${r.map(esc).join(" | ")} |`),
  ].join("\n");
}

export function fmt(x: number | undefined | null, digits = 2): string {
  if (x === undefined || x === null || Number.isNaN(x)) return "-";
  return x.toFixed(digits);
}

/** A unit vector drawn from a seed (for texts the corpus does not know). */
export function rawVectorFor(seed: number, dim = 512): Float32Array {
  const r = new Rng(seed, 0xab5);
  return normalize(Float32Array.from({ length: dim }, () => r.gauss()));
}
