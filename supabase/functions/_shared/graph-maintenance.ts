// Nightly graph maintenance, run by the worker for the jobs memory_private.enqueue_graph_maintenance
// queues (one per tenant, kind and night), each capped per tenant per night by memory_settings:
//   enrich  entities with ≥ entity_enrich_min_mentions mentions, no summary and a live memory
//           naming them (at most graph_enrich_per_night): the LLM writes a summary from the live
//           memories that mention them (10 entities per call), and the entity is embedded by
//           "name: summary"; one it leaves out waits ENRICH_RETRY_DAYS before it is offered again
//   causal  consecutive episode pairs of ended sessions not yet checked (at most
//           graph_causal_pairs_per_night ≤ 50, one call): the pairs the LLM says are cause → effect
//           get a causal edge, confidence 0.7, with its reason as evidence
// Without an LLM both complete as skipped and leave their work for a night with one. The model sees
// entities and pairs as numbers mapped back server-side: it cannot name an id. LLM and embedding
// calls happen outside any transaction. docs/graph.md#nightly-maintenance.
import { z } from "zod";
import { type TenantContext, withTenant } from "./db.ts";
import type { WorkerDeps } from "./drain-queue.ts";
import { type GraphEdge, insertEdges } from "./edges.ts";
import { toVectorLiteral } from "./db.ts";
import { renderMessage } from "./extraction-prompt.ts";
import { completeJobInTx, type Job } from "./jobs.ts";
import { addUsage, emptyUsage, type PromptMessage } from "./llm.ts";
import { truncateToTokens } from "./tokens.ts";
import { redactSecrets } from "./redact.ts";
import { stripUnsafeCharacters } from "./unsafe-characters.ts";

export const CAUSAL_CONFIDENCE = 0.7;
const ENTITIES_PER_CALL = 10;
const SNIPPETS_PER_ENTITY = 6;
const SNIPPET_TOKENS = 200;
const PAIR_MESSAGE_TOKENS = 300;
/** An entity the model left out is offered again after this many days (not every night, ahead of the rest). */
export const ENRICH_RETRY_DAYS = 7;

const EnrichOutputSchema = z.object({
  summaries: z.array(z.object({ entity: z.number().int(), summary: z.string().trim().min(1).max(2000) })).max(
    ENTITIES_PER_CALL,
  ),
});
const CausalOutputSchema = z.object({
  causal: z.array(z.object({ pair: z.number().int(), reason: z.string().max(1000).default("") })).max(50),
});

const tenantOf = (job: Job, actor: string): TenantContext => ({ tenantId: job.owner_id, actor });

/** Completes a maintenance job that has nothing to do here (no LLM configured). */
async function completeSkipped(deps: WorkerDeps, job: Job, workerId: string, actor: string): Promise<void> {
  await withTenant(
    deps.sql,
    tenantOf(job, actor),
    (tx) => completeJobInTx(tx, job.id, workerId, { skipped: "no LLM configured" }),
  );
}

export async function enrichEntities(deps: WorkerDeps, job: Job, workerId: string): Promise<void> {
  const actor = "worker:enrich";
  if (!deps.llm) return await completeSkipped(deps, job, workerId, actor);
  const entities = await withTenant(
    deps.sql,
    tenantOf(job, actor),
    (tx) =>
      tx<{ id: string; canonical_name: string; entity_type: string; snippets: string[] }[]>`
      select e.id, e.canonical_name, e.entity_type,
             -- What holds now of it: the links its profile shows (profile_kind: valid, active
             -- facts and active episodes), newest first; a corrected or forgotten memory's text
             -- would be summarised as the entity's.
             array(select m.content from public.memory_entity_links l join public.devai_memories m on m.id = l.memory_id
                    where l.entity_id = e.id and l.profile_kind is not null
                    order by l.profile_at desc, l.memory_id desc limit ${SNIPPETS_PER_ENTITY}) as snippets
        from public.memory_entities e
       where e.summary is null and e.mention_count >= public.memory_setting('entity_enrich_min_mentions')
         -- Counts only grow: an entity only purged or forgotten memories named would be offered
         -- with nothing to say, first by its count, and take the night's places from live ones.
         and exists (select from public.memory_entity_links l where l.entity_id = e.id and l.profile_kind is not null)
         and (e.enrich_attempted_at is null or e.enrich_attempted_at < now() - make_interval(secs => ${
        ENRICH_RETRY_DAYS * 86_400
      }))
       order by e.mention_count desc, e.id
       limit public.memory_setting('graph_enrich_per_night')::integer`,
  );

  const usage = emptyUsage();
  const summaries = new Map<string, string>();
  for (let i = 0; i < entities.length; i += ENTITIES_PER_CALL) {
    const batch = entities.slice(i, i + ENTITIES_PER_CALL);
    const out = await deps.llm.completeJson(EnrichOutputSchema, enrichMessages(batch), { name: "entity_summaries" });
    addUsage(usage, out.usage);
    for (const s of out.value.summaries) {
      const entity = batch[s.entity];
      // A model's summary is stored and read back into prompts: no secret, none of the characters
      // stored text may not hold (redact.ts, unsafe-characters.ts).
      if (entity && !summaries.has(entity.id)) {
        summaries.set(entity.id, redactSecrets(stripUnsafeCharacters(s.summary)).text.slice(0, 2000));
      }
    }
  }
  const ids = [...summaries.keys()];
  const named = entities.filter((e) => summaries.has(e.id));
  const vectors = ids.length > 0
    ? await deps.embedder.embed(named.map((e) => `${e.canonical_name}: ${summaries.get(e.id)}`))
    : [];

  await withTenant(deps.sql, tenantOf(job, actor), async (tx) => {
    // Every entity offered was attempted, summarised or left out: a left-out one waits ENRICH_RETRY_DAYS.
    if (entities.length > 0) {
      await tx`update public.memory_entities set enrich_attempted_at = now() where id = any(${
        entities.map((e) => e.id)
      }::uuid[])`;
    }
    const rows = named.map((e, k) => ({
      id: e.id,
      summary: summaries.get(e.id)!,
      embedding: toVectorLiteral(vectors[k]!),
    }));
    const updated = rows.length === 0 ? [] : await tx`
      update public.memory_entities e
         set summary = r.summary, embedding = r.embedding::extensions.vector, embedding_model = ${deps.embedder.model}
        from json_to_recordset(${tx.json(rows as never)}::json) as r(id uuid, summary text, embedding text)
       where e.id = r.id and e.summary is null
      returning e.id`;
    await completeJobInTx(tx, job.id, workerId, { candidates: entities.length, summarized: updated.length, usage });
  });
}

function enrichMessages(batch: { canonical_name: string; entity_type: string; snippets: string[] }[]): PromptMessage[] {
  const listed = batch.map((e, i) =>
    `[${i}] ${e.canonical_name} (${e.entity_type})\n` +
    e.snippets.map((s) => `  - ${truncateToTokens(s, SNIPPET_TOKENS)}`).join("\n")
  ).join("\n\n");
  return [
    {
      role: "system",
      content:
        "You maintain the long-term memory of a coding agent. For each numbered entity, write a neutral, third-person " +
        "summary of 1-3 sentences (at most 400 characters) of what it is and how it matters in this user's work, using only " +
        "the memories listed under it. Refer to entities only by their number in `entity`. Leave out an entity the memories say nothing about.",
    },
    { role: "user", content: `Entities and the memories that mention them:\n\n${listed}` },
  ];
}

interface Pair {
  from: { id: string; role: string; content: string; seq: number };
  to: { id: string; role: string; content: string; seq: number };
}

export async function inferCauses(deps: WorkerDeps, job: Job, workerId: string): Promise<void> {
  const actor = "worker:causal";
  if (!deps.llm) return await completeSkipped(deps, job, workerId, actor);
  const { pairs, reached } = await withTenant(deps.sql, tenantOf(job, actor), async (tx) => {
    const cap = Number(
      (await tx<{ cap: number }[]>`select public.memory_setting('graph_causal_pairs_per_night')::int as cap`)[0]!.cap,
    );
    const sessions = await tx<{ id: string; session_id: string; checked: number; last: number }[]>`
      select id, session_id, causal_checked_seq as checked, episode_count - 1 as last from public.memory_sessions
       where ended_at is not null and causal_checked_seq < episode_count - 1
       order by ended_at, id limit ${cap}`;
    const out: Pair[] = [];
    // How far each examined session was read, pair or not: a session whose episodes have a gap (a
    // forgotten message) yields no pair there, and must still move on, or it is picked first every
    // night and newer sessions are never checked.
    const reached = new Map<string, number>();
    for (const s of sessions) {
      if (out.length >= cap) break;
      const limit = cap - out.length + 1;
      const eps = await tx<{ id: string; role: string; content: string; seq: number }[]>`
        select id, metadata ->> 'role' as role, content, (metadata ->> 'seq')::int as seq from public.devai_memories
         where session_id = ${s.session_id} and source = 'conversation' and state = 'active' and (metadata ->> 'seq')::int >= ${s.checked}
         order by (metadata ->> 'seq')::int
         limit ${limit}`;
      let i = 0;
      for (; i + 1 < eps.length && out.length < cap; i++) {
        if (eps[i + 1]!.seq === eps[i]!.seq + 1) out.push({ from: eps[i]!, to: eps[i + 1]! });
      }
      // Every episode left was read and paired: the session is checked to its end.
      const readAll = eps.length < limit && i + 1 >= eps.length;
      const last = readAll ? s.last : eps[i]?.seq ?? s.checked;
      if (last > s.checked) reached.set(s.id, last);
    }
    return { pairs: out, reached };
  });

  const out = pairs.length > 0
    ? await deps.llm.completeJson(CausalOutputSchema, causalMessages(pairs), { name: "causal_pairs" })
    : undefined;
  const edges: GraphEdge[] = [];
  for (const c of out?.value.causal ?? []) {
    const pair = pairs[c.pair];
    if (!pair || edges.some((e) => e.from === pair.from.id && e.to === pair.to.id)) continue;
    edges.push({
      from: pair.from.id,
      to: pair.to.id,
      type: "causal",
      strength: 1,
      confidence: CAUSAL_CONFIDENCE,
      evidence: [{ reason: c.reason.slice(0, 500), job_id: job.id }],
    });
  }
  // Every pair shown was checked, causal or not: the next night starts after the last episode read.
  await withTenant(deps.sql, tenantOf(job, actor), async (tx) => {
    const made = await insertEdges(tx, job.owner_id, edges);
    for (const [id, seq] of reached) {
      await tx`update public.memory_sessions set causal_checked_seq = greatest(causal_checked_seq, ${seq}) where id = ${id}`;
    }
    await completeJobInTx(tx, job.id, workerId, {
      pairs: pairs.length,
      causal_edges: made,
      usage: out?.usage ?? emptyUsage(),
    });
  });
}

function causalMessages(pairs: Pair[]): PromptMessage[] {
  const show = (m: { role: string; content: string }) => renderMessage(m, PAIR_MESSAGE_TOKENS);
  const listed = pairs.map((p, i) => `[${i}]\n  A: ${show(p.from)}\n  B: ${show(p.to)}`).join("\n\n");
  return [
    {
      role: "system",
      content:
        "You analyse a coding agent's conversations. Each numbered pair is two consecutive messages, A then B. " +
        "List the pairs where A caused or directly led to B (an error that led to a fix, a request that led to an action, " +
        "a command whose output decided the next step), each with its number in `pair` and a short reason. " +
        "Leave out pairs that merely follow each other. An empty list is a fine answer.",
    },
    { role: "user", content: `Pairs:\n\n${listed}` },
  ];
}
