// One memory replacing another, the soft and audited way every background writer does it (the
// nightly consolidation's merges and supersedes, a contradiction's resolution): the replaced memory
// stays as a row, invalid, with superseded_by set (the history trigger records MERGE with the
// actor, the validity trigger closes valid_until), and a `supersedes` edge goes from the survivor to
// it, so explain shows the chain (docs/graph.md#edges). Nothing is deleted.
import type { Tx } from "./db.ts";
import { insertEdges } from "./edges.ts";

export interface SupersedeOptions {
  /** The edge's strength: how similar the two were (0..1). */
  strength: number;
  /** Why, for the edge's evidence (the verdict, the run or contradiction id). */
  evidence?: Record<string, unknown>;
  /**
   * Supersede `dropId` even when it is forgotten (soft-deleted) or faded (invalidated by decay),
   * so a later restore brings it back superseded (public.restore_memory keeps a superseded memory
   * invalid) rather than valid beside its replacement. The user's decision about it (a
   * contradiction's resolution) holds whatever state it is in now.
   */
  dormantToo?: boolean;
}

/**
 * Marks `dropId` as superseded by `keepId`. Both must still be valid and active (`dropId` may be
 * forgotten or faded with `dormantToo`) and `dropId` not superseded yet (the caller holds their
 * row locks): returns false, changing nothing, otherwise.
 */
export async function supersedeMemory(
  tx: Tx,
  ownerId: string,
  keepId: string,
  dropId: string,
  opts: SupersedeOptions,
): Promise<boolean> {
  const [done] = await tx<{ id: string }[]>`
    update public.devai_memories d
       set superseded_by = ${keepId}, is_valid = false
     where d.id = ${dropId} and d.superseded_by is null
       and ${opts.dormantToo ? tx`true` : tx`d.is_valid and d.state = 'active'`}
       and exists (select 1 from public.devai_memories k where k.id = ${keepId} and k.is_valid and k.state = 'active')
    returning d.id`;
  if (!done) return false;
  await insertEdges(tx, ownerId, [{
    from: keepId,
    to: dropId,
    type: "supersedes",
    strength: Math.max(0, Math.min(1, opts.strength)),
    evidence: opts.evidence ? [opts.evidence] : [],
  }]);
  return true;
}

/** Locks the memories a decision may change, in id order (no lock-order deadlock between writers), as lockMemory does. */
export async function lockMemories(tx: Tx, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await tx<{ id: string }[]>`
    select id from public.devai_memories where id = any (${
    [...new Set(ids)].sort()
  }::uuid[]) order by id for no key update`;
  return new Set(rows.map((r) => r.id));
}
