-- The assembly's record upserts the session's injection rows in memory id order, so two records of
-- one session wait for each other instead of deadlocking (docs/context.md#the-api,
-- docs/operations.md#lock-order).
--
-- public.record_context_assembly upserted public.context_injections in the order the memories were
-- placed (critical first, then relevant, background): two assemblies of one session that inject the
-- same memories in different orders (file A open: A's convention critical, B's in the background;
-- then file B: the other way round) took the rows in opposite orders. When their records ran at the
-- same time, each held one row and waited for the other's: Postgres rolled one back (40P01), and
-- since the record runs after the answer, its reinforcements, injections and event were lost
-- (tests/context_record_lock_order.test.ts: a third transaction holds one row while both queue).
-- The body is that of 20261128100000 but for the ORDER BY.

-- After context/assemble answers (called as the tenant by the `context` function, RLS applies):
-- reinforces the critical and relevant memories, upserts the session's injections (in memory id
-- order) and writes one memory_events row.
CREATE OR REPLACE FUNCTION public.record_context_assembly(p_session_id text, p_ids uuid[], p_tiers text[], p_levels text[], p_tokens integer[], p_reinforce uuid[], p_thread_id text, p_meta jsonb)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
begin
  if coalesce(cardinality(p_reinforce), 0) > 0 then
    perform count(*) from public.reinforce_memories(p_reinforce);
  end if;
  if p_session_id is not null and coalesce(cardinality(p_ids), 0) > 0 then
    insert into public.context_injections as i (owner_id, session_id, memory_id, tier, level, tokens, injected_at)
    select (select auth.uid()), p_session_id, t.id, t.tier, t.level, t.tokens, now()
      from unnest(p_ids, p_tiers, p_levels, p_tokens) as t(id, tier, level, tokens)
      cross join lateral (select from public.devai_memories m where m.id = t.id offset 0) m
     order by t.id
    on conflict (owner_id, session_id, memory_id) do update
       set tier = excluded.tier, level = excluded.level, tokens = excluded.tokens, injected_at = excluded.injected_at;
  end if;
  insert into public.memory_events (owner_id, thread_id, node, op, status, meta)
  values ((select auth.uid()), p_thread_id, 'context', 'search', 'ok', coalesce(p_meta, '{}'::jsonb));
end;
$function$;
