// Episode compression, part of the nightly consolidation when an LLM is configured
// (docs/consolidation.md#episodes): a session ended more than episode_summary_days ago gets a
// summary of 1-3 sentences (the session's level-1 form, a memory retrieval finds, with derived_from
// edges to the episodes it came from); one ended more than episode_compress_days ago gets its summary
// compressed to one line (level 2, kept on the session row for context assembly). At most
// episode_sessions_per_night sessions a night, within the night's token budget. Raw episodes are
// never rewritten: they stay the record of what was said (TTL retires them).
import { z } from "zod";
import type { BackgroundSettings } from "./background-settings.ts";
import { toVectorLiteral, type Tx } from "./db.ts";
import { insertEdges } from "./edges.ts";
import { renderMessage } from "./extraction-prompt.ts";
import { addUsage, emptyUsage, type Llm, type LlmUsage, type PromptMessage } from "./llm.ts";
import { redactSecrets } from "./redact.ts";
import { stripUnsafeCharacters } from "./unsafe-characters.ts";
import { countTokens } from "./tokens.ts";

export const SESSION_SUMMARY_MARK = "Summarise each numbered session of a coding agent";
export const SESSION_COMPRESS_MARK = "Compress each numbered session summary to one line";
const SESSIONS_PER_SUMMARY_CALL = 4;
const SESSIONS_PER_COMPRESS_CALL = 10;
const TRANSCRIPT_TOKENS = 1500;
const MESSAGE_TOKENS = 200;
const DERIVED_FROM_EPISODES = 20;
const SUMMARY_CONFIDENCE = 0.8;

const SummarySchema = z.object({
  sessions: z.array(z.object({ session: z.number().int(), summary: z.string().trim().min(1).max(600) })).max(20),
});
const CompressSchema = z.object({
  sessions: z.array(z.object({ session: z.number().int(), compressed: z.string().trim().min(1).max(200) })).max(20),
});

interface SessionToSummarise {
  id: string;
  session_id: string;
  namespace: string;
  first_event_at: Date | null;
  transcript: string;
  episode_ids: string[];
}

interface SessionToCompress {
  id: string;
  summary: string;
}

export interface EpisodePlan {
  summarise: SessionToSummarise[];
  compress: SessionToCompress[];
}

export interface EpisodeWork {
  summaries: { session: SessionToSummarise; summary: string; vector: number[] }[];
  compressed: { id: string; compressed: string }[];
  usage: LlmUsage;
  stopped?: "tokens";
}

/** The sessions tonight's run may compress, oldest end first (read in the tenant's transaction). */
export async function planEpisodes(tx: Tx, settings: BackgroundSettings, now: Date): Promise<EpisodePlan> {
  const cap = settings.episodeSessionsPerNight;
  const summarise = cap === 0
    ? []
    : await tx<(Omit<SessionToSummarise, "transcript"> & { messages: { role: string; content: string }[] })[]>`
    select s.id, s.session_id, s.namespace, s.first_event_at,
           array(select m.id from public.devai_memories m
                  where m.session_id = s.session_id and m.source = 'conversation' and m.state = 'active'
                  order by (m.metadata ->> 'seq')::int limit ${DERIVED_FROM_EPISODES}) as episode_ids,
           coalesce((select json_agg(json_build_object('role', e.role, 'content', e.content) order by e.seq)
                       from (select m.metadata ->> 'role' as role, m.content, (m.metadata ->> 'seq')::int as seq
                               from public.devai_memories m
                              where m.session_id = s.session_id and m.source = 'conversation' and m.state = 'active'
                              order by (m.metadata ->> 'seq')::int limit 60) e), '[]') as messages
      from public.memory_sessions s
     where s.ended_at is not null and s.summary is null and s.episode_count > 0
       and s.ended_at < ${now}::timestamptz - make_interval(secs => ${settings.episodeSummaryDays * 86400})
     order by s.ended_at, s.id
     limit ${cap}`;
  const left = cap - summarise.length;
  const compress = left <= 0 ? [] : await tx<SessionToCompress[]>`
    select s.id, s.summary from public.memory_sessions s
     where s.ended_at is not null and s.summary is not null and s.compressed is null
       and s.ended_at < ${now}::timestamptz - make_interval(secs => ${settings.episodeCompressDays * 86400})
     order by s.ended_at, s.id
     limit ${left}`;
  return {
    summarise: summarise.filter((s) => s.messages.length > 0).map(({ messages, ...s }) => ({
      ...s,
      transcript: transcriptOf(messages),
    })),
    compress,
  };
}

/** The session's messages as the model reads them, cut to a budget: its beginning and its end. */
function transcriptOf(messages: { role: string; content: string }[]): string {
  const lines = messages.map((m) => renderMessage(m, MESSAGE_TOKENS));
  if (countTokens(lines.join("\n")) <= TRANSCRIPT_TOKENS) return lines.join("\n");
  const half = TRANSCRIPT_TOKENS / 2;
  const head: string[] = [];
  let used = 0;
  for (const line of lines) {
    if (used + countTokens(line) > half) break;
    head.push(line);
    used += countTokens(line);
  }
  const tail: string[] = [];
  used = 0;
  for (let i = lines.length - 1; i >= head.length; i--) {
    if (used + countTokens(lines[i]!) > half) break;
    tail.unshift(lines[i]!);
    used += countTokens(lines[i]!);
  }
  return [...head, "…", ...tail].join("\n");
}

function summaryMessages(sessions: readonly SessionToSummarise[]): PromptMessage[] {
  return [
    {
      role: "system",
      content:
        `${SESSION_SUMMARY_MARK} in 1-3 sentences of past tense (at most 400 characters): what was worked on, decided, ` +
        "broken and fixed. Third person (the user, the agent), no pronouns for either. Refer to sessions only by their number in `session`.",
    },
    { role: "user", content: sessions.map((s, i) => `[${i}]\n${s.transcript}`).join("\n\n") },
  ];
}

function compressMessages(sessions: readonly SessionToCompress[]): PromptMessage[] {
  return [
    {
      role: "system",
      content: `${SESSION_COMPRESS_MARK} of at most 80 characters in keyword form (e.g. "auth_fix: tz→utc, +test"). ` +
        "Refer to sessions only by their number in `session`.",
    },
    { role: "user", content: sessions.map((s, i) => `[${i}] ${s.summary}`).join("\n") },
  ];
}

// A model's summary is stored and read back into prompts: no secret, none of the characters stored
// text may not hold (unsafe-characters.ts).
const clean = (text: string) => redactSecrets(stripUnsafeCharacters(text).replace(/\s+/g, " ").trim()).text;

/** The model's part (outside any transaction): summaries and one-liners within the token budget. */
export async function compressEpisodes(
  llm: Llm,
  embed: (texts: string[]) => Promise<number[][]>,
  plan: EpisodePlan,
  tokenBudget: number,
): Promise<EpisodeWork> {
  const usage = emptyUsage();
  const fits = (messages: PromptMessage[], answer: number) =>
    usage.totalTokens + messages.reduce((n, m) => n + countTokens(m.content), 0) + answer <= tokenBudget;
  const work: EpisodeWork = { summaries: [], compressed: [], usage };
  const summaries: { session: SessionToSummarise; summary: string }[] = [];
  for (let i = 0; i < plan.summarise.length; i += SESSIONS_PER_SUMMARY_CALL) {
    const batch = plan.summarise.slice(i, i + SESSIONS_PER_SUMMARY_CALL);
    const messages = summaryMessages(batch);
    if (!fits(messages, 150 * batch.length)) {
      return { ...work, summaries: await withVectors(summaries, embed), stopped: "tokens" };
    }
    const out = await llm.completeJson(SummarySchema, messages, { name: "session_summaries" });
    addUsage(usage, out.usage);
    for (const s of out.value.sessions) {
      const session = batch[s.session];
      if (session && !summaries.some((x) => x.session.id === session.id)) {
        summaries.push({ session, summary: clean(s.summary).slice(0, 600) });
      }
    }
  }
  work.summaries = await withVectors(summaries, embed);
  for (let i = 0; i < plan.compress.length; i += SESSIONS_PER_COMPRESS_CALL) {
    const batch = plan.compress.slice(i, i + SESSIONS_PER_COMPRESS_CALL);
    const messages = compressMessages(batch);
    if (!fits(messages, 40 * batch.length)) return { ...work, stopped: "tokens" };
    const out = await llm.completeJson(CompressSchema, messages, { name: "session_one_liners" });
    addUsage(usage, out.usage);
    for (const s of out.value.sessions) {
      const session = batch[s.session];
      if (session && !work.compressed.some((x) => x.id === session.id)) {
        work.compressed.push({ id: session.id, compressed: clean(s.compressed).slice(0, 200) });
      }
    }
  }
  return work;
}

async function withVectors(
  summaries: { session: SessionToSummarise; summary: string }[],
  embed: (texts: string[]) => Promise<number[][]>,
) {
  const kept = summaries.filter((s) => s.summary.length > 0);
  const vectors = kept.length > 0 ? await embed(kept.map((s) => s.summary)) : [];
  return kept.map((s, i) => ({ ...s, vector: vectors[i]! }));
}

/** Stores the night's summaries and one-liners (in the write transaction, as the tenant). */
export async function applyEpisodeWork(
  tx: Tx,
  ownerId: string,
  model: string,
  work: EpisodeWork,
  runId: string,
): Promise<number> {
  let done = 0;
  for (const { session, summary, vector } of work.summaries) {
    const namespace = session.namespace.replace(/\/episodes$/, "") + "/sessions";
    const [row] = await tx<{ id: string }[]>`
      with s as (select id from public.memory_sessions where id = ${session.id} and summary is null for update)
      insert into public.devai_memories
        (owner_id, content, embedding, embedding_model, memory_type, namespace, priority, source, importance, session_id, valid_from, metadata)
      select ${ownerId}, ${summary}, ${
      toVectorLiteral(vector)
    }::extensions.vector, ${model}, 'episodic', ${namespace}, 'low', 'compaction', 2,
             ${session.session_id}, coalesce(${session.first_event_at}::timestamptz, now()),
             ${tx.json({ kind: "session_summary", session_id: session.session_id, run_id: runId })}
        from s
      returning id`;
    if (!row) continue;
    await tx`update public.memory_sessions set summary = ${
      summary.slice(0, 2000)
    }, summary_memory_id = ${row.id}, summarised_at = now() where id = ${session.id}`;
    await insertEdges(
      tx,
      ownerId,
      session.episode_ids.map((e) => ({
        from: row.id,
        to: e,
        type: "derived_from" as const,
        strength: 1,
        confidence: SUMMARY_CONFIDENCE,
        evidence: [{ run_id: runId }],
      })),
    );
    done++;
  }
  for (const c of work.compressed) {
    const updated = await tx`
      update public.memory_sessions set compressed = ${c.compressed}, compressed_at = now() where id = ${c.id} and compressed is null returning id`;
    done += updated.length;
  }
  return done;
}
