// The write-time contradiction check (docs/consolidation.md#contradictions). A writer that stores
// memories (remember, correct, the dedup worker, an accepted proposal) queues a
// 'contradiction_check' job in its own transaction, so the request never waits on a model; the
// worker compares each new memory with its nearest existing ones (the hybrid search, in the
// memory's scope) and asks the pair judge (pair-judge.ts) about the pairs it has not judged before
// (cached per pair in memory_pair_checks, kind 'contradiction'). A contradiction becomes an open row
// of memory_contradictions; nothing else changes (merging is the nightly consolidation's). Without
// an LLM the job completes as skipped.
import { createHash } from "node:crypto";
import { z } from "zod";
import { uuid } from "./schemas.ts";
import { recordContradictions } from "./contradictions.ts";
import { scopeBaseOf } from "./consolidation-pairs.ts";
import { type Tx, withTenant } from "./db.ts";
import type { WorkerDeps } from "./drain-queue.ts";
import { thresholdsFor } from "./embeddings.ts";
import { completeJobInTx, enqueueJob, type Job, PermanentJobError } from "./jobs.ts";
import { judgePairs, olderFirst, type Pair, type PairMemory } from "./pair-judge.ts";
import { hybridSearch } from "./search/hybrid.ts";

/** Memories one job checks (its payload's limit); a longer list is queued as several jobs. */
export const MEMORIES_PER_CHECK = 20;

export const ContradictionCheckPayloadSchema = z.object({
  memory_ids: z.array(uuid).min(1).max(MEMORIES_PER_CHECK),
}).strict();

/** Neighbours judged per new memory, and the job's token budget (a handful of calls at most). */
const NEIGHBOURS_PER_MEMORY = 3;
const TOKENS_PER_JOB = 8000;
const PAIRS_PER_PROMPT = 8;

/** Queues the check of these new memories (in the writer's transaction), every one of them; a no-op for an empty list. */
export async function queueContradictionCheck(tx: Tx, ownerId: string, memoryIds: readonly string[]): Promise<void> {
  const all = [...new Set(memoryIds)].sort();
  for (let i = 0; i < all.length; i += MEMORIES_PER_CHECK) {
    const ids = all.slice(i, i + MEMORIES_PER_CHECK);
    const key = `contradiction:${createHash("sha256").update(ids.join(",")).digest("hex").slice(0, 40)}`;
    await enqueueJob(tx, { ownerId, kind: "contradiction_check", idempotencyKey: key, payload: { memory_ids: ids } });
  }
}

const asPairMemory = (m: PairMemory) => ({
  ...m,
  created_at: new Date(m.created_at),
  access_count: Number(m.access_count),
});

export async function checkNewMemories(deps: WorkerDeps, job: Job, workerId: string): Promise<void> {
  const parsed = ContradictionCheckPayloadSchema.safeParse(job.payload);
  if (!parsed.success) throw new PermanentJobError(`invalid contradiction_check payload: ${parsed.error.message}`);
  const tenant = { tenantId: job.owner_id, actor: "worker:contradiction" };
  if (!deps.llm) {
    return await withTenant(
      deps.sql,
      tenant,
      (tx) => completeJobInTx(tx, job.id, workerId, { skipped: "no LLM configured" }),
    );
  }
  const thresholds = thresholdsFor(deps.embedder.model, deps.config);
  const pairs = await withTenant(deps.sql, tenant, async (tx) => {
    const fresh = await tx<(PairMemory & { embedding: string | null })[]>`
      select id, content, memory_type, namespace, source, priority, pinned, access_count, created_at,
             case when embedding_model = ${deps.embedder.model} then embedding::text end as embedding
        from public.devai_memories
       where id = any (${parsed.data.memory_ids}::uuid[]) and is_valid and state = 'active' and source is distinct from 'conversation'
       order by id`;
    const out: Pair[] = [];
    const queued = new Set<string>(); // a pair found from both of its memories is judged once
    for (const m of fresh) {
      const found = (await hybridSearch(tx, {
        queryText: m.content,
        vector: m.embedding ? (JSON.parse(m.embedding) as number[]) : undefined,
        embeddingModel: deps.embedder.model,
        scopes: [scopeBaseOf(m.namespace)],
        ownerId: job.owner_id,
        limit: NEIGHBOURS_PER_MEMORY + 1,
        threshold: thresholds.consolidate,
        graphDepth: 0,
        memoryTypes: ["semantic", "episodic", "procedural"],
      })).filter((n) => n.id !== m.id).slice(0, NEIGHBOURS_PER_MEMORY);
      if (found.length === 0) continue;
      const ids = found.map((n) => [m.id, n.id].sort() as [string, string]);
      const judged = await tx<{ a: string; b: string }[]>`
        select id_a as a, id_b as b from public.memory_pair_checks
         where kind = 'contradiction' and (id_a, id_b) in (select * from unnest(${ids.map((p) => p[0])}::uuid[], ${
        ids.map((p) => p[1])
      }::uuid[]))
        union
        select least(memory_a, memory_b), greatest(memory_a, memory_b) from public.memory_contradictions
         where memory_a = ${m.id} or memory_b = ${m.id}`;
      const done = new Set(judged.map((j) => `${j.a}|${j.b}`));
      for (const n of found) {
        const [a, b] = [m.id, n.id].sort();
        if (done.has(`${a}|${b}`) || queued.has(`${a}|${b}`)) continue;
        queued.add(`${a}|${b}`);
        const other = asPairMemory(n);
        const mine = asPairMemory(m);
        const [older, newer] = olderFirst(other, mine);
        out.push({ older, newer, score: Math.min(1, Math.max(0, n.similarity ?? thresholds.consolidate)) });
      }
    }
    return out;
  });

  const outcome = pairs.length > 0
    ? await judgePairs(deps.llm, pairs, { pairsPerPrompt: PAIRS_PER_PROMPT, tokens: TOKENS_PER_JOB })
    : undefined;
  const judged = outcome?.judged ?? [];
  await withTenant(deps.sql, tenant, async (tx) => {
    const rows = judged.map((p) => {
      const [a, b] = [p.older.id, p.newer.id].sort();
      return { id_a: a, id_b: b, score: Math.round(p.score * 100) / 100, verdict: p.verdict };
    });
    if (rows.length > 0) {
      await tx`
        insert into public.memory_pair_checks (owner_id, kind, id_a, id_b, score, verdict)
        select ${job.owner_id}, 'contradiction', r.id_a, r.id_b, r.score, r.verdict
          from json_to_recordset(${
        tx.json(rows as never)
      }::json) as r(id_a uuid, id_b uuid, score numeric, verdict text)
        on conflict (owner_id, kind, id_a, id_b) do update set score = excluded.score, verdict = excluded.verdict, checked_at = now()`;
    }
    const found = judged.filter((p) => p.verdict === "contradiction").map((p) => ({
      older: p.older.id,
      newer: p.newer.id,
      reason: p.reason,
    }));
    const recorded = await recordContradictions(tx, job.owner_id, found, "write");
    await completeJobInTx(tx, job.id, workerId, {
      memories: parsed.data.memory_ids.length,
      pairs_checked: judged.length,
      contradictions_found: recorded,
      ...(outcome?.stopped ? { stopped: outcome.stopped } : {}),
      usage: outcome?.usage ?? null,
    });
  });
}
