-- public.memory_at answers the fields a memory's history snapshot records as they were at p_at
-- (namespace, memory_type, priority, source, importance, pinned, metadata), beside content,
-- validity, state and supersede. GET memory?as_of= filtered pinned, importance, priority, source
-- and category on today's values and showed them as today's: a memory pinned then and unpinned
-- since was missing from `as_of=<then>&pinned=true` (28 of 901 after 126 unpins), an answer about
-- the past that moved with later writes (docs/graph.md#as-of).
--
-- The return type changes, so the function is dropped and created again; its callers (plpgsql,
-- resolved when run) name the columns they read and are unchanged.
drop function public.memory_at(public.devai_memories, timestamptz);

-- What a memory held at an instant (20261124300000_bitemporal_facts_and_typed_edges.sql): the
-- newest history row at or before p_at that records a state, else the row itself. The one as-of
-- rule: match_memories, query_memories, the graph functions and the memory API's as_of call it
-- (docs/graph.md#as-of). A field a history row lacks (rows written before it was recorded) is
-- taken from the row as it is now.
create function public.memory_at(m public.devai_memories, p_at timestamptz)
returns table (held boolean, content text, is_valid boolean, state text, superseded_by uuid,
               namespace text, memory_type text, priority text, source text, importance smallint,
               pinned boolean, metadata jsonb)
language plpgsql
stable
rows 1
set search_path = ''
as $$
#variable_conflict use_column
begin
  return query
  select m.created_at <= p_at
           and (m.valid_until is null or m.valid_until > p_at)
           and coalesce(h.is_valid, m.is_valid)
           and coalesce(h.state, m.state) = 'active',
         coalesce(h.content, m.content),
         coalesce(h.is_valid, m.is_valid),
         coalesce(h.state, m.state),
         case when h.found then h.superseded_by else m.superseded_by end,
         coalesce(h.meta ->> 'namespace', m.namespace),
         coalesce(h.meta ->> 'memory_type', m.memory_type),
         coalesce(h.meta ->> 'priority', m.priority),
         case when h.meta ? 'source' then h.meta ->> 'source' else m.source end,
         coalesce((h.meta ->> 'importance')::smallint, m.importance),
         coalesce((h.meta ->> 'pinned')::boolean, m.pinned),
         coalesce(h.meta -> 'metadata', m.metadata)
    from (select 1) as one
    left join lateral (
      select true as found, x.new_content as content, (x.meta ->> 'is_valid')::boolean as is_valid,
             x.meta ->> 'state' as state, (x.meta ->> 'superseded_by')::uuid as superseded_by, x.meta
        from public.memory_history x
       where x.memory_id = m.id and x.ts <= p_at and x.meta ? 'state'
       order by x.ts desc, x.id desc
       limit 1) h on true;
end;
$$;

revoke all on function public.memory_at(public.devai_memories, timestamptz) from public, anon;
grant execute on function public.memory_at(public.devai_memories, timestamptz) to authenticated, service_role;
