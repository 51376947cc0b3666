// Child process of tests/support/work.ts: counts the work of workloads on each of their hostile
// texts at the sizes given, and prints {workload: {shape: {work, densest}}} as JSON.
// Usage: deno run -A --v8-flags=--allow-natives-syntax,--no-regexp-optimization work_child.ts <sizes,> <workload>...
import { resetWork, total, work } from "./work_meter.ts"; // first: it patches what it counts
import { WORKLOADS } from "./linear_workloads.ts";
import { BACKTRACKS_PER_CHAR, GROWTH_PER_16X } from "./work_limits.ts";

const [sizeList, ...names] = Deno.args;
const sizes = sizeList!.split(",").map(Number);
const out: Record<string, Record<string, { work: number[]; densest: typeof work.densest[] }>> = {};
let call = 0;
for (const name of names) {
  const workload = WORKLOADS[name];
  if (!workload) throw new Error(`no workload ${name}`);
  const shared = await workload.open?.();
  const counts: typeof out[string] = out[name] = {};
  try {
    for (const [shape, make] of Object.entries(workload.shapes)) {
      counts[shape] = { work: [], densest: [] };
      const measured = counts[shape];
      for (const n of sizes) {
        const text = make(n);
        resetWork();
        await workload.run(text, shared, call++);
        measured.work.push(total());
        measured.densest.push(work.densest);
        // Past a bound the test fails: larger sizes would only take long (quadratic work).
        const [before, now] = measured.work.slice(-2);
        if (work.densest.perChar > BACKTRACKS_PER_CHAR || now! > GROWTH_PER_16X * (before ?? Infinity)) break;
      }
    }
  } finally {
    await workload.close?.(shared);
  }
}
console.log(JSON.stringify(out));
