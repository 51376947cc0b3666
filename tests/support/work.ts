// Counting the work of a text path (tests/support/work_meter.ts says what is counted) in a child
// process: the counter needs V8 flags (natives syntax, for regexes with a backtrack limit; no
// regexp optimization) that the test process does not run with. Counts, not times: the same
// code on the same text gives the same count on a loaded machine as on an idle one.

import { BACKTRACKS_PER_CHAR, GROWTH_PER_16X } from "./work_limits.ts";

/** What the child reports for one hostile text, at each size. */
export interface ShapeWork {
  /** Work counted for the whole run (backtracks, regex calls, characters scanned). */
  work: number[];
  /** The regex call with the most backtracks per character it could read, and that number. */
  densest: { perChar: number; regex: string }[];
}

/** Runs workloads of tests/support/linear_workloads.ts on each of their hostile texts at each size. */
export async function measureWork(
  workloads: string[],
  sizes: number[],
): Promise<Record<string, Record<string, ShapeWork>>> {
  const child = new URL("./work_child.ts", import.meta.url).pathname;
  const config = new URL("../../supabase/functions/deno.json", import.meta.url).pathname;
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--config",
      config,
      "--v8-flags=--allow-natives-syntax,--no-regexp-optimization",
      child,
      sizes.join(","),
      ...workloads,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (code !== 0) {
    throw new Error(
      `${workloads.join(", ")}: the counting child failed (${code}): ${new TextDecoder().decode(stderr).slice(-2000)}`,
    );
  }
  return JSON.parse(new TextDecoder().decode(stdout));
}

/**
 * Measures workloads at sizes growing 16-fold (in one child) and fails at the first hostile text
 * whose work grows super-linearly or whose densest regex call re-reads what it scanned. Returns the
 * counts, one line a text.
 */
export async function assertLinearWork(workloads: string[], sizes: number[]): Promise<string> {
  const lines: string[] = [];
  for (const [workload, counts] of Object.entries(await measureWork(workloads, sizes))) {
    lines.push(...checkWorkload(workload, counts, sizes));
  }
  return lines.join("\n");
}

function checkWorkload(workload: string, counts: Record<string, ShapeWork>, sizes: number[]): string[] {
  const lines: string[] = [];
  for (const [shape, { work, densest }] of Object.entries(counts)) {
    const line = `${workload}, ${shape}: ${work.map((w, i) => `${sizes[i]} chars: ${w}`).join(", ")}`;
    lines.push(line);
    for (let i = 1; i < work.length; i++) {
      const step = sizes[i]! / sizes[i - 1]!;
      if (step !== 16) throw new Error(`sizes must grow 16-fold: ${sizes.join(", ")}`);
      if (work[i]! > GROWTH_PER_16X * work[i - 1]!) throw new Error(`super-linear work: ${line}`);
    }
    for (const [i, d] of densest.entries()) {
      if (d.perChar > BACKTRACKS_PER_CHAR) {
        throw new Error(
          `${workload}, ${shape} at ${sizes[i]} chars: ${backtracks(d.perChar)} backtracks a character in ${d.regex}`,
        );
      }
    }
  }
  return lines;
}

/** Past 4 times the bound the child stops counting a call (work_meter.ts): the count is a floor. */
const backtracks = (perChar: number) =>
  perChar > 4 * BACKTRACKS_PER_CHAR ? `more than ${4 * BACKTRACKS_PER_CHAR}` : perChar.toFixed(0);
