-- memory_search.relation_strengths looks the memories at the other ends of a result's edges up by
-- id, now as it did as of an instant.
--
-- Its "now" branch joined a result's edges to public.devai_memories, and the plan of that join
-- followed the statistics: with the tables not analyzed since the tenant grew (a tenant's first
-- thousands of memories, written faster than autovacuum analyzes), memory-retrieve/query on 1,600
-- memories took 114 ms, almost all here, the planner reading every memory of the tenant once per
-- result (a scan of the owner for each of a search's ids); after ANALYZE, 14 ms. Each other end is
-- now a lateral lookup by id with `offset 0`, which the planner cannot flatten into a join (as
-- 20261128100000 did for the other reads), so its plan is a probe of the primary key whatever the
-- statistics say. What it computes is unchanged; the body is 20261128500000's but for that read.
-- pgTAP 93_relation_strengths_read_by_id counts the rows it reads on fresh, un-analyzed tables.
create or replace function memory_search.relation_strengths(p_owner uuid, p_ids uuid[], p_at timestamptz, p_scopes text[])
returns table (id uuid, strength real)
language plpgsql
stable
set search_path = ''
as $$
#variable_conflict use_column
begin
  -- For each memory, the strongest edge valid at p_at (now when null) to a memory the same search
  -- could see then: held, in scope, not a raw episode (a fact's derived_from edge to the
  -- conversation it came from is provenance, not corroboration) and, now, above the retrieval
  -- floor. A contradiction corroborates nothing. One call for a search's memories (a call per
  -- memory cost a plpgsql call each, 20-200 of them per retrieval counting the vector list); per
  -- memory an aggregate over its edges, never a sort: callers run with sorting switched off
  -- (match_memories' index walk), where a sort is costed so high that the statement would be
  -- JIT-compiled at every call. The memory at an edge's other end is looked up by its id alone
  -- (offset 0: never a join, which stale statistics planned as a read of the whole tenant per
  -- memory) and filtered after: with the filters inside, the lookup took the partial index
  -- devai_memories_owner_namespace, whose conditions they match, for a read of the tenant again.
  if p_at is null then
    return query
    select x.id,
           (select max(e.strength)
              from (select r.strength, r.to_id as other from public.memory_relations r
                     where r.from_id = x.id and r.owner_id = p_owner and r.relation_type <> 'contradicts'
                       and r.valid_from <= now() and (r.valid_until is null or r.valid_until > now())
                    union all
                    select r.strength, r.from_id from public.memory_relations r
                     where r.to_id = x.id and r.owner_id = p_owner and r.relation_type <> 'contradicts'
                       and r.valid_from <= now() and (r.valid_until is null or r.valid_until > now())) e
              cross join lateral (select o.is_valid, o.state, o.strength, o.source, o.namespace
                                    from public.devai_memories o
                                   where o.id = e.other and o.owner_id = p_owner offset 0) o
             where o.is_valid and o.state = 'active' and o.strength > 0.05
               and o.source is distinct from 'conversation'
               and (p_scopes is null or (o.namespace || '/') ^@ any (p_scopes)))
      from (select distinct u as id from unnest(p_ids) as u) x;
    return;
  end if;
  return query
  select x.id,
         (select max(e.strength)
            from (select r.strength, r.to_id as other from public.memory_relations r
                   where r.from_id = x.id and r.owner_id = p_owner and r.relation_type <> 'contradicts'
                     and r.created_at <= p_at and r.valid_from <= p_at and (r.valid_until is null or r.valid_until > p_at)
                  union all
                  select r.strength, r.from_id from public.memory_relations r
                   where r.to_id = x.id and r.owner_id = p_owner and r.relation_type <> 'contradicts'
                     and r.created_at <= p_at and r.valid_from <= p_at and (r.valid_until is null or r.valid_until > p_at)) e
            cross join lateral (select o from public.devai_memories o
                                 where o.id = e.other and o.owner_id = p_owner offset 0) v
           where (v.o).source is distinct from 'conversation'
             and public.memory_graph_visible(v.o, p_at, p_scopes))
    from (select distinct u as id from unnest(p_ids) as u) x;
end;
$$;
