// The longest stretch each step of memory-extract (and its worker's claim) holds the event loop on
// the largest transcript the limits let in: 18,000 short messages (inside MAX_JSON_ITEMS), one
// message of 80,000 keys, and 8 MB of Greek prose for the look-alike fold. A probe timer re-arms
// itself with setTimeout(0) while a step runs; the longest gap between two of its turns is the
// longest time another tenant's request could have waited behind that step. On a shared, loaded
// machine that gap is mostly other processes' turns, so the CPU this process spent in its costliest
// gap is printed too: the figure to compare (docs/operations.md#json-items).
// Run: deno run -A --config supabase/functions/deno.json bench/event-loop-stretches.ts [rounds]
import { checkJsonText } from "../supabase/functions/_shared/json-text.ts";
import { MAX_JSON_DEPTH, MAX_JSON_ITEMS, parseJsonBody } from "../supabase/functions/_shared/http.ts";
import { ExtractRequestSchema } from "../supabase/functions/memory-extract/handler.ts";
import { redactMessages } from "../supabase/functions/_shared/redact-json.ts";
import { prefixDigests } from "../supabase/functions/memory-extract/transcript-prefix.ts";
import { nulPath } from "../supabase/functions/_shared/unsafe-characters.ts";
import { redactSecrets } from "../supabase/functions/_shared/redact.ts";
import { ExtractJobPayloadSchema, extractStated } from "../supabase/functions/_shared/extraction.ts";
import { cpuUsage } from "node:process";

const cpuMs = () => {
  const u = cpuUsage();
  return (u.user + u.system) / 1000;
};

/** The longest gap between two turns of a probe timer while `work` runs, and the work's own time. */
async function longestStretch(work: () => unknown): Promise<{ longest: number; cpu: number; total: number }> {
  let longest = 0;
  let cpu = 0; // the most CPU time (this process's, all threads) one gap took: what load on the machine does not add
  let last = performance.now();
  let lastCpu = cpuMs();
  let running = true;
  const probe = () => {
    const t = performance.now();
    const c = cpuMs();
    longest = Math.max(longest, t - last);
    cpu = Math.max(cpu, c - lastCpu);
    last = t;
    lastCpu = c;
    if (running) setTimeout(probe, 0);
  };
  setTimeout(probe, 0);
  const t0 = performance.now();
  await work();
  const total = performance.now() - t0;
  running = false;
  await new Promise((r) => setTimeout(r, 5));
  return { longest, cpu, total };
}

const transcript = {
  session_id: "s-stretch",
  messages: Array.from(
    { length: 18_000 },
    (_, i) => ({ role: i % 2 ? "assistant" : "user", content: `message ${i} ok` }),
  ),
};
const oneLarge = {
  session_id: "s-stretch",
  messages: [{
    role: "user",
    content: "hi",
    x: Object.fromEntries(Array.from({ length: 80_000 }, (_, i) => [`k${i}`, i])),
  }],
};
const GREEK = "Η γρήγορη καφέ αλεπού πηδάει πάνω από τον τεμπέλη σκύλο και τρέχει στο δάσος. ";
const prose = GREEK.repeat(Math.floor(4_000_000 / GREEK.length)); // 8 MB as UTF-8

const rows: [string, string, number, number, number][] = [];
const ROUNDS = Number(Deno.args[0] ?? 3);
for (const [name, body] of [["18,000 short messages", transcript], ["one message of 80,000 keys", oneLarge]] as const) {
  const text = JSON.stringify(body);
  const items = checkJsonText(text, MAX_JSON_DEPTH, false, MAX_JSON_ITEMS);
  if (items.tooMany) throw new Error(`${name}: over MAX_JSON_ITEMS`);
  const run = async (step: string, work: () => unknown) => {
    for (let round = 0; round < ROUNDS; round++) {
      const r = await longestStretch(work);
      rows.push([name, `${step} #${round + 1}`, r.longest, r.cpu, r.total]);
    }
  };
  await run("item scan (checkJsonText)", () => checkJsonText(text, MAX_JSON_DEPTH, false, MAX_JSON_ITEMS));
  let parsed: unknown;
  await run("JSON.parse of the body", () => (parsed = JSON.parse(text)));
  const request = () =>
    new Request("http://local/memory-extract", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: text,
    });
  await run("parseJsonBody (scan, parse, schema)", () => parseJsonBody(request(), ExtractRequestSchema, 8 << 20));
  await run("NUL walk (nulPath)", () => nulPath((parsed as typeof body).messages));
  await run("schema (zod, with the NUL walk)", () => ExtractRequestSchema.safeParse(parsed));
  let redacted: unknown[] = [];
  await run("redaction (redactMessages)", async () => (redacted = (await redactMessages(body.messages)).messages));
  await run("digests (prefixDigests)", async () => await prefixDigests(redacted));
  const payload = JSON.stringify({ ...body, messages: redacted });
  await run("worker's claim parse", () => JSON.parse(payload));
  const queued = ExtractJobPayloadSchema.parse(JSON.parse(payload));
  await run("worker: payload schema, rules", () => {
    extractStated(ExtractJobPayloadSchema.parse(queued), { namespaceRoot: "bench", categories: [] });
  });
}
for (let round = 0; round < ROUNDS; round++) {
  const r = await longestStretch(() => redactSecrets(prose));
  rows.push(["8 MB of Greek prose", `redactSecrets (look-alike fold) #${round + 1}`, r.longest, r.cpu, r.total]);
}
for (const [input, step, longest, cpu, total] of rows) {
  console.log(
    `${input.padEnd(28)} ${step.padEnd(34)} longest ${longest.toFixed(0).padStart(5)} ms (CPU ${
      cpu.toFixed(0).padStart(5)
    } ms)  total ${total.toFixed(0).padStart(5)} ms`,
  );
}
Deno.exit(0);
