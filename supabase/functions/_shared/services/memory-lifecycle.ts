// Lifecycle of one memory: forget (soft delete) and restore, pin / confirm and unpin. Each is one
// tenant transaction that locks the row; asking for the state a memory is already in changes
// nothing (changed: false).
import { type TenantContext, withTenant } from "../db.ts";
import { HttpError } from "../http.ts";
import { memoryColumns } from "../memories/memory-row.ts";
import {
  liveWithText,
  lockContentHash,
  lockMemory,
  notFound,
  statedAlready,
  statedByUser,
  takeCategory,
  toMemory,
} from "../memories/record.ts";
import { visibleScopes } from "../schemas.ts";
import { lockMemories, supersedeMemory } from "../supersede.ts";
import type { ForgetRequest, LifecycleRequest, LifecycleResponse } from "../memories/schemas.ts";
import { purgeGraceDays } from "../memories/settings.ts";
import { redactField } from "../redact.ts";
import { recordRedactions } from "../redaction-events.ts";
import type { ServiceDeps } from "./deps.ts";

/**
 * Soft delete: purged after the grace period unless restored. The reason is stored
 * (metadata.forget_reason, and in the history row, which outlives the purge): redacted like a
 * correction's reason (docs/redaction.md), dropped when it is nothing but a secret.
 */
export async function forget(
  deps: ServiceDeps,
  tenant: TenantContext,
  id: string,
  body: ForgetRequest,
): Promise<LifecycleResponse> {
  const now = deps.clock();
  const reason = redactField(body.reason);
  return await withTenant(deps.sql, tenant, async (tx) => {
    const m = await lockMemory(tx, id);
    if (m.state === "soft_deleted") return { changed: false, memory: m };
    const days = await purgeGraceDays(tx);
    const [row] = await tx`
      update public.devai_memories
         set state = 'soft_deleted',
             purge_at = ${now}::timestamptz + make_interval(secs => ${days * 86400}),
             metadata = ${reason.text ? tx`metadata || ${tx.json({ forget_reason: reason.text })}` : tx`metadata`}
       where id = ${id} returning ${memoryColumns(tx)}`;
    await recordRedactions(tx, {
      ownerId: tenant.tenantId,
      writer: "forget",
      node: "hotpath",
      counts: reason.counts,
      dropped: reason.dropped,
      threadId: body.thread_id,
    });
    return { changed: true, memory: toMemory(row) };
  }, { threadId: body.thread_id });
}

/**
 * Undoes a forget (or an invalidation that was not a supersede). A memory whose text a live memory
 * in its scope says now (remembered again since; letter case and spacing aside, as remember's
 * duplicate check) comes back replaced by it, as a correction to that text would be: history
 * RESTORE then MERGE, `memory.superseded_by` naming it.
 */
export async function restore(
  deps: ServiceDeps,
  tenant: TenantContext,
  id: string,
  body: LifecycleRequest,
): Promise<LifecycleResponse> {
  const now = deps.clock();
  return await withTenant(deps.sql, tenant, async (tx) => {
    // Remember's lock order: the text's hash, then the rows (in id order). A text never changes.
    const [seen] = await tx<{ content: string; namespace: string; source: string }[]>`
      select content, namespace, source from public.devai_memories where id = ${id}`;
    if (!seen) throw notFound(id);
    await lockContentHash(tx, tenant.tenantId, seen.content);
    const scopes = visibleScopes(seen.namespace, deps.config.namespaceRoot);
    // An episode is a record of a message, never a duplicate of a fact (docs/graph.md#episodes).
    const held = seen.source === "conversation"
      ? undefined
      : await liveWithText(tx, tenant.tenantId, seen.content, scopes, [id]);
    await lockMemories(tx, held ? [id, held.id] : [id]);
    const m = await lockMemory(tx, id);
    if (m.state === "active") {
      if (m.is_valid) return { changed: false, memory: m };
      // Re-validating a replaced memory would leave two versions of one fact: correct instead.
      if (m.superseded_by) {
        throw new HttpError(
          409,
          "already_superseded",
          `memory ${id} was replaced by ${m.superseded_by}; it cannot be restored`,
        );
      }
    }
    // One restore semantics for the API and SQL: public.restore_memory (restore_strength setting,
    // superseded memories stay invalid).
    const [row] = await tx`select ${memoryColumns(tx)} from public.restore_memory(${id}::uuid, ${now}::timestamptz)`;
    const restored = toMemory(row);
    if (
      held && restored.is_valid &&
      await supersedeMemory(tx, tenant.tenantId, held.id, id, { strength: 1, evidence: { restore: "text_exists" } })
    ) {
      // What the user said with it carries over to the memory that says it now, as a correction's
      // does: a user statement (and its pin) makes that one user-stated, a pin pins it.
      const keep = await lockMemory(tx, held.id);
      if (statedAlready(m)) await statedByUser(tx, keep, m.pinned);
      else if (m.pinned && !keep.pinned) await tx`update public.devai_memories set pinned = true where id = ${keep.id}`;
      await takeCategory(tx, await lockMemory(tx, keep.id), m.metadata?.category);
      return { changed: true, memory: await lockMemory(tx, id) };
    }
    return { changed: true, memory: restored };
  }, { threadId: body.thread_id });
}

/**
 * Protects a memory from decay (full strength; decay skips pinned memories). `event: "CONFIRM"` is
 * the same change said by the user about the fact's truth (/confirm, confirm_fact): history CONFIRM,
 * written every time (changed: true), also when the memory was pinned already.
 */
export async function pin(
  deps: ServiceDeps,
  tenant: TenantContext,
  id: string,
  body: LifecycleRequest,
  event?: "CONFIRM",
): Promise<LifecycleResponse> {
  const now = deps.clock();
  return await withTenant(deps.sql, tenant, async (tx) => {
    const m = await lockMemory(tx, id);
    if (m.state !== "active" || !m.is_valid) {
      throw new HttpError(
        409,
        "memory_not_active",
        `memory ${id} is forgotten or no longer valid; restore it before pinning`,
      );
    }
    // A confirm is the user's word that the fact holds: recorded (history CONFIRM, the change log)
    // even for a memory pinned already, where the update changes no audited column (the history
    // trigger fires for memory.event CONFIRM on a pinned row). A pin of a pinned one is a no-op.
    if (!event && m.pinned && m.strength === 1 && m.base_strength === 1) return { changed: false, memory: m };
    const [row] = await tx`
      update public.devai_memories
         set pinned = true, strength = 1, base_strength = 1, last_accessed_at = ${now}::timestamptz
       where id = ${id} returning ${memoryColumns(tx)}`;
    return { changed: true, memory: toMemory(row) };
  }, { threadId: body.thread_id, event });
}

/** The user confirms a fact: pinned, history CONFIRM (each confirmation, pinned already or not). */
export function confirm(
  deps: ServiceDeps,
  tenant: TenantContext,
  id: string,
  body: LifecycleRequest,
): Promise<LifecycleResponse> {
  return pin(deps, tenant, id, body, "CONFIRM");
}

export async function unpin(
  deps: ServiceDeps,
  tenant: TenantContext,
  id: string,
  body: LifecycleRequest,
): Promise<LifecycleResponse> {
  const now = deps.clock();
  return await withTenant(deps.sql, tenant, async (tx) => {
    const m = await lockMemory(tx, id);
    if (!m.pinned) return { changed: false, memory: m };
    // Decay restarts from now: counting the pinned months would prune it the next night.
    const [row] = await tx`
      update public.devai_memories set pinned = false, last_accessed_at = ${now}::timestamptz
       where id = ${id} returning ${memoryColumns(tx)}`;
    return { changed: true, memory: toMemory(row) };
  }, { threadId: body.thread_id });
}
