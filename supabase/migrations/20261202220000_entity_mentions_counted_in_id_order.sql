-- link_memory_entities locks the entities whose mentions it counts in id order
-- (docs/operations.md#lock-order).
--
-- Each new link adds one to its entity's mention_count. The UPDATE that did it joined the counts,
-- grouped by a hash aggregate, to the tenant's entities in a hash join, and updated (so locked)
-- the rows in the aggregate's hash order, which depends on the set linked and on the plan: among
-- 400 entities of a tenant, a call linking 5 of them updated ent004, ent002, ent003, ent001,
-- ent005, and a call linking 300, those 5 among them, ent004, ent005, ent003, ent002, ent001 (after
-- an ANALYZE the same 5 went ent004, ent002, ent003, ent005, ent001). Two concurrent links of
-- overlapping sets (a remember's rules and a consolidation, an entity backfill of many memories)
-- could each hold an entity the other needed next: a call linking the 5 held ent004 and ent002
-- while it waited for ent003 (a third transaction held it), a call linking 298 of the 300 (not
-- ent003, ent004) updated what it took before ent002 and waited for it; once ent003 was let go, the
-- first waited for one of those: a deadlock, 40P01, 3 runs of 3 (a scratch script, a trigger
-- recording the update order). Now the counts are sorted by entity id and each entity's row is
-- locked by its id in that order, in the same statement before its UPDATE, which changes only rows
-- already locked: two links wait for each other in one order, as writes of memories do
-- (lockMemories); the same interleaving now commits both. `for no key update`: what the UPDATE
-- takes itself; a link's foreign key check (key share) of the entity does not wait for it.
-- tests/entity_link_lock_order.test.ts. The rest of the body is 20261124300100's; CREATE OR
-- REPLACE keeps its grants.

-- Links memories to entities, as the signed-in tenant (security invoker: RLS and the composite
-- foreign keys apply). p_links: a JSON array (at most 500) of
--   {"memory_id", "name", "type", "mention"?, "confidence"? (1), "source"? ('rules')}.
-- Each name is resolved inside the tenant by its key (public.memory_entity_key) against canonical
-- names first, then aliases (public.memory_entity_resolve); a name that resolves to nothing
-- becomes a new entity of the given type (the first type seen wins: an entity keeps its type).
-- A link that exists already is left as it is; each new link adds one to its entity's
-- mention_count and moves last_seen_at. Returns the number of new links. Names without a key
-- (only punctuation) or with control characters are skipped. Called by the episode, remember, correct, dedup and
-- consolidation paths (supabase/functions/_shared/entities.ts).
create or replace function public.link_memory_entities(p_links jsonb)
returns integer
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
  v_owner uuid := auth.uid();
  v_links jsonb;
  v_new   integer;
begin
  if v_owner is null then
    raise exception 'link_memory_entities runs as a signed-in tenant' using errcode = '42501';
  end if;
  if p_links is null or jsonb_typeof(p_links) <> 'array' or jsonb_array_length(p_links) > 500 then
    raise exception 'p_links must be a JSON array of at most 500 links' using errcode = '22023';
  end if;
  -- Parsed once: keys computed; names without a key or with control characters dropped.
  select coalesce(jsonb_agg(jsonb_build_object(
           'memory_id', l ->> 'memory_id', 'name', left(btrim(l ->> 'name'), 200), 'type', l ->> 'type',
           'mention', left(coalesce(nullif(btrim(l ->> 'mention'), ''), btrim(l ->> 'name')), 200),
           'confidence', coalesce((l ->> 'confidence')::real, 1), 'source', coalesce(l ->> 'source', 'rules'),
           'key', public.memory_entity_key(l ->> 'name'))), '[]'::jsonb)
    into v_links
    from jsonb_array_elements(p_links) as l
   where public.memory_entity_key(l ->> 'name') <> '' and (l ->> 'name') !~ '[[:cntrl:]]';

  -- 1. keys no entity answers to become entities (a concurrent insert of the same name wins quietly)
  with unknown as materialized (
    select k.key
      from (select distinct r.key from jsonb_to_recordset(v_links) as r(key text)) k
     where public.memory_entity_resolve(v_owner, k.key) is null
  )
  insert into public.memory_entities (owner_id, canonical_name, entity_type)
  select distinct on (r.key) v_owner, r.name, r.type
    from jsonb_to_recordset(v_links) as r(name text, type text, confidence real, key text)
    join unknown u on u.key = r.key
   order by r.key, r.confidence desc, r.name
  on conflict (owner_id, normalized_name) do nothing;

  -- 2. resolve each key once, link, and count the new mentions (the entities locked in id order:
  -- docs/operations.md#lock-order)
  with keys as materialized (
    select k.key, public.memory_entity_resolve(v_owner, k.key) as entity_id
      from (select distinct r.key from jsonb_to_recordset(v_links) as r(key text)) k
  ),
  linked as (
    insert into public.memory_entity_links (owner_id, memory_id, entity_id, mention, confidence, source)
    select distinct on (r.memory_id, k.entity_id) v_owner, r.memory_id, k.entity_id, r.mention, r.confidence, r.source
      from jsonb_to_recordset(v_links) as r(memory_id uuid, mention text, confidence real, source text, key text)
      join keys k on k.key = r.key
     where k.entity_id is not null
     order by r.memory_id, k.entity_id, r.confidence desc
    on conflict (memory_id, entity_id) do nothing
    returning entity_id
  ),
  -- each entity's new mentions, its row locked in id order, each looked up by its id (a lateral
  -- lookup per id over the sorted counts, as public.lock_retrieved_memories locks memories)
  locked as (
    select e.id, c.n
      from (select l.entity_id, count(*)::integer as n from linked l group by l.entity_id order by l.entity_id) c
     cross join lateral (
           select e.id from public.memory_entities e
            where e.id = c.entity_id
              for no key update of e) e
  ),
  counted as (
    update public.memory_entities e
       set mention_count = e.mention_count + k.n,
           last_seen_at = greatest(e.last_seen_at, now())
      from locked k
     where e.id = k.id
    returning 1
  )
  select count(*)::integer into v_new from linked;
  return v_new;
end;
$$;
