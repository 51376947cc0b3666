-- A who/what question's entity lookup reads the links of live memories, facts apart from episodes.
--
-- public.memory_entity_lookup read each entity's newest 2 × max_nodes links whatever their memory
-- was, and only then left out what the caller may not be given (forgotten, superseded, faded,
-- outside the scopes), then kept the newest max_nodes memories, episodes and facts alike. An agent
-- that sends every message as an episode names its files and packages in every turn: once 2 ×
-- max_nodes newer messages (or forgotten memories) named an entity, the lookup read only those,
-- and the fact about it was no longer found by its name (150 episodes naming `src/billing.ts`
-- after the fact: 45 rows, none of them the fact; hybrid_search, which leaves episodes out of a
-- who/what answer, gave the fact no graph signal).
--
-- Now, for a lookup of now (as_of null), each entity's links are read from the partial index
-- memory_entity_links_profile (migration 20261128910000), which holds only the links of live
-- memories by kind in valid_from order: its newest 2 × max_nodes facts and, apart, its newest
-- 2 × max_nodes episodes, so neither forgotten memories nor episodes push a fact out of the read.
-- The answer keeps facts before episodes (each newest first, at most max_nodes in all), as
-- retrieval ranks an episode below a fact. A lookup as of an instant (the index says where a memory
-- shows now, not then) reads the newest 2 × max_nodes links made by that instant, as the hops
-- follow only the edges made by then, besides the newest 2 × max_nodes links it read before (a
-- link made since for an older memory, as the entity backfill makes, still counts): the links
-- made since no longer push out those of then (as of 1 April, a fact of that day was missed once
-- 2 × max_nodes memories had named it since). The work is at most 20 entities × 4 × max_nodes
-- links. docs/graph.md#graph-signals.

CREATE OR REPLACE FUNCTION public.memory_entity_lookup(terms text[], max_nodes integer DEFAULT 50, as_of timestamp with time zone DEFAULT NULL::timestamp with time zone, match_namespaces text[] DEFAULT NULL::text[], match_owner uuid DEFAULT auth.uid())
 RETURNS TABLE(id uuid, entity_id uuid, entity_name text, entity_type text, weight double precision, event_at timestamp with time zone)
 LANGUAGE plpgsql
 STABLE ROWS 50
 SET search_path TO ''
AS $function$
declare
  v_owner    uuid := match_owner;
  v_prefixes text[] := public.memory_scope_prefixes(match_namespaces);
  v_keys     text[];
begin
  if max_nodes is null or max_nodes < 1 or max_nodes > 500 then
    raise exception 'max_nodes must be between 1 and 500, got %', max_nodes using errcode = '22023';
  end if;
  if cardinality(terms) > 20 then
    raise exception 'at most 20 terms, got %', cardinality(terms) using errcode = '22023';
  end if;
  select array_agg(distinct public.memory_entity_key(left(t, 200))) into v_keys
    from unnest(coalesce(terms, '{}'::text[])) as t
   where public.memory_entity_key(left(t, 200)) <> '';
  if v_owner is null or v_keys is null then
    return;
  end if;

  return query
  with matched as (
    select e.id, 1.0::double precision as quality
      from public.memory_entities e
     where e.owner_id = v_owner and e.normalized_name = any (v_keys)
    union all
    select e.id, 0.8
      from public.memory_entities e
     where cardinality(e.alias_keys) > 0
       and e.alias_keys && (select array_agg(v_owner::text || '|' || k) from unnest(v_keys) as k)
  ),
  entities as (
    select e.id, e.canonical_name, e.entity_type, q.quality
      from (select m.id, max(m.quality) as quality from matched m group by m.id) q
      join public.memory_entities e on e.id = q.id
     order by q.quality desc, e.mention_count desc, e.id
     limit 20
  ),
  hits as (
    select distinct on (m.id) m.id, e.id as entity_id, e.canonical_name, e.entity_type,
           l.confidence * e.quality as weight, m.valid_from, m.source = 'conversation' as episode
      from entities e
     cross join lateral (
       -- now: the live links of each kind, newest first, from memory_entity_links_profile
       (select x.memory_id, x.confidence from public.memory_entity_links x
         where as_of is null and x.entity_id = e.id and x.owner_id = v_owner and x.profile_kind = 'fact'
         order by x.profile_at desc, x.memory_id desc
         limit max_nodes * 2)
       union all
       (select x.memory_id, x.confidence from public.memory_entity_links x
         where as_of is null and x.entity_id = e.id and x.owner_id = v_owner and x.profile_kind = 'episode'
         order by x.profile_at desc, x.memory_id desc
         limit max_nodes * 2)
       union all
       -- as of an instant (where a memory shows now says nothing of then): the links made by
       -- then, newest first (memory_entity_links_entity), as the hops read the edges made by then,
       -- and the newest links as before (one made since for an older memory, as the entity
       -- backfill makes, still names it)
       (select x.memory_id, x.confidence from public.memory_entity_links x
         where as_of is not null and x.entity_id = e.id and x.owner_id = v_owner and x.created_at <= as_of
         order by x.created_at desc
         limit max_nodes * 2)
       union all
       (select x.memory_id, x.confidence from public.memory_entity_links x
         where as_of is not null and x.entity_id = e.id and x.owner_id = v_owner
         order by x.created_at desc
         limit max_nodes * 2)) l
      join public.devai_memories m on m.id = l.memory_id
     where public.memory_graph_visible(m, as_of, v_prefixes)
     order by m.id, l.confidence * e.quality desc, e.id
  )
  select h.id, h.entity_id, h.canonical_name, h.entity_type, h.weight, h.valid_from
    from hits h
   order by h.episode, h.valid_from desc, h.id
   limit max_nodes;
end;
$function$;
revoke all on function public.memory_entity_lookup(text[], integer, timestamptz, text[], uuid) from public, anon;
grant execute on function public.memory_entity_lookup(text[], integer, timestamptz, text[], uuid) to authenticated, service_role;
