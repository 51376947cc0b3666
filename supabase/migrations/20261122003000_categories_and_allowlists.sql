-- Categories and per-agent allowlists (seed 001 §5), and query_memories, the search behind
-- memory.query (seed 001 §6, §6.1, §12). A memory's category is metadata->>'category'; procedural
-- memories (memory_type = 'procedural') count as category 'procedural' whatever their metadata
-- says, so they reach only agents whose allowlist has 'procedural' (seed 001 §12).
-- Layers: tables → policies/grants → seed rows → RPC.

-- Category configuration. context 'all': the category is always relevant to the agents allowed it
-- (memory.query returns its memories without a similarity threshold); 'rag': only by similarity.
-- rag_length caps how many memories of the category one query returns (null: no cap beyond top_k).
create table public.memory_categories (
  name       text primary key,
  context    text not null default 'rag',
  rag_length integer,
  kind       text not null default 'custom',
  created_at timestamptz not null default now(),
  constraint memory_categories_name_shape check (name ~ '^[a-z][a-z0-9_]{0,63}$'),
  constraint memory_categories_context_check check (context in ('all', 'rag')),
  constraint memory_categories_rag_length_range check (rag_length is null or rag_length between 1 and 1000),
  constraint memory_categories_kind_check check (kind in ('system', 'custom'))
);
comment on table public.memory_categories is
  'Memory categories (seed 001 §5): context mode (all | rag) and rag_length per category. A memory''s category is metadata->>''category''; procedural memories count as ''procedural''.';

-- Which agent may read which categories through memory.query. Enforced server-side: the
-- memory-retrieve function answers 403 for a category outside the list, and query_memories
-- intersects with it again, so a direct RPC call cannot widen an agent's view.
create table public.memory_agent_allowlists (
  agent      text not null,
  category   text not null references public.memory_categories (name) on update cascade on delete cascade,
  created_at timestamptz not null default now(),
  primary key (agent, category),
  constraint memory_agent_allowlists_agent_shape check (agent ~ '^[a-z][a-z0-9_-]{0,63}$')
);
create index memory_agent_allowlists_category on public.memory_agent_allowlists (category);
comment on table public.memory_agent_allowlists is
  'Per-agent category allowlists for memory.query (seed 001 §5, §12): requested categories must be a subset of the agent''s rows.';

-- Configuration, not tenant data: every signed-in caller reads it (the function needs it as the
-- tenant), only service_role and the owner (migrations, Studio) change it.
alter table public.memory_categories enable row level security;
alter table public.memory_agent_allowlists enable row level security;
revoke all on table public.memory_categories, public.memory_agent_allowlists from anon, authenticated, public;
grant select on table public.memory_categories, public.memory_agent_allowlists to authenticated;
grant all on table public.memory_categories, public.memory_agent_allowlists to service_role;

create policy "Signed-in users can read the memory categories" on public.memory_categories
  for select to authenticated using (true);
create policy "Signed-in users can read the agent allowlists" on public.memory_agent_allowlists
  for select to authenticated using (true);

-- Seed 001 §5's YAML. Its `system` categories keep their context and rag_length. The allowlists
-- name more categories than the YAML configures; they are registered as custom 'rag' categories so
-- the foreign key holds. 'procedural' is added for planner and executor (seed 001 §12).
insert into public.memory_categories (name, context, rag_length, kind) values
  ('profile', 'all', null, 'system'),
  ('event', 'rag', 30, 'system'),
  ('activity', 'rag', 50, 'system'),
  ('procedural', 'rag', null, 'system'),
  ('goals', 'rag', null, 'custom'),
  ('preferences', 'rag', null, 'custom'),
  ('relationships', 'rag', null, 'custom'),
  ('tasks', 'rag', null, 'custom'),
  ('projects', 'rag', null, 'custom'),
  ('tone', 'rag', null, 'custom'),
  ('style', 'rag', null, 'custom'),
  ('knowledge', 'rag', null, 'custom'),
  ('interests', 'rag', null, 'custom'),
  ('history', 'rag', null, 'custom'),
  ('recent_activity', 'rag', null, 'custom'),
  ('constraints', 'rag', null, 'custom')
on conflict (name) do nothing;

insert into public.memory_agent_allowlists (agent, category)
select a.agent, c.category
  from (values
    ('supervisor', array['profile', 'goals', 'preferences', 'event', 'activity', 'relationships', 'tasks']),
    ('planner',    array['goals', 'tasks', 'projects', 'procedural']),
    ('stylist',    array['preferences', 'tone', 'style']),
    ('researcher', array['knowledge', 'interests', 'history']),
    ('executor',   array['tasks', 'recent_activity', 'constraints', 'procedural'])
  ) as a(agent, categories),
  unnest(a.categories) as c(category)
on conflict do nothing;

-- memory.query's search (seed 001 §6/§6.1): match_memories' safety (security invoker so RLS
-- applies, tenant + embedding-model filter, is_valid/state/strength, scopes matched by path
-- segment with starts_with, never LIKE; HNSW with iterative scans) plus, applied in SQL:
--   match_categories  categories to return, intersected with match_agent's allowlist
--   filter_*          seed 001 §6.1 filters (metadata user_id/agent_id/run_id/actor_id/role,
--                     pinned, importance range, updated_at range); null means "no filter"
-- Categories with context 'all' are returned without the similarity threshold (they are always
-- relevant); rag_length caps each category's rows. Rows come back most similar first.
-- Called by memory-retrieve (query mode).
create or replace function public.query_memories(
  query_embedding extensions.vector(512),
  match_namespaces text[],
  match_agent text,
  match_categories text[],
  match_count integer default 5,
  similarity_threshold double precision default 0.7,
  match_embedding_model text default 'text-embedding-3-small',
  match_owner uuid default auth.uid(),
  filter_user_id text default null,
  filter_agent_id text default null,
  filter_run_id text default null,
  filter_actor_id text default null,
  filter_role text default null,
  filter_pinned boolean default null,
  filter_importance_min integer default null,
  filter_importance_max integer default null,
  filter_updated_after timestamptz default null,
  filter_updated_before timestamptz default null
)
returns table (
  id uuid,
  content text,
  similarity double precision,
  memory_type text,
  namespace text,
  category text,
  category_context text,
  strength double precision,
  priority text,
  importance smallint,
  pinned boolean,
  source text,
  metadata jsonb,
  session_id text,
  access_count integer,
  last_accessed_at timestamptz,
  created_at timestamptz,
  updated_at timestamptz,
  max_relation_strength real
)
language plpgsql
stable
security invoker
set search_path = ''
set hnsw.iterative_scan = 'relaxed_order'
set plan_cache_mode = 'force_custom_plan'
as $$
declare
  v_scopes     text[];
  v_categories text[];
  v_all        text[];
  v_pool       integer;
begin
  if match_count is null or match_count < 1 or match_count > 200 then
    raise exception 'match_count must be between 1 and 200, got %', match_count using errcode = '22023';
  end if;
  select coalesce(array_agg(rtrim(s, '/') || '/'), '{}')
    into v_scopes
    from unnest(coalesce(match_namespaces, '{}'::text[])) as s
   where s is not null and rtrim(s, '/') <> '';
  if cardinality(v_scopes) = 0 then
    raise exception 'at least one namespace scope is required' using errcode = '22023';
  end if;

  -- Only categories both requested and allowed for the agent; nothing allowed, nothing returned.
  select coalesce(array_agg(a.category), '{}'),
         coalesce(array_agg(a.category) filter (where c.context = 'all'), '{}')
    into v_categories, v_all
    from public.memory_agent_allowlists a
    join public.memory_categories c on c.name = a.category
   where a.agent = match_agent
     and a.category = any (coalesce(match_categories, '{}'::text[]));
  if cardinality(v_categories) = 0 then
    return;
  end if;
  -- Per-category caps and the threshold are applied after the nearest-neighbour step, so look
  -- further than match_count to still fill it.
  v_pool := least(match_count * 4, 400);

  return query
  with eligible as (
    select m.id, m.owner_id, m.content, m.embedding, m.memory_type, m.namespace, m.strength, m.priority,
           m.importance, m.pinned, m.source, m.metadata, m.session_id, m.access_count,
           m.last_accessed_at, m.created_at, m.updated_at,
           case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end as cat
      from public.devai_memories m
     where m.owner_id = match_owner
       and m.is_valid
       and m.state = 'active'
       and m.strength > 0.05
       and m.embedding_model = match_embedding_model
       and m.embedding is not null
       and (m.namespace || '/') ^@ any (v_scopes)
       and (filter_user_id is null or m.metadata ->> 'user_id' = filter_user_id)
       and (filter_agent_id is null or m.metadata ->> 'agent_id' = filter_agent_id)
       and (filter_run_id is null or m.metadata ->> 'run_id' = filter_run_id)
       and (filter_actor_id is null or m.metadata ->> 'actor_id' = filter_actor_id)
       and (filter_role is null or m.metadata ->> 'role' = filter_role)
       and (filter_pinned is null or m.pinned = filter_pinned)
       and (filter_importance_min is null or m.importance >= filter_importance_min)
       and (filter_importance_max is null or m.importance <= filter_importance_max)
       and (filter_updated_after is null or m.updated_at >= filter_updated_after)
       and (filter_updated_before is null or m.updated_at < filter_updated_before)
  ),
  nearest as materialized (
    select e.id, e.cat, e.embedding operator(extensions.<=>) query_embedding as distance
      from eligible e
     where e.cat = any (v_categories)
     order by e.embedding operator(extensions.<=>) query_embedding
     limit v_pool
  ),
  candidates as (
    select n.id, n.cat, n.distance
      from nearest n
     where 1 - n.distance > similarity_threshold or n.cat = any (v_all)
    union all
    -- context 'all' categories: their memories regardless of similarity (most important first).
    select a.id, a.cat, a.distance
      from (select e.id, e.cat, e.embedding operator(extensions.<=>) query_embedding as distance
              from eligible e
             where cardinality(v_all) > 0 and e.cat = any (v_all)
               and e.id not in (select n.id from nearest n)
             order by e.importance desc, e.updated_at desc
             limit match_count) a
  ),
  capped as (
    select c.id, c.cat, c.distance, cfg.context as cat_context,
           row_number() over (partition by c.cat order by c.distance) as rank_in_category,
           cfg.rag_length
      from candidates c
      join public.memory_categories cfg on cfg.name = c.cat
  )
  select e.id, e.content, 1 - k.distance, e.memory_type, e.namespace, k.cat, k.cat_context,
         e.strength, e.priority, e.importance, e.pinned, e.source, e.metadata, e.session_id,
         e.access_count, e.last_accessed_at, e.created_at, e.updated_at,
         (select max(r.strength) from public.memory_relations r
           where r.owner_id = e.owner_id and (r.from_id = e.id or r.to_id = e.id))
    from capped k
    join public.devai_memories e on e.id = k.id
   where k.rag_length is null or k.rank_in_category <= k.rag_length
   order by k.distance
   limit match_count;
end;
$$;

revoke all on function public.query_memories(extensions.vector, text[], text, text[], integer, double precision, text, uuid,
  text, text, text, text, text, boolean, integer, integer, timestamptz, timestamptz) from public, anon;
grant execute on function public.query_memories(extensions.vector, text[], text, text[], integer, double precision, text, uuid,
  text, text, text, text, text, boolean, integer, integer, timestamptz, timestamptz) to authenticated, service_role;
