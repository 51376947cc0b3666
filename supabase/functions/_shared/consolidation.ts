// Session consolidation (a 'consolidate' job, one per session: sessions.ts): the session's episodes
// become facts, procedures and preferences through the write path memory-extract uses, so the two
// never disagree on what is stored:
//   rules (the user's "remember …" and corrections, user-stated) + the LLM when configured (one call
//   per ~60k tokens, consolidation-prompt.ts) → prepareCandidates (writing constraints, scopes, ≤ 5
//   per chunk, model labels demoted) → dedupCandidates (exact hash, neighbours, the LLM's
//   ADD / UPDATE / DELETE / NOOP; a superseded or contradicted fact's validity is closed)
// and then the graph: a derived_from edge from each resulting fact (new, or the existing one a
// NOOP found) to the episodes it came from, and the entities the model named. Without an LLM the
// rules alone run (the model's part is skipped, not failed). The LLM and embedding calls happen
// outside any transaction; each fact is applied in a short transaction with the job's progress, and
// the edges, entities and the job's completion commit together in a last one.
// docs/graph.md#consolidation.
import { z } from "zod";
import { type Candidate, prepareCandidates } from "./candidates.ts";
import { loadCategoryNames } from "./categories.ts";
import { chunkEpisodes, consolidationMessages, ConsolidationOutputSchema } from "./consolidation-prompt.ts";
import { withTenant } from "./db.ts";
import { dedupCandidates, type DedupProgress } from "./dedup.ts";
import type { WorkerDeps } from "./drain-queue.ts";
import { type GraphEdge, insertEdges } from "./edges.ts";
import { type EntityLink, type EntityMention, linkEntities } from "./entities.ts";
import { completeJobInTx, type Job, LeaseLostError, PermanentJobError, recordJobProgress } from "./jobs.ts";
import { addUsage, emptyUsage, LlmOutputError, LlmRequestError } from "./llm.ts";
import { providerUnavailable } from "./llm-outage.ts";
import { defaultScope } from "./scopes.ts";
import { extractByRules } from "./rule-extractor.ts";
import { inWorkerTurn } from "./heavy-turns.ts";
import { BACKGROUND_REST_MS, EventLoopSlice } from "./event-loop-slice.ts";
import { recordRedactions } from "./redaction-events.ts";
import { sessionId } from "./schemas.ts";
import { validateContent } from "./writing-constraints.ts";

export const ConsolidateJobPayloadSchema = z.object({ session_id: sessionId }).strict();

/** A session longer than this is consolidated from its first episodes (a runaway loop, not a conversation). */
export const MAX_EPISODES_PER_SESSION = 2000;
/** A derived_from edge found by rules is certain; one a model cites is likely. */
const RULE_CONFIDENCE = 1;
const MODEL_CONFIDENCE = 0.8;

interface Episode {
  id: string;
  role: string;
  content: string;
}

interface Provenance {
  /** Indexes into the session's episodes. */
  sources: Set<number>;
  entities: EntityMention[];
  confidence: number;
}

/** The key prepareCandidates de-duplicates by: the validated content, lower-cased. */
function candidateKey(c: Candidate): string | undefined {
  const v = validateContent(c.type, c.content);
  return v.ok ? v.content.toLowerCase() : undefined;
}

/**
 * Rules and the model over the episodes: candidates, and where each one came from. A model that
 * cannot help (output invalid after its repair round, a refused request, or any failure on the
 * job's last attempt) leaves the rules' facts to be stored rather than losing them with the job;
 * a transient failure before that is thrown, so the job is retried.
 */
async function proposeFacts(deps: WorkerDeps, job: Job, episodes: Episode[], project: string | undefined) {
  const provenance = new Map<string, Provenance>();
  const note = (c: Candidate, sources: number[], entities: EntityMention[], confidence: number) => {
    const key = candidateKey(c);
    if (!key) return;
    const p = provenance.get(key) ?? { sources: new Set<number>(), entities: [], confidence };
    sources.forEach((s) => p.sources.add(s));
    p.entities.push(...entities);
    p.confidence = Math.max(p.confidence, confidence);
    provenance.set(key, p);
  };

  // The passes over the whole session (the rules, chunking it for the model) take the tenant's heavy
  // turn (heavy-turns.ts); the model's calls come after it.
  const stated: Candidate[] = [];
  const chunks = await inWorkerTurn(job.owner_id, deps.drainCut, async () => {
    episodes.forEach((e, i) => {
      if (e.role !== "user") return;
      for (const c of extractByRules([e], { namespace: defaultScope(deps.config.namespaceRoot, { project }) })) {
        stated.push(c);
        note(c, [i], [], RULE_CONFIDENCE);
      }
    });
    return deps.llm ? await chunkEpisodes(episodes, undefined, new EventLoopSlice(BACKGROUND_REST_MS)) : [];
  });

  const proposed: Candidate[][] = [];
  const usage = emptyUsage();
  const categories = deps.llm ? await loadCategoryNames(deps.sql) : [];
  let modelFailure: string | undefined;
  if (deps.llm) {
    try {
      for (const chunk of chunks) {
        const out = await deps.llm.completeJson(
          ConsolidationOutputSchema,
          consolidationMessages(chunk.text, deps.config.namespaceRoot, project, categories),
          { name: "session_consolidation" },
        );
        addUsage(usage, out.usage);
        proposed.push(out.value.stored.map(({ sources, entities, ...c }) => {
          // Only the numbers this chunk showed: anything else is not an episode of it.
          note(
            c,
            sources.filter((s) => s >= chunk.first && s <= chunk.last),
            entities.map((e) => ({ ...e, mention: e.name })),
            MODEL_CONFIDENCE,
          );
          return c;
        }));
      }
    } catch (err) {
      // An unavailable provider postpones the job (llm-outage.ts): its facts wait for the model.
      if (await providerUnavailable(deps.llm, err)) throw err;
      const lastAttempt = job.attempts >= job.max_attempts;
      const hopeless = err instanceof LlmOutputError || (err instanceof LlmRequestError && !err.retryable);
      if (!lastAttempt && !hopeless) throw err;
      modelFailure = `${(err as Error).name}: ${(err as Error).message}`.slice(0, 500);
    }
  }
  const prepared = prepareCandidates({ stated, proposed }, { root: deps.config.namespaceRoot, project, categories });
  const mode = !deps.llm ? "rules" : modelFailure ? "rules (the model failed)" : "llm+rules";
  return { prepared, provenance, usage, mode, modelFailure };
}

/** What proposeFacts found, as the job's progress keeps it (sources as episode ids). */
type Proposal = Omit<Awaited<ReturnType<typeof proposeFacts>>, "provenance"> & {
  provenance: [string, { sources: string[]; entities: EntityMention[]; confidence: number }][];
};

async function recordProposal(
  deps: WorkerDeps,
  job: Job,
  workerId: string,
  episodes: Episode[],
  project: string | undefined,
): Promise<Proposal> {
  const found = await proposeFacts(deps, job, episodes, project);
  // Only the kept candidates' provenance is saved: its keys are candidates' texts before the
  // redactor (prepareCandidates drops what holds a secret), and the job's result outlives the job.
  const kept = new Set(found.prepared.candidates.map((c) => candidateKey(c)));
  const proposal: Proposal = {
    ...found,
    provenance: [...found.provenance].filter(([key]) => kept.has(key)).map((
      [key, p],
    ) => [key, { ...p, sources: [...p.sources].map((s) => episodes[s]!.id) }]),
  };
  if (!await recordJobProgress(deps.sql, job.id, workerId, { consolidation_proposal: proposal })) {
    throw new LeaseLostError(`job ${job.id}: lease lost before its facts were applied`);
  }
  return proposal;
}

export async function consolidateSession(deps: WorkerDeps, job: Job, workerId: string): Promise<void> {
  const parsed = ConsolidateJobPayloadSchema.safeParse(job.payload);
  if (!parsed.success) throw new PermanentJobError(`invalid consolidate payload: ${parsed.error.message}`);
  const tenant = { tenantId: job.owner_id, actor: "worker:consolidate" };
  const read = await withTenant(deps.sql, tenant, async (tx) => {
    const [session] = await tx<
      { id: string; thread_id: string | null; project: string | null; consolidated_at: Date | null }[]
    >`
      select id, thread_id, project, consolidated_at from public.memory_sessions where session_id = ${parsed.data.session_id}`;
    const episodes = session
      ? await tx<Episode[]>`
          select id, metadata ->> 'role' as role, content from public.devai_memories
           where session_id = ${parsed.data.session_id} and source = 'conversation' and state = 'active'
           order by (metadata ->> 'seq')::int, id
           limit ${MAX_EPISODES_PER_SESSION}`
      : [];
    // The latest episodes past the cap are not read: the result says how many (docs/graph.md#consolidation).
    const [all] = episodes.length < MAX_EPISODES_PER_SESSION ? [{ n: episodes.length }] : await tx<{ n: number }[]>`
      select count(*)::int as n from public.devai_memories
       where session_id = ${parsed.data.session_id} and source = 'conversation' and state = 'active'`;
    return { session, episodes, leftOut: all!.n - episodes.length };
  });
  if (!read.session) throw new PermanentJobError(`session ${parsed.data.session_id} not found`);
  const session = read.session;
  const threadId = session.thread_id ?? undefined;

  // The proposal is recorded under the lease before fact 1 is applied: a retried job takes it
  // again (a new model call could propose other facts, and the progress counts facts by index).
  const saved = (job.result as { consolidation_proposal?: Proposal } | null)?.consolidation_proposal;
  const proposal = session.consolidated_at
    ? undefined
    : saved ?? await recordProposal(deps, job, workerId, read.episodes, session.project ?? undefined);
  const candidates = proposal?.prepared.candidates ?? [];
  const vectors = candidates.length > 0 ? await deps.embedder.embed(candidates.map((c) => c.content)) : [];
  const opts = { threadId };
  // Each fact is applied in a short transaction of its own with the job's progress (dedup.ts):
  // the model decides with no transaction open and no neighbour locked; a retry resumes there.
  const report = proposal
    ? await dedupCandidates(
      {
        transaction: (work) => withTenant(deps.sql, tenant, work, opts),
        applied: (tx, progress) => recordJobProgress(tx, job.id, workerId, { dedup: progress }, { inTenantTx: true }),
        resume: (job.result as { dedup?: DedupProgress } | null)?.dedup,
      },
      { embedder: deps.embedder, llm: deps.llm, config: deps.config },
      { ownerId: job.owner_id, sessionId: parsed.data.session_id, threadId, origin: "consolidate", jobId: job.id },
      candidates,
      vectors,
    )
    : undefined;

  // Edges, entities, the session's record and the completion: one last short transaction.
  await withTenant(deps.sql, tenant, async (tx) => {
    if (!proposal || !report) {
      await completeJobInTx(tx, job.id, workerId, { already_consolidated: true });
      return;
    }
    const provenance = new Map(proposal.provenance);
    // A retry's saved proposal may name episodes forgotten or purged since: edges go to the
    // session's active episodes only (a purged one would fail the edge's key on every attempt).
    const active = new Set(read.episodes.map((e) => e.id));
    const evidence = [{ session_id: parsed.data.session_id, job_id: job.id }];
    const edges: GraphEdge[] = [];
    const links: EntityLink[] = [];
    // ... and from facts still there (one purged since it was applied has no row to start from).
    const factIds = report.outcomes.map((o) => o.memory_id ?? (o.action === "NOOP" ? o.target_id : undefined))
      .filter((id): id is string => id !== undefined);
    const present = new Set(
      (await tx<{ id: string }[]>`select id from public.devai_memories where id = any(${factIds}::uuid[])`).map((r) =>
        r.id
      ),
    );
    report.outcomes.forEach((o, i) => {
      const factId = o.memory_id ?? (o.action === "NOOP" ? o.target_id : undefined);
      const p = provenance.get(candidateKey(candidates[i]!) ?? "");
      if (!factId || !p || !present.has(factId)) return;
      for (const episodeId of p.sources.filter((id) => active.has(id))) {
        edges.push({
          from: factId,
          to: episodeId,
          type: "derived_from",
          strength: 1,
          confidence: p.confidence,
          evidence,
        });
      }
      links.push(
        ...p.entities.map((e) => ({ ...e, memoryId: factId, confidence: MODEL_CONFIDENCE, source: "llm" as const })),
      );
    });
    const derived = await insertEdges(tx, job.owner_id, edges);
    const linked = await linkEntities(tx, links);
    const result = {
      mode: proposal.mode,
      llm: !deps.llm
        ? "skipped: no LLM configured"
        : proposal.modelFailure
        ? `failed: ${proposal.modelFailure}`
        : "used",
      episodes: read.episodes.length,
      ...(read.leftOut > 0 ? { episodes_left_out: read.leftOut } : {}),
      candidates: candidates.length,
      counts: report.counts,
      derived_from_edges: derived,
      entity_links: linked,
      stats: proposal.prepared.stats,
      usage: deps.llm ? { ...proposal.usage, dedup: report.usage } : null,
    };
    await tx`
      update public.memory_sessions set consolidated_at = now(), consolidation = ${tx.json(result as never)}
       where id = ${session.id}`;
    await recordRedactions(tx, {
      ownerId: job.owner_id,
      writer: "consolidate",
      node: "worker",
      threadId,
      counts: proposal.prepared.stats.redacted_kinds,
      dropped: proposal.prepared.stats.secrets_dropped,
    });
    await tx`
      insert into public.memory_events (owner_id, thread_id, node, op, status, meta)
      values (${job.owner_id}, ${threadId ?? null}, 'worker', 'extract', 'ok',
              ${
      tx.json({ kind: "consolidate", job_id: job.id, session_id: parsed.data.session_id, ...result } as never)
    })`;
    await completeJobInTx(tx, job.id, workerId, result);
  }, opts);
}
