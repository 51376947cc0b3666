// Shared by the consolidation tests: a realistic tenant (15 memories that are 7 facts said several
// ways, as a coding session's extraction leaves them: exact restatements, rephrasings, a version
// bump, a user-stated preference and a model's contrary note), a fake pair judge that answers
// from the pairs' texts, and the memory function's handler with an LLM.
import type { Sql } from "../../supabase/functions/_shared/db.ts";
import { createHandler } from "../../supabase/functions/memory/handler.ts";
import type { Embedder } from "../../supabase/functions/_shared/embeddings.ts";
import type { Llm } from "../../supabase/functions/_shared/llm.ts";
import type { Config } from "../../supabase/functions/_shared/env.ts";
import type { DrainClock } from "../../supabase/functions/_shared/drain-deadline.ts";
import { LOCAL_EMBEDDING_MODEL } from "../../supabase/functions/_shared/env.ts";
import { PAIR_JUDGE_MARK } from "../../supabase/functions/_shared/pair-judge.ts";
import { type ChatRequestBody, type FakeOpenAI, reply } from "../fake_openai.ts";
import { userHeaders } from "./auth.ts";
import { seedMemories, type SeedMemory } from "./seed.ts";

export const NS = "devai/project/shop/notes";
const DAY = 86_400_000;

/** [content, days ago it was learned, user-stated?] */
export const REALISTIC: [string, number, boolean][] = [
  ["The project uses pnpm for installs.", 10, false],
  ["The project uses pnpm for installs", 9, true],
  ["This project uses pnpm for package installs.", 8, false],
  ["The project installs its dependencies with pnpm.", 7, false],
  ["Tests run with vitest in watch mode.", 6, false],
  ["Tests are run with vitest in watch mode.", 5, false],
  ["CI runs on Node 18.", 20, false],
  ["CI runs on Node 20.", 1, false],
  ["Deploys go out on Fridays with blue-green releases.", 4, false],
  ["Deploys go out every Friday as blue-green releases.", 3, false],
  ["The user prefers tabs over spaces.", 30, true],
  ["The user prefers spaces over tabs.", 2, false],
  ["The API server listens on port 3000.", 12, false],
  ["The API server listens on port 3000 in development.", 11, false],
  ["Code review needs two approvals before merge.", 15, false],
];

/** Seeds the realistic tenant (local embedder vectors, learned on the days given); ids in REALISTIC's order. */
export async function seedRealisticTenant(sql: Sql, tenant: string, now = new Date()): Promise<string[]> {
  const rows: SeedMemory[] = REALISTIC.map(([content, , stated]) => ({
    content,
    namespace: NS,
    source: stated ? "user_stated" : "discovery",
    priority: stated ? "highest" : "medium",
  }));
  const seeded = await seedMemories(sql, tenant, rows);
  for (const [i, m] of seeded.entries()) {
    await sql`update public.devai_memories set created_at = ${new Date(
      now.getTime() - REALISTIC[i]![1] * DAY,
    )} where id = ${m.id}`;
  }
  return seeded.map((m) => m.id);
}

/** What the fake model answers for a pair, by the two texts. */
export function realisticVerdict(older: string, newer: string): "same" | "refines" | "contradiction" | "different" {
  const both = (a: RegExp) => a.test(older) && a.test(newer);
  if (/tabs/.test(older) && /tabs/.test(newer)) return "contradiction";
  if (/Node 18/.test(older) && /Node 20/.test(newer)) return "refines";
  if (both(/pnpm/) || both(/vitest/) || both(/Friday/) || both(/port 3000/)) return "same";
  return "different";
}

/** The pairs a judge prompt showed: [older, newer] texts by pair number. */
export function pairsOf(req: ChatRequestBody): [string, string][] {
  const text = String(req.messages.at(-1)?.content ?? "");
  return [...text.matchAll(/\[(\d+)\]\n {2}OLDER: (.*)\n {2}NEWER: (.*)/g)].map((m) => [strip(m[2]!), strip(m[3]!)]);
}
const strip = (s: string) => s.replace(/ \(stated by the user\)$/, "");

/** Scripts the fake LLM's pair judge with `verdict` (default: the realistic tenant's). */
export function scriptJudge(fake: FakeOpenAI, verdict = realisticVerdict): void {
  fake.onChat(
    PAIR_JUDGE_MARK,
    reply.dynamic((req) =>
      reply.json({
        verdicts: pairsOf(req).map(([older, newer], pair) => ({
          pair,
          verdict: verdict(older, newer),
          reason: "test judge",
        })),
      })
    ),
  );
}

/** The judge requests the fake saw, as their pairs. */
export function judgedPairs(fake: FakeOpenAI): [string, string][][] {
  return fake.chatRequests().filter((r) => JSON.stringify(r.body.messages).includes(PAIR_JUDGE_MARK)).map((r) =>
    pairsOf(r.body)
  );
}

/** The memory function with an LLM and the local embedder (what `npm start` runs with a model configured). */
export function memoryWithLlm(
  sql: Sql,
  config: Config,
  llm: Llm | undefined,
  embedder: Embedder,
  clock?: () => Date,
  deadlineClock?: DrainClock,
) {
  const handler = createHandler({ sql, config, embedder, llm, clock, deadlineClock });
  return async (method: string, path: string, as: string, body?: unknown) => {
    const res = await handler(
      new Request(`http://local${path}`, {
        method,
        headers: await userHeaders(as),
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    );
    const text = await res.text();
    // deno-lint-ignore no-explicit-any
    return { status: res.status, body: text ? JSON.parse(text) as any : null };
  };
}

export const LOCAL_EMBEDDING = { provider: "local" as const, model: LOCAL_EMBEDDING_MODEL };

/** Sets memory settings for one test and gives back a function that restores them. */
export async function withSettings(sql: Sql, values: Record<string, number>): Promise<() => Promise<void>> {
  const before = await sql<
    { name: string; value: string }[]
  >`select name, value::text from public.memory_settings where name = any (${Object.keys(values)}::text[])`;
  for (const [name, value] of Object.entries(values)) {
    await sql`update public.memory_settings set value = ${value} where name = ${name}`;
  }
  return async () => {
    for (const b of before) {
      await sql`update public.memory_settings set value = ${b.value}::numeric where name = ${b.name}`;
    }
  };
}
