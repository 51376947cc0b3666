// memory-extract from a test: a POST through the handler (no worker kick), as the tenant's user or
// as service_role acting for it (not rate limited: for tests that post many times), and the
// tenant's extract jobs as stored, oldest first.
import { createHandler } from "../../supabase/functions/memory-extract/handler.ts";
import type { WriteEnv } from "../write_helpers.ts";
import { serviceHeaders, userHeaders } from "./auth.ts";
import type { Sql } from "../../supabase/functions/_shared/db.ts";
import { dbNow } from "./as-of.ts";

export interface ExtractAnswer {
  job_id: string;
  status: string;
  deduplicated: boolean;
  new_messages: number;
  transcript: { count: number; digest: string };
  /** The messages dead parts held, queued again apart (docs/extraction.md#a-message-that-always-kills-its-job). */
  retried?: { job_id: string; status: string; messages: number; tries: number; max_tries: number }[];
  /** The job answered covers the transcript's end given up (docs/extraction.md#a-message-that-always-kills-its-job). */
  given_up?: true;
}

export const chatMessage = (i: number, text = `message ${i} of the session`) => ({
  role: i % 2 ? "assistant" : "user",
  content: text,
});
/** Messages from..from+n of a session whose messages are all chatMessage(i). */
export const chatTranscript = (n: number, from = 0) => Array.from({ length: n }, (_, i) => chatMessage(from + i));

export async function postExtract(
  env: WriteEnv,
  tenant: string,
  body: Record<string, unknown>,
  config: Partial<WriteEnv["config"]> = {},
  as: "user" | "service" = "user",
): Promise<{ status: number; body: ExtractAnswer & { error?: { code: string; message: string } } }> {
  const handler = createHandler({
    ...env.deps,
    config: { ...env.config, ...config },
    kickWorker: () => Promise.resolve(),
  });
  const res = await handler(
    new Request("http://localhost/functions/v1/memory-extract", {
      method: "POST",
      headers: await (as === "user" ? userHeaders : serviceHeaders)(tenant),
      body: JSON.stringify(body),
    }),
  );
  const answer = { status: res.status, body: await res.json() };
  // The next POST's jobs are stamped later than this one's, so extractJobs lists them in the order
  // posted: PGlite's clock counts milliseconds, and jobs of one millisecond fell to id order.
  await dbNow(env.sql);
  return answer;
}

export async function extractJobs(env: WriteEnv, tenant: string) {
  return await env.sql<
    { id: string; status: string; payload: { offset: number; messages: unknown[]; context: unknown[] } }[]
  >`
    select id, status, payload from public.memory_jobs
     where owner_id = ${tenant} and kind = 'extract' order by created_at, id`;
}

/** The part of an extraction request the model is asked to extract from (the context excluded). */
export function newPart(req: { messages: { content: unknown }[] }): string {
  const text = req.messages.map((m) => typeof m.content === "string" ? m.content : "").join("\n");
  const marker = "the new part to review:";
  return text.includes(marker) ? text.slice(text.indexOf(marker)) : text;
}

/** A fact of a test session: message i (even) says "Fact i: service i listens on port 8000 + i." */
export const serviceFact = (i: number) => `Service ${i} listens on port ${8000 + i}.`;

/** A fake model's extraction answer for `text` (the new part of a request): a memory for each fact in it. */
export function factAnswer(text: string) {
  return {
    stored: [...text.matchAll(/Fact (\d+):/g)].map((m) => ({
      content: serviceFact(Number(m[1])),
      type: "semantic",
      namespace: "devai/project/shop/services",
      source: "discovery",
      priority: "medium",
      importance: 3,
    })),
    filtered: [],
  };
}

/**
 * The tenant's extract jobs as parts of one transcript sent in pieces: each starts where the last
 * ended, from message 0. Returns how many parts and how many messages they hold.
 */
export async function extractPartsInOrder(sql: Sql, tenant: string): Promise<{ parts: number; messages: number }> {
  const jobs = await sql<{ offset: number; n: number }[]>`
    select (payload ->> 'offset')::int as offset, jsonb_array_length(payload -> 'messages') as n
      from public.memory_jobs where owner_id = ${tenant} and kind = 'extract' order by (payload ->> 'offset')::int`;
  let next = 0;
  for (const job of jobs) {
    if (job.offset !== next) throw new Error(`a part starts at message ${job.offset}, the last ended at ${next}`);
    next += job.n;
  }
  return { parts: jobs.length, messages: next };
}

/** Claude Code transcript lines (JSONL) of a session asking for `n` files, each written with the Write tool. */
export function fileWritingSession(
  n: number,
  ask: (i: number) => string,
  file: (i: number) => { file_path: string; content: string },
): string[] {
  return Array.from({ length: n }, (_, i) => [
    { type: "user", message: { role: "user", content: ask(i) } },
    {
      type: "assistant",
      message: {
        role: "assistant",
        content: [{ type: "tool_use", id: `toolu_${i}`, name: "Write", input: file(i) }],
      },
    },
  ]).flat().map((l) => JSON.stringify(l));
}
