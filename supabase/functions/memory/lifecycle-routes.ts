// Lifecycle routes of one memory: forget (soft delete) and restore, pin / confirm and unpin.
import { withTenant } from "../_shared/db.ts";
import { HttpError, json } from "../_shared/http.ts";
import { memoryColumns } from "./memory-row.ts";
import { type Ctx, lockMemory, type MemoryApp, optionalBody, parseId, type RouteDeps, toMemory, who } from "./routing.ts";
import { ForgetRequest, LifecycleRequest } from "./schemas.ts";
import { purgeGraceDays } from "./settings.ts";

export function registerLifecycleRoutes(app: MemoryApp, deps: RouteDeps): void {
  const { sql, config, clock } = deps;

  // -- forget / restore ----------------------------------------------------------------------
  app.post("/memory/:id/forget", async (c) => {
    const id = parseId(c);
    const body = await optionalBody(c.req.raw, ForgetRequest, config.maxBodyBytes);
    const tenant = who(c);
    const now = clock();
    const result = await withTenant(sql, tenant, async (tx) => {
      const m = await lockMemory(tx, id);
      if (m.state === "soft_deleted") return { changed: false, memory: m };
      const days = await purgeGraceDays(tx);
      const [row] = await tx`
        update public.devai_memories
           set state = 'soft_deleted',
               purge_at = ${now}::timestamptz + make_interval(secs => ${days * 86400}),
               metadata = ${body.reason ? tx`metadata || ${tx.json({ forget_reason: body.reason })}` : tx`metadata`}
         where id = ${id} returning ${memoryColumns(tx)}`;
      return { changed: true, memory: toMemory(row) };
    }, { threadId: body.thread_id });
    return json(result);
  });

  app.post("/memory/:id/restore", async (c) => {
    const id = parseId(c);
    const body = await optionalBody(c.req.raw, LifecycleRequest, config.maxBodyBytes);
    const now = clock();
    const result = await withTenant(sql, who(c), async (tx) => {
      const m = await lockMemory(tx, id);
      if (m.state === "active") {
        if (m.is_valid) return { changed: false, memory: m };
        // Re-validating a replaced memory would leave two versions of one fact: correct instead.
        if (m.superseded_by) {
          throw new HttpError(409, "already_superseded", `memory ${id} was replaced by ${m.superseded_by}; it cannot be restored`);
        }
      }
      // One restore semantics for the API and SQL: public.restore_memory (restore_strength setting,
      // superseded memories stay invalid).
      const [row] = await tx`select ${memoryColumns(tx)} from public.restore_memory(${id}::uuid, ${now}::timestamptz)`;
      return { changed: true, memory: toMemory(row) };
    }, { threadId: body.thread_id });
    return json(result);
  });

  // -- pin / confirm / unpin -----------------------------------------------------------------
  // /confirm is /pin said by the user about the fact's truth: the same change, history CONFIRM.
  const pin = (event?: "CONFIRM") => async (c: Ctx) => {
    const id = parseId(c);
    const body = await optionalBody(c.req.raw, LifecycleRequest, config.maxBodyBytes);
    const now = clock();
    const result = await withTenant(sql, who(c), async (tx) => {
      const m = await lockMemory(tx, id);
      if (m.state !== "active" || !m.is_valid) {
        throw new HttpError(409, "memory_not_active", `memory ${id} is forgotten or no longer valid; restore it before pinning`);
      }
      if (m.pinned && m.strength === 1 && m.base_strength === 1) return { changed: false, memory: m };
      // Pinned memories never decay: full strength, and decay skips them.
      const [row] = await tx`
        update public.devai_memories
           set pinned = true, strength = 1, base_strength = 1, last_accessed_at = ${now}::timestamptz
         where id = ${id} returning ${memoryColumns(tx)}`;
      return { changed: true, memory: toMemory(row) };
    }, { threadId: body.thread_id, event });
    return json(result);
  };
  app.post("/memory/:id/pin", pin());
  app.post("/memory/:id/confirm", pin("CONFIRM"));

  app.post("/memory/:id/unpin", async (c) => {
    const id = parseId(c);
    const body = await optionalBody(c.req.raw, LifecycleRequest, config.maxBodyBytes);
    const now = clock();
    const result = await withTenant(sql, who(c), async (tx) => {
      const m = await lockMemory(tx, id);
      if (!m.pinned) return { changed: false, memory: m };
      // Decay restarts from now: counting the pinned months would prune it the next night.
      const [row] = await tx`
        update public.devai_memories set pinned = false, last_accessed_at = ${now}::timestamptz
         where id = ${id} returning ${memoryColumns(tx)}`;
      return { changed: true, memory: toMemory(row) };
    }, { threadId: body.thread_id });
    return json(result);
  });
}
