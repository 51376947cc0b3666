-- The assembly's record writes the session's injection rows before it reinforces, so two records
-- do not deadlock over the memories one reinforces and the other injects (docs/context.md#the-api,
-- docs/operations.md#lock-order).
--
-- public.record_context_assembly reinforced first: public.reinforce_memories locks the critical
-- and relevant memories FOR UPDATE (skipping those locked elsewhere) and holds them to commit.
-- Then it inserted the session's injection rows, whose foreign key to public.devai_memories takes
-- a KEY SHARE lock on every injected memory, background ones included, and waits for a FOR UPDATE
-- lock. With file one.ts open, x is critical and y background; with two.ts the other way round:
-- two such records at once each reinforced (locked) its critical memory, then waited for the
-- other's to insert its background one, and Postgres rolled one back (40P01): its reinforcements,
-- injections and event lost (tests/context_record_lock_order.test.ts, second test). Now the rows
-- are written first (in memory id order, 20261202500000), and the reinforcement, which waits for
-- nothing (SKIP LOCKED), comes after: a record waits only while inserting, never while holding a
-- memory's FOR UPDATE lock. The body is otherwise that of 20261202500000.

-- After context/assemble answers (called as the tenant by the `context` function, RLS applies):
-- upserts the session's injections (in memory id order), reinforces the critical and relevant
-- memories and writes one memory_events row.
CREATE OR REPLACE FUNCTION public.record_context_assembly(p_session_id text, p_ids uuid[], p_tiers text[], p_levels text[], p_tokens integer[], p_reinforce uuid[], p_thread_id text, p_meta jsonb)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
begin
  if p_session_id is not null and coalesce(cardinality(p_ids), 0) > 0 then
    insert into public.context_injections as i (owner_id, session_id, memory_id, tier, level, tokens, injected_at)
    select (select auth.uid()), p_session_id, t.id, t.tier, t.level, t.tokens, now()
      from unnest(p_ids, p_tiers, p_levels, p_tokens) as t(id, tier, level, tokens)
      cross join lateral (select from public.devai_memories m where m.id = t.id offset 0) m
     order by t.id
    on conflict (owner_id, session_id, memory_id) do update
       set tier = excluded.tier, level = excluded.level, tokens = excluded.tokens, injected_at = excluded.injected_at;
  end if;
  if coalesce(cardinality(p_reinforce), 0) > 0 then
    perform count(*) from public.reinforce_memories(p_reinforce);
  end if;
  insert into public.memory_events (owner_id, thread_id, node, op, status, meta)
  values ((select auth.uid()), p_thread_id, 'context', 'search', 'ok', coalesce(p_meta, '{}'::jsonb));
end;
$function$;
