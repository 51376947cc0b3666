// Theory-of-Mind insights (docs/consolidation.md#insights): after a consolidation run, an 'insight'
// job asks the model what the latest activity says about how the user works (trust, preferences
// that evolve, friction), from at most 5 recent activity items (the change log), 3 new semantic
// memories and 1,000 characters of conversation. 1-3 insights, third person, no pronouns for the
// user or the agent, at most 280 characters each, temperature 0, at most 220 tokens. Stored as
// memory_type 'insight', category 'relationship_dynamic', importance 2, in the user scope; retrieval
// weighs them low (memory-retrieve/rank.ts). At most one run per tenant per insight_interval_hours
// (24); nothing new to read, or nothing said, stores nothing. Without an LLM: skipped.
import { z } from "zod";
import { contentHashSql } from "./memories/record.ts";
import { toVectorLiteral, withTenant } from "./db.ts";
import type { WorkerDeps } from "./drain-queue.ts";
import { completeJobInTx, type Job } from "./jobs.ts";
import type { PromptMessage } from "./llm.ts";
import { redactSecrets } from "./redact.ts";
import { validateContent } from "./writing-constraints.ts";

export const INSIGHT_MARK = "what the latest activity says about how the user works";
export const INSIGHT_CATEGORY = "relationship_dynamic";
export const INSIGHT_IMPORTANCE = 2;
const MAX_ACTIVITY = 5;
const MAX_SEMANTIC = 3;
const MAX_CONVERSATION_CHARS = 1000;
const MAX_TOKENS = 220;

export const InsightOutputSchema = z.object({
  insights: z.array(z.object({
    summary: z.string().trim().min(1).max(600),
    tags: z.array(z.string().trim().min(1).max(40)).max(5).default([]),
  })).max(3),
});

export interface InsightInputs {
  activity: string[];
  semantic: string[];
  conversation: string;
}

export function insightMessages(inputs: InsightInputs): PromptMessage[] {
  const part = (
    title: string,
    lines: string[],
  ) => (lines.length > 0 ? `${title}:\n${lines.map((l) => `- ${l}`).join("\n")}` : "");
  return [
    {
      role: "system",
      content:
        `You keep the long-term memory of a coding agent and note ${INSIGHT_MARK} with it: trust, working style, ` +
        "preferences that change, friction. Give 1-3 insights, each a single third-person statement of at most 280 characters " +
        'about "the user" (call the agent "the agent"; never I, we, you, he, she or they for either), with a few tags. ' +
        "Only what the material shows; an empty list is a fine answer.",
    },
    {
      role: "user",
      content: [
        part("Recent activity", inputs.activity),
        part("New facts", inputs.semantic),
        inputs.conversation ? `Recent conversation:\n${inputs.conversation}` : "",
      ].filter(Boolean).join("\n\n"),
    },
  ];
}

// Third person about two parties: besides the writing constraints' first/second person, no he, she
// or they, which could be either.
const AMBIGUOUS_PRONOUN = /\b(he|him|his|she|her|hers|they|them|their|theirs)\b/i;

/** The insights that may be stored: valid, redacted, not a secret, third person without pronouns. */
export function acceptInsights(
  out: z.infer<typeof InsightOutputSchema>,
): { kept: { content: string; tags: string[] }[]; rejected: number } {
  const kept: { content: string; tags: string[] }[] = [];
  let rejected = 0;
  for (const i of out.insights) {
    const red = redactSecrets(i.summary);
    const v = validateContent("semantic", red.text);
    if (
      red.onlySecret || !v.ok || AMBIGUOUS_PRONOUN.test(v.content) ||
      kept.some((k) => k.content.toLowerCase() === v.content.toLowerCase())
    ) {
      rejected++;
      continue;
    }
    kept.push({ content: v.content, tags: i.tags });
  }
  return { kept, rejected };
}

export async function runInsights(deps: WorkerDeps, job: Job, workerId: string): Promise<void> {
  const tenant = { tenantId: job.owner_id, actor: "worker:insight" };
  const complete = (result: Record<string, unknown>) =>
    withTenant(deps.sql, tenant, (tx) => completeJobInTx(tx, job.id, workerId, result));
  if (!deps.llm) return await complete({ skipped: "no LLM configured" });

  const read = await withTenant(deps.sql, tenant, async (tx) => {
    const [last] = await tx<{ recent: boolean }[]>`
      select exists (select 1 from public.memory_jobs
                      where kind = 'insight' and status = 'done' and id <> ${job.id} and (result ->> 'skipped') is null
                        and finished_at > now() - make_interval(secs => public.memory_setting('insight_interval_hours')::float8 * 3600)) as recent`;
    if (last!.recent) return undefined;
    const activity = await tx<{ line: string }[]>`
      select c.event || ': ' || coalesce(c.summary, '') as line from public.memory_change_log c
       where c.meta ->> 'memory_type' is distinct from 'insight'
       order by c.ts desc, c.revision desc limit ${MAX_ACTIVITY}`;
    const semantic = await tx<{ content: string }[]>`
      select content from public.devai_memories
       where memory_type = 'semantic' and is_valid and state = 'active' and source is distinct from 'conversation'
         and created_at > now() - make_interval(secs => public.memory_setting('insight_interval_hours')::float8 * 3600)
       order by created_at desc, id limit ${MAX_SEMANTIC}`;
    const turns = await tx<{ role: string; content: string }[]>`
      select metadata ->> 'role' as role, content from public.devai_memories
       where source = 'conversation' and state = 'active'
       order by valid_from desc, (metadata ->> 'seq')::int desc, id desc limit 20`;
    let conversation = "";
    for (const t of turns) {
      const line = `[${t.role}] ${t.content.replace(/\s+/g, " ")}\n`;
      if (conversation.length + line.length > MAX_CONVERSATION_CHARS) {
        conversation = line.slice(-(MAX_CONVERSATION_CHARS - conversation.length)) + conversation;
        break;
      }
      conversation = line + conversation;
    }
    return {
      activity: activity.map((a) => a.line),
      semantic: semantic.map((s) => s.content),
      conversation: conversation.trim(),
    };
  });
  if (!read) return await complete({ skipped: "an insight run happened within insight_interval_hours" });
  if (read.activity.length + read.semantic.length === 0 && !read.conversation) {
    return await complete({ skipped: "nothing new to read" });
  }

  const out = await deps.llm.completeJson(InsightOutputSchema, insightMessages(read), {
    name: "insights",
    temperature: 0,
    maxTokens: MAX_TOKENS,
  });
  const { kept, rejected } = acceptInsights(out.value);
  const vectors = kept.length > 0 ? await deps.embedder.embed(kept.map((k) => k.content)) : [];
  await withTenant(deps.sql, tenant, async (tx) => {
    let stored = 0;
    for (const [i, k] of kept.entries()) {
      const [dup] = await tx`
        select 1 from public.devai_memories
         where memory_type = 'insight' and is_valid and state = 'active' and content_hash = ${
        contentHashSql(tx, k.content)
      } limit 1`;
      if (dup) continue;
      await tx`
        insert into public.devai_memories
          (owner_id, content, embedding, embedding_model, memory_type, namespace, priority, source, importance, pinned, metadata)
        values (${job.owner_id}, ${k.content}, ${
        toVectorLiteral(vectors[i]!)
      }::extensions.vector, ${deps.embedder.model}, 'insight',
                ${`${deps.config.namespaceRoot}/user/insights`}, 'low', 'discovery', ${INSIGHT_IMPORTANCE}, false,
                ${tx.json({ category: INSIGHT_CATEGORY, tags: k.tags, job_id: job.id })})`;
      stored++;
    }
    await completeJobInTx(tx, job.id, workerId, {
      inputs: {
        activity: read.activity.length,
        semantic: read.semantic.length,
        conversation_chars: read.conversation.length,
      },
      insights: stored,
      rejected,
      usage: out.usage,
    });
  });
}
