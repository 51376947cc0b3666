-- The living context's critical tier reads open contradictions through
-- public.context_open_contradictions (20261124600100). They now come from
-- public.memory_contradictions too: the nightly consolidation's and the write-time check's, open
-- until the user resolves them (docs/consolidation.md#contradictions); besides, as before, a
-- `contradicts` edge whose two memories are both valid and active again, unless the user resolved
-- that pair. Open means both memories valid and active, in the scopes. Same signature, same callers;
-- each pair once (a, b: the older and the newer when the table has it), newest first.
create or replace function public.context_open_contradictions(match_namespaces text[], max_count integer default 10)
returns table (memory_a uuid, memory_b uuid, detected_at timestamptz)
language sql
stable
security invoker
set search_path = ''
as $$
  select x.memory_a, x.memory_b, x.detected_at
    from (select distinct on (least(p.memory_a, p.memory_b), greatest(p.memory_a, p.memory_b))
                 p.memory_a, p.memory_b, p.detected_at
            from (select c.memory_a, c.memory_b, c.detected_at, 0 as pref
                    from public.memory_contradictions c
                   where c.resolution is null and c.owner_id = (select auth.uid())
                  union all
                  select r.to_id, r.from_id, r.created_at, 1
                    from public.memory_relations r
                   where r.relation_type = 'contradicts'
                     and r.owner_id = (select auth.uid())
                     and (r.valid_until is null or r.valid_until > now())
                     and not exists (select 1 from public.memory_contradictions d
                                      where d.resolution is not null and d.owner_id = r.owner_id
                                        and least(d.memory_a, d.memory_b) = least(r.from_id, r.to_id)
                                        and greatest(d.memory_a, d.memory_b) = greatest(r.from_id, r.to_id))) p
            join public.devai_memories a on a.id = p.memory_a
            join public.devai_memories b on b.id = p.memory_b
           where a.is_valid and a.state = 'active' and b.is_valid and b.state = 'active'
             and (a.namespace || '/') ^@ any (public.context_scope_prefixes(match_namespaces))
             and (b.namespace || '/') ^@ any (public.context_scope_prefixes(match_namespaces))
           order by least(p.memory_a, p.memory_b), greatest(p.memory_a, p.memory_b), p.pref, p.detected_at desc) x
   order by x.detected_at desc, x.memory_a
   limit greatest(1, least(coalesce(max_count, 10), 50))
$$;
revoke all on function public.context_open_contradictions(text[], integer) from public, anon;
grant execute on function public.context_open_contradictions(text[], integer) to authenticated, service_role;
