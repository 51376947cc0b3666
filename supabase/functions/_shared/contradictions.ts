// Contradictions between two of a tenant's memories (public.memory_contradictions): found by the
// nightly consolidation and by the write-time check (contradiction-check.ts), open until the user
// resolves them. docs/consolidation.md#contradictions.
//
//   listContradictions   GET memory/contradictions?status=open|resolved|all (the living context's
//                        critical tier reads the open ones through public.context_open_contradictions)
//   resolveContradiction POST memory/contradictions/{id}/resolve:
//                          a_wins      b is superseded by a        b_wins  a is superseded by b
//                          both_valid  nothing changes (they can both hold)
//                          merged      `content` becomes a new memory, stated by the user, that
//                                      supersedes both
//                        every change a soft, audited supersede by the user (supersede.ts); a
//                        loser forgotten or faded since is superseded too, so a restore brings
//                        it back replaced (invalid), never valid beside the winner
// "Open" means unresolved with both memories still valid and active; one superseded or forgotten
// since makes the question moot (listed as such with status=all).
import { z } from "zod";
import { type Sql, type TenantContext, toVectorLiteral, type Tx, withTenant } from "./db.ts";
import { type Embedder, embedForRequest } from "./embeddings.ts";
import { linkEntitiesByRules } from "./entities.ts";
import { HttpError } from "./http.ts";
import { recordRedactions, redactStatement } from "./redaction-events.ts";
import { addCounts, redactField } from "./redact.ts";
import { content as contentSchema, queryInt, storableText, threadId } from "./schemas.ts";
import { lockMemories, supersedeMemory } from "./supersede.ts";
import { liveWithText, lockContentHash, lockMemory, statedByUser, takeCategory } from "./memories/record.ts";
import { MAX_PAGE_LIMIT, type Memory } from "./memories/schemas.ts";
import type { Config } from "./env.ts";
import { visibleScopes } from "./schemas.ts";

export const RESOLUTIONS = ["a_wins", "b_wins", "both_valid", "merged"] as const;
export type Resolution = typeof RESOLUTIONS[number];

export const ContradictionListQuery = z
  .object({
    status: z.enum(["open", "resolved", "all"]).default("open"),
    limit: queryInt(1, MAX_PAGE_LIMIT, 50),
  })
  .strict();
export type ContradictionListQuery = z.infer<typeof ContradictionListQuery>;

/** A resolution's note, in characters (the column's check: memory_contradictions_note_length). */
const NOTE_MAX = 1000;

export const ResolveRequest = z
  .object({
    resolution: z.enum(RESOLUTIONS, { error: `resolution must be one of ${RESOLUTIONS.join(", ")}` }),
    /** Stored and shown with the contradiction and in the history: the one stored-text rule, as a correction's reason. */
    note: storableText(z.string().trim().min(1).max(NOTE_MAX)).optional(),
    /** merged only: the statement that replaces both. */
    content: contentSchema.optional(),
    thread_id: threadId.optional(),
  })
  .strict()
  .refine((b) => (b.resolution === "merged") === (b.content !== undefined), {
    message: "content is required with resolution merged (the statement that replaces both), and only then",
    path: ["content"],
  });
export type ResolveRequest = z.infer<typeof ResolveRequest>;

export interface ContradictionMemory {
  id: string;
  content: string;
  namespace: string;
  memory_type: string;
  source: string | null;
  is_valid: boolean;
  state: string;
  created_at: string;
}

export interface Contradiction {
  id: string;
  status: "open" | "resolved" | "moot";
  memory_a: ContradictionMemory;
  memory_b: ContradictionMemory;
  detected_at: string;
  detected_by: "consolidation" | "write";
  reason: string | null;
  resolution: Resolution | null;
  resolved_at: string | null;
  resolved_by: string | null;
  note: string | null;
  merged_id: string | null;
}

const OPEN = (tx: Tx) =>
  tx`c.resolution is null and a.is_valid and a.state = 'active' and b.is_valid and b.state = 'active'`;
type Fragment = ReturnType<typeof OPEN>;

function select(tx: Tx, where: Fragment, limit: number) {
  const mem = (alias: string) =>
    tx.unsafe(
      `json_build_object('id', ${alias}.id, 'content', ${alias}.content, 'namespace', ${alias}.namespace, 'memory_type', ${alias}.memory_type,
                       'source', ${alias}.source, 'is_valid', ${alias}.is_valid, 'state', ${alias}.state, 'created_at', ${alias}.created_at)`,
    );
  return tx<Contradiction[]>`
    select c.id,
           case when c.resolution is not null then 'resolved'
                when a.is_valid and a.state = 'active' and b.is_valid and b.state = 'active' then 'open'
                else 'moot' end as status,
           ${mem("a")} as memory_a, ${mem("b")} as memory_b,
           c.detected_at, c.detected_by, c.reason, c.resolution, c.resolved_at, c.resolved_by, c.note, c.merged_id
      from public.memory_contradictions c
      join public.devai_memories a on a.id = c.memory_a
      join public.devai_memories b on b.id = c.memory_b
     where ${where}
     order by c.detected_at desc, c.id
     limit ${limit}`;
}

export async function listContradictions(
  sql: Sql,
  tenant: TenantContext,
  q: ContradictionListQuery,
): Promise<Contradiction[]> {
  const rows = await withTenant(
    sql,
    tenant,
    (tx) =>
      select(
        tx,
        q.status === "open" ? OPEN(tx) : q.status === "resolved" ? tx`c.resolution is not null` : tx`true`,
        q.limit,
      ),
  );
  return rows.map(iso);
}

/**
 * Records detected contradictions (a: the older memory); a pair already recorded is left alone. Returns how many are new.
 * In pair order: two workers recording overlapping pairs wait for each other's uncommitted pair in one order, never in a cycle.
 */
export async function recordContradictions(
  tx: Tx,
  ownerId: string,
  found: readonly { older: string; newer: string; reason: string }[],
  detectedBy: "consolidation" | "write",
): Promise<number> {
  if (found.length === 0) return 0;
  const rows = found.map((f) => ({
    owner_id: ownerId,
    memory_a: f.older,
    memory_b: f.newer,
    reason: f.reason.slice(0, 1000) || null,
  }));
  const inserted = await tx`
    insert into public.memory_contradictions (owner_id, memory_a, memory_b, detected_by, reason)
    select r.owner_id, r.memory_a, r.memory_b, ${detectedBy}, r.reason
      from json_to_recordset(${
    tx.json(rows as never)
  }::json) as r(owner_id uuid, memory_a uuid, memory_b uuid, reason text)
     order by least(r.memory_a, r.memory_b), greatest(r.memory_a, r.memory_b)
    on conflict (owner_id, least(memory_a, memory_b), greatest(memory_a, memory_b)) do nothing
    returning id`;
  return inserted.length;
}

/** Applies the user's resolution (see the module comment). 404 unknown id, 409 resolved already or a memory changed since. */
export async function resolveContradiction(
  deps: { sql: Sql; embedder: Embedder; config: Pick<Config, "namespaceRoot"> },
  tenant: TenantContext,
  id: string,
  body: ResolveRequest,
): Promise<Contradiction> {
  const merged = body.resolution === "merged" ? redactStatement(body.content!) : undefined;
  // The note is stored and shown with the contradiction and in the history's evidence: redacted too.
  const note = redactField(body.note, "text", NOTE_MAX);
  await withTenant(deps.sql, tenant, (tx) => loadOpen(tx, id));
  const vector = merged ? await embedForRequest(deps.embedder, merged.text) : undefined;
  const resolvedId = await withTenant(deps.sql, tenant, async (tx) => {
    const c = await loadOpen(tx, id);
    // A merged text a live memory already says (One live memory per text, README): that memory
    // replaces both, nothing is inserted. Remember's lock order: the text's hash, then the rows.
    let held: Memory | undefined;
    if (merged) {
      await lockContentHash(tx, tenant.tenantId, merged.text);
      const [{ namespace } = { namespace: "" }] = await tx<{ namespace: string }[]>`
        select namespace from public.devai_memories where id = ${c.memory_b}`;
      const scopes = visibleScopes(namespace, deps.config.namespaceRoot);
      held = await liveWithText(tx, tenant.tenantId, merged.text, scopes, [c.memory_a, c.memory_b]);
    }
    await lockMemories(tx, held ? [c.memory_a, c.memory_b, held.id] : [c.memory_a, c.memory_b]);
    const valid = await tx<
      { id: string; namespace: string; memory_type: string; importance: number; category: string | null }[]
    >`
      select id, namespace, memory_type, importance, metadata ->> 'category' as category from public.devai_memories
       where id = any (${[c.memory_a, c.memory_b]}::uuid[]) and is_valid and state = 'active'`;
    const alive = new Set(valid.map((v) => v.id));
    const evidence = { contradiction_id: id, resolution: body.resolution, ...(note.text ? { note: note.text } : {}) };
    let mergedId: string | null = null;
    if (body.resolution === "a_wins" || body.resolution === "b_wins") {
      const [keep, drop] = body.resolution === "a_wins" ? [c.memory_a, c.memory_b] : [c.memory_b, c.memory_a];
      if (!alive.has(keep)) {
        throw new HttpError(
          409,
          "memory_changed",
          `memory ${keep} is no longer valid; restore it or resolve otherwise`,
        );
      }
      // The loser forgotten or faded since is superseded all the same: restoring it later brings
      // back a replaced memory, not a second valid answer under a resolved contradiction.
      await supersedeMemory(tx, tenant.tenantId, keep, drop, { strength: 1, evidence, dormantToo: true });
    } else if (body.resolution === "merged") {
      const b = valid.find((v) => v.id === c.memory_b) ?? valid[0];
      if (!b) throw new HttpError(409, "memory_changed", "neither memory is valid any more; there is nothing to merge");
      // The memory that says the merged text, if still live now that it is locked: the user states it now.
      const now = held && await lockMemory(tx, held.id);
      // The merged statement is filed where the two were (b's category first, as its namespace):
      // memory.query serves no memory without one.
      const category = b.category ?? valid.find((v) => v.category !== null)?.category;
      if (now && now.is_valid && now.state === "active") {
        mergedId = (await takeCategory(tx, await statedByUser(tx, now), category)).id;
      } else {
        const [row] = await tx<{ id: string }[]>`
          insert into public.devai_memories
            (owner_id, content, embedding, embedding_model, memory_type, namespace, priority, source, strength, base_strength, importance, metadata)
          values (${tenant.tenantId}, ${merged!.text}, ${
          toVectorLiteral(vector!)
        }::extensions.vector, ${deps.embedder.model}, ${b.memory_type},
                  ${b.namespace}, 'highest', 'correction', 1, 1, ${Math.max(...valid.map((v) => v.importance))},
                  ${tx.json({ contradiction_id: id, ...(category ? { category } : {}) })})
          returning id`;
        mergedId = row!.id;
        await linkEntitiesByRules(tx, [{ id: mergedId, content: merged!.text }]);
      }
      for (const drop of [c.memory_a, c.memory_b]) {
        await supersedeMemory(tx, tenant.tenantId, mergedId, drop, { strength: 1, evidence, dormantToo: true });
      }
    }
    await tx`
      update public.memory_contradictions
         set resolution = ${body.resolution}, resolved_at = now(), resolved_by = ${tenant.actor}, note = ${
      note.text ?? null
    },
             merged_id = ${mergedId}
       where id = ${id}`;
    await recordRedactions(tx, {
      ownerId: tenant.tenantId,
      writer: "resolve",
      node: "hotpath",
      counts: addCounts({ ...merged?.counts }, note.counts),
      dropped: note.dropped,
      threadId: body.thread_id,
    });
    return id;
  }, { threadId: body.thread_id });
  const [row] = await withTenant(deps.sql, tenant, (tx) => select(tx, tx`c.id = ${resolvedId}`, 1));
  return iso(row!);
}

async function loadOpen(tx: Tx, id: string) {
  const [c] = await tx<{ memory_a: string; memory_b: string; resolution: string | null }[]>`
    select memory_a, memory_b, resolution from public.memory_contradictions where id = ${id} for update`;
  if (!c) throw new HttpError(404, "not_found", `contradiction ${id} not found`);
  if (c.resolution) {
    throw new HttpError(409, "already_resolved", `contradiction ${id} was resolved already (${c.resolution})`);
  }
  return c;
}

function iso(c: Contradiction): Contradiction {
  const d = (v: unknown) => (v == null ? null : v instanceof Date ? v.toISOString() : String(v));
  return { ...c, detected_at: d(c.detected_at)!, resolved_at: d(c.resolved_at) };
}
