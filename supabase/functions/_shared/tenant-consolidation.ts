// A tenant's consolidation run (docs/consolidation.md): the nightly 'nightly_consolidation' job and
// POST memory/consolidate run this one function, bounded by the same per-tenant caps per UTC day
// (consolidation_pairs_per_night, consolidation_tokens_per_night: what today's earlier runs spent
// is what is left).
//
//   read   (one tenant transaction)  settings, today's spending, the pairs (consolidation-pairs.ts),
//          the sessions to summarise or compress (episode-summaries.ts)
//   model  (no transaction open)     the pair judge on the best pairs the caps allow, then the
//          session summaries with the tokens left; skipped cleanly without an LLM
//   write  (one tenant transaction, actor 'consolidation')  merges, supersedes, contradictions,
//          fingerprints, summaries, forgetting, the run's record, the next jobs (insights,
//          re-embedding) and, for the nightly job, its completion
// A dry run does the first two and counts what the third would do, writing nothing but its run
// record: it asks the model, so its pairs and tokens count against the same caps. At most one run
// of a tenant, dry or not, is under way at a time (409 consolidation_running). A run's spending is
// written by public.finish_consolidation_run, which only adds (the tenant role cannot update it).
import { ageOutFingerprints, applyPairs, forgetSuperseded, simulatePairs } from "./consolidation-apply.ts";
import { loadBackgroundSettings } from "./background-settings.ts";
import { planPairs } from "./consolidation-pairs.ts";
import { type Sql, type TenantContext, type Tx, withTenant } from "./db.ts";
import { type Embedder, thresholdsFor } from "./embeddings.ts";
import type { Config } from "./env.ts";
import { applyEpisodeWork, compressEpisodes, type EpisodeWork, planEpisodes } from "./episode-summaries.ts";
import { HttpError } from "./http.ts";
import { completeJobInTx, enqueueJob, type Job } from "./jobs.ts";
import { outsideRequest } from "./rate-limit.ts";
import { addUsage, emptyUsage, type Llm, LlmOutputError, LlmRequestError } from "./llm.ts";
import { providerUnavailable } from "./llm-outage.ts";
import { type JudgedPair, judgePairs } from "./pair-judge.ts";

export interface ConsolidationDeps {
  sql: Sql;
  embedder: Embedder;
  llm?: Llm;
  config: Pick<Config, "retrieval" | "dedupThreshold">;
}

export interface ConsolidationOptions {
  ownerId: string;
  trigger: "nightly" | "api";
  dryRun: boolean;
  /** The nightly job this run is (completed in the write transaction). */
  job?: { job: Job; workerId: string };
  now?: Date;
}

export interface ConsolidationReport {
  dry_run: boolean;
  run_id: string;
  deduped: number;
  merged: number;
  compressed: number;
  forgotten: number;
  contradictions_found: number;
  pairs_checked: number;
  tokens_used: number;
  llm: string;
  /** Why pairs or sessions were left for another night: the pairs cap or the token cap. */
  stopped: "pairs" | "tokens" | null;
  caps: { pairs_per_night: number; tokens_per_night: number; pairs_left: number; tokens_left: number };
  pool: number;
  pairs_found: number;
  pairs_skipped: number;
  protected_kept: number;
}

const utcDay = (d: Date) => d.toISOString().slice(0, 10);

export async function consolidateTenant(
  deps: ConsolidationDeps,
  opts: ConsolidationOptions,
): Promise<ConsolidationReport> {
  const now = opts.now ?? new Date();
  const tenant: TenantContext = { tenantId: opts.ownerId, actor: "consolidation" };
  const runId = await openRun(deps.sql, tenant, opts);
  const usage = emptyUsage();
  let judgedCount = 0;
  try {
    const read = await withTenant(deps.sql, tenant, async (tx) => {
      const settings = await loadBackgroundSettings(tx);
      const [spent] = await tx<{ pairs: number; tokens: number; other_models: number }[]>`
        select coalesce(sum(pairs_checked), 0)::int as pairs, coalesce(sum(tokens_used), 0)::int as tokens,
               (select count(*)::int from public.devai_memories
                 where is_valid and state = 'active' and source is distinct from 'conversation'
                   and embedding_model is distinct from ${deps.embedder.model}) as other_models
          from public.memory_consolidation_runs
         where started_at >= ${`${utcDay(now)}T00:00:00Z`}::timestamptz and id is distinct from ${runId}::uuid`;
      const pairs = await planPairs(tx, {
        ownerId: opts.ownerId,
        model: deps.embedder.model,
        thresholds: thresholdsFor(deps.embedder.model, deps.config as Config),
        settings,
        now,
      });
      const episodes = deps.llm ? await planEpisodes(tx, settings, now) : { summarise: [], compress: [] };
      return { settings, spent: spent!, pairs, episodes };
    });
    const { settings, pairs } = read;
    const pairsLeft = Math.max(0, settings.pairsPerNight - read.spent.pairs);
    const tokensLeft = Math.max(0, settings.tokensPerNight - read.spent.tokens);

    let judged: JudgedPair[] = [];
    let episodes: EpisodeWork | undefined;
    let llm = deps.llm ? "used" : "skipped: no LLM configured";
    let stopped: ConsolidationReport["stopped"] = pairs.judge.length > pairsLeft ? "pairs" : null;
    if (deps.llm) {
      try {
        if (pairs.judge.length > 0 && pairsLeft > 0) {
          const out = await judgePairs(deps.llm, pairs.judge.slice(0, pairsLeft), {
            pairsPerPrompt: settings.pairsPerPrompt,
            tokens: tokensLeft,
          });
          judged = out.judged;
          judgedCount = judged.length;
          addUsage(usage, out.usage);
          if (out.stopped) stopped = "tokens";
        }
        if (read.episodes.summarise.length + read.episodes.compress.length > 0) {
          episodes = await compressEpisodes(
            deps.llm,
            (t) => deps.embedder.embed(t),
            read.episodes,
            tokensLeft - usage.totalTokens,
          );
          addUsage(usage, episodes.usage);
          if (episodes.stopped) stopped = "tokens";
        }
      } catch (err) {
        // A transient failure of the nightly job before its last attempt retries the job; otherwise
        // the deterministic parts still run and the result says what the model did not do.
        const job = opts.job?.job;
        // An unavailable provider postpones the nightly job (llm-outage.ts) rather than run it without the model.
        if (job && await providerUnavailable(deps.llm, err)) throw err;
        const hopeless = err instanceof LlmOutputError || (err instanceof LlmRequestError && !err.retryable);
        if (job && job.attempts < job.max_attempts && !hopeless) throw err;
        if (!(err instanceof LlmOutputError) && !(err instanceof LlmRequestError)) throw err;
        llm = `failed: ${err.name}: ${err.message}`.slice(0, 500);
      }
    }

    const report: ConsolidationReport = {
      dry_run: opts.dryRun,
      run_id: runId,
      deduped: 0,
      merged: 0,
      compressed: 0,
      forgotten: 0,
      contradictions_found: 0,
      pairs_checked: judged.length,
      tokens_used: usage.totalTokens,
      llm,
      stopped,
      caps: {
        pairs_per_night: settings.pairsPerNight,
        tokens_per_night: settings.tokensPerNight,
        pairs_left: pairsLeft,
        tokens_left: tokensLeft,
      },
      pool: pairs.pool,
      pairs_found: pairs.verbatim.length + pairs.judge.length,
      pairs_skipped: pairs.skipped,
      protected_kept: 0,
    };
    if (opts.dryRun) {
      const counts = simulatePairs(pairs.verbatim, judged);
      return await withTenant(deps.sql, tenant, async (tx) => {
        const forgotten = await forgetSuperseded(tx, settings, now, true);
        const done = {
          ...report,
          ...counts,
          forgotten,
          compressed: (episodes?.summaries.length ?? 0) + (episodes?.compressed.length ?? 0),
        };
        await finishRun(tx, runId, done.pairs_checked, done.tokens_used, done);
        return done;
      });
    }

    return await withTenant(deps.sql, tenant, async (tx) => {
      const counts = await applyPairs(tx, { ownerId: opts.ownerId, runId: runId!, verbatim: pairs.verbatim, judged });
      const compressed = episodes ? await applyEpisodeWork(tx, opts.ownerId, deps.embedder.model, episodes, runId!) : 0;
      const forgotten = await forgetSuperseded(tx, settings, now, false);
      await ageOutFingerprints(tx, settings, now);
      const done: ConsolidationReport = { ...report, ...counts, compressed, forgotten };
      await finishRun(tx, runId, done.pairs_checked, done.tokens_used, done);
      const day = utcDay(now);
      // The day's one insight job (its key) is not held to the tenant's queue bound: refused, it would
      // roll back a POST memory/consolidate whose model work is done (docs/operations.md#a-tenants-queued-jobs).
      if (deps.llm) {
        await outsideRequest(() =>
          enqueueJob(tx, {
            ownerId: opts.ownerId,
            kind: "insight",
            idempotencyKey: `insight:${day}`,
            payload: { night: day },
          })
        );
      }
      if (opts.trigger === "nightly" && read.spent.other_models > 0) {
        await enqueueJob(tx, {
          ownerId: opts.ownerId,
          kind: "reindex",
          idempotencyKey: `reindex:${day}`,
          payload: { model: deps.embedder.model },
        });
      }
      if (opts.job) await completeJobInTx(tx, opts.job.job.id, opts.job.workerId, done);
      return done;
    });
  } catch (err) {
    await closeFailedRun(deps.sql, tenant, runId, err, judgedCount, usage.totalTokens).catch(() => {});
    throw err;
  }
}

/** A run left under way for over an hour died with its worker: it is closed so the tenant can run again. */
const STALE_RUN_MINUTES = 60;

async function openRun(sql: Sql, tenant: TenantContext, opts: ConsolidationOptions): Promise<string> {
  return await withTenant(sql, tenant, async (tx) => {
    await tx`
      update public.memory_consolidation_runs set finished_at = now(), result = ${tx.json({ abandoned: true })}
       where finished_at is null and started_at < now() - make_interval(mins => ${STALE_RUN_MINUTES})`;
    const [row] = await tx<{ id: string }[]>`
      insert into public.memory_consolidation_runs (owner_id, trigger, job_id, dry_run)
      values (${opts.ownerId}, ${opts.trigger}, ${opts.job?.job.id ?? null}, ${opts.dryRun})
      on conflict (owner_id) where finished_at is null do nothing
      returning id`;
    if (!row) {
      throw new HttpError(
        409,
        "consolidation_running",
        "a consolidation of this tenant is under way; try again when it has finished",
      );
    }
    return row.id;
  });
}

/** A run that failed still spent what the model counted: the night's caps see it. */
async function closeFailedRun(
  sql: Sql,
  tenant: TenantContext,
  runId: string,
  err: unknown,
  pairs: number,
  tokens: number,
): Promise<void> {
  await withTenant(
    sql,
    tenant,
    (tx) => finishRun(tx, runId, pairs, tokens, { error: String((err as Error)?.message ?? err).slice(0, 500) }),
  );
}

/** Closes the run with what it spent (added to its counters; see the module comment). */
async function finishRun(tx: Tx, runId: string, pairs: number, tokens: number, result: object): Promise<void> {
  await tx`select public.finish_consolidation_run(${runId}, ${pairs}, ${tokens}, ${tx.json(result as never)})`;
}
