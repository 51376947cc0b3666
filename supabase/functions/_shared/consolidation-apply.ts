// What a consolidation run writes, in one tenant transaction with actor 'consolidation'
// (docs/consolidation.md): near-verbatim and 'same' pairs merged, 'refines' pairs superseded (both
// soft and audited, supersede.ts, under the dedup guardrails of pair-judge.ts's actionFor; the
// survivor filed under the dropped memory's category when it has none),
// contradictions recorded, fingerprints of every pair looked at, and memories superseded long ago
// and never retrieved soft-deleted through the TTL path (the purge job removes them after the grace
// period; nothing is deleted here). A dry run computes the same counts and writes nothing.
import type { BackgroundSettings } from "./background-settings.ts";
import { recordContradictions } from "./contradictions.ts";
import type { Tx } from "./db.ts";
import { lockNamespaces } from "./dedup.ts";
import { lockMemory, takeCategory } from "./memories/record.ts";
import { actionFor, type JudgedPair, type Pair } from "./pair-judge.ts";
import { round2 } from "./consolidation-pairs.ts";
import { lockMemories, supersedeMemory } from "./supersede.ts";

export interface PairCounts {
  /** Near-verbatim pairs merged without a model. */
  deduped: number;
  /** Pairs the model called the same (merged) or a refinement (the older superseded). */
  merged: number;
  contradictions_found: number;
  /** Pairs the model would have merged or superseded but a user-stated or pinned memory kept. */
  protected_kept: number;
}

const verbatimOf = (p: Pair): JudgedPair => ({ ...p, verdict: "verbatim", reason: "near-verbatim duplicate" });

/** The same decisions as applyPairs, on nothing: a memory merged away by one pair is gone for the next. */
export function simulatePairs(verbatim: readonly Pair[], judged: readonly JudgedPair[]): PairCounts {
  const counts: PairCounts = { deduped: 0, merged: 0, contradictions_found: 0, protected_kept: 0 };
  const gone = new Set<string>();
  for (const p of [...verbatim.map(verbatimOf), ...judged]) {
    const a = actionFor(p);
    if (a.action === "none") {
      if (a.why === "protected") counts.protected_kept++;
      continue;
    }
    if (a.action === "contradiction") {
      if (!gone.has(a.older.id) && !gone.has(a.newer.id)) counts.contradictions_found++;
      continue;
    }
    if (gone.has(a.keep.id) || gone.has(a.drop.id)) continue;
    gone.add(a.drop.id);
    if (p.verdict === "verbatim") counts.deduped++;
    else counts.merged++;
  }
  return counts;
}

export async function applyPairs(
  tx: Tx,
  input: { ownerId: string; runId: string; verbatim: readonly Pair[]; judged: readonly JudgedPair[] },
): Promise<PairCounts> {
  const counts: PairCounts = { deduped: 0, merged: 0, contradictions_found: 0, protected_kept: 0 };
  const all = [...input.verbatim.map(verbatimOf), ...input.judged];
  if (all.length === 0) return counts;
  // The dedup writers' locks first (so a dedup job and consolidation never interleave on a scope),
  // then the rows, both in a fixed order.
  await lockNamespaces(tx, input.ownerId, all.flatMap((p) => [p.older.namespace, p.newer.namespace]));
  await lockMemories(tx, all.flatMap((p) => [p.older.id, p.newer.id]));
  const contradictions: { older: string; newer: string; reason: string }[] = [];
  for (const p of all) {
    const a = actionFor(p);
    if (a.action === "none") {
      if (a.why === "protected") counts.protected_kept++;
      continue;
    }
    if (a.action === "contradiction") {
      contradictions.push({ older: a.older.id, newer: a.newer.id, reason: p.reason });
      continue;
    }
    const evidence = {
      by: "consolidation",
      verdict: p.verdict,
      run_id: input.runId,
      ...(p.reason ? { reason: p.reason } : {}),
    };
    if (await supersedeMemory(tx, input.ownerId, a.keep.id, a.drop.id, { strength: p.score, evidence })) {
      // The survivor now says the dropped memory's fact: without a category of its own it takes the
      // dropped one's, so memory.query still serves the fact (takeCategory, as dedup does). Both rows
      // are locked already (lockMemories above).
      const dropped = await lockMemory(tx, a.drop.id);
      await takeCategory(tx, await lockMemory(tx, a.keep.id), dropped.metadata?.category);
      if (p.verdict === "verbatim") counts.deduped++;
      else counts.merged++;
    }
  }
  // A contradiction is only worth a person's time while both memories still hold.
  const alive = contradictions.length === 0 ? new Set<string>() : new Set((await tx<{ id: string }[]>`
    select id from public.devai_memories
     where id = any (${contradictions.flatMap((c) => [c.older, c.newer])}::uuid[]) and is_valid and state = 'active'`)
    .map((r) => r.id));
  counts.contradictions_found = await recordContradictions(
    tx,
    input.ownerId,
    contradictions.filter((c) => alive.has(c.older) && alive.has(c.newer)),
    "consolidation",
  );
  await recordFingerprints(tx, input.ownerId, all);
  return counts;
}

/** Every pair looked at, with its rounded score: not looked at again while the score stays (fingerprint_days). */
async function recordFingerprints(tx: Tx, ownerId: string, pairs: readonly JudgedPair[]): Promise<void> {
  const rows = pairs.map((p) => {
    const [a, b] = [p.older.id, p.newer.id].sort();
    return { id_a: a, id_b: b, score: round2(p.score), verdict: p.verdict };
  });
  await tx`
    insert into public.memory_pair_checks (owner_id, kind, id_a, id_b, score, verdict)
    select ${ownerId}, 'consolidation', r.id_a, r.id_b, r.score, r.verdict
      from json_to_recordset(${tx.json(rows as never)}::json) as r(id_a uuid, id_b uuid, score numeric, verdict text)
    on conflict (owner_id, kind, id_a, id_b) do update set score = excluded.score, verdict = excluded.verdict, checked_at = now()`;
}

/** Fingerprints older than the window say nothing any more. */
export async function ageOutFingerprints(tx: Tx, settings: BackgroundSettings, now: Date): Promise<void> {
  await tx`
    delete from public.memory_pair_checks
     where kind = 'consolidation' and checked_at < ${now}::timestamptz - make_interval(secs => ${
    settings.fingerprintDays * 86400
  })`;
}

const FORGET_PER_RUN = 1000;

/**
 * Memories superseded more than consolidation_forget_superseded_days ago and never retrieved:
 * soft-deleted as TTL does it (state soft_deleted, purge_at after the grace period, a TTL history
 * event by consolidation); never the user's own statements or pinned ones. Returns how many (a dry
 * run counts them).
 */
export async function forgetSuperseded(
  tx: Tx,
  settings: BackgroundSettings,
  now: Date,
  dryRun: boolean,
): Promise<number> {
  const due = tx`
    select m.id from public.devai_memories m
     where m.superseded_by is not null and not m.is_valid and m.state = 'active' and m.access_count = 0
       and m.valid_until < ${now}::timestamptz - make_interval(secs => ${settings.forgetSupersededDays * 86400})
       and m.priority <> 'highest' and not m.pinned and m.source is distinct from 'user_stated' and m.source is distinct from 'correction'
     order by m.valid_until, m.id
     limit ${FORGET_PER_RUN}`;
  if (dryRun) return (await tx<{ n: number }[]>`select count(*)::int as n from (${due}) d`)[0]!.n;
  await tx`select set_config('memory.event', 'TTL', true)`;
  const forgotten = await tx`
    update public.devai_memories
       set state = 'soft_deleted', purge_at = ${now}::timestamptz + make_interval(secs => ${
    settings.purgeGraceDays * 86400
  })
     where id in (${due})
    returning id`;
  await tx`select set_config('memory.event', '', true)`;
  return forgotten.length;
}
