-- The size of a search scope, kept by the write path: match_memories decides between the exact
-- comparison and the HNSW walk by reading one row per scope base instead of counting the scope.
--
-- public.memory_scope_size counted the scope's index entries up to memory_exact_scan_limit + 1
-- (2,172 for the bench's biggest tenant at 100k) on every search. An index-only scan, but its heap
-- fetches follow the visibility map, which reinforcement's updates clear: after one bench run
-- 14,504 of 25,024 pages were all-visible and the count made 2,450 heap fetches, 2,314 buffers,
-- 7.2 ms under EXPLAIN ANALYZE (after another run and some writes: 3,472 entries, 2,666 heap
-- fetches, 2,525 buffers; now 14 buffers). It also counted raw episodes (source 'conversation'),
-- which no search path compares (the HNSW index leaves them out, the exact path drops them row by
-- row), so a scope of a few memories and many episodes took the HNSW walk.
--
-- memory_private.memory_scope_counts holds, per tenant and scope base (each namespace and each of
-- its parents: 'devai', 'devai/project', 'devai/project/x' for 'devai/project/x'), how many of the
-- tenant's valid, active memories that are not episodes lie under it. Triggers on
-- devai_memories add and take away (a write touches one row per level of its namespace, at most
-- 128); a scope's size is then the sum of its bases' rows, whatever the number of namespaces
-- below them. docs/retrieval.md#vector.
--
-- Concurrency: a statement's rows are counted together (inserts and deletes from the statement's
-- transition table, updates kept as they come and summed at the end), and at the statement's end
-- each tenant and base's change is added to a row of the base no other transaction holds (FOR
-- UPDATE SKIP LOCKED) or, if every row is held, to a row of its own: writers never wait for each other
-- here and cannot deadlock, and a rollback takes its change back with it. A base may so have a
-- few rows (at most about as many as its concurrent writers); the devai-scope-count-compaction
-- job merges them. In an isolation level above read committed a writer always adds a row
-- (updating a row changed since its snapshot would fail the transaction).
-- The triggers fire ALWAYS (also under session_replication_role = replica, as bulk imports run),
-- and a TRUNCATE empties the counts, so the counts cannot miss rows written that way.
--
-- Episodes leave the scope's size, and the exact path reads past them no more: it read the scope
-- by devai_memories_owner_namespace, which holds them, and fetched each episode's row to drop it
-- (40 memories beside 3,000 episodes: 3,062 rows read; by devai_memories_owner_namespace_searched,
-- which holds what search compares, 62).
--
-- A count that drifts anyway (a bug, a hand edit) costs speed, never results: a count too small
-- sends a large scope to the exact path (exact answers, slower); a count too large sends a small
-- scope to the HNSW walk, and a walk that comes back short is checked against a fresh count
-- (memory_search.scope_rows, the former count without episodes) before the exact fallback
-- decides.
-- memory_private.recount_scope_sizes() rebuilds the counts (done below once, for the memories
-- written before this migration).

create table memory_private.memory_scope_counts (
  id       bigint generated always as identity primary key,
  owner_id uuid not null,
  scope    text not null,
  memories integer not null
);
create index memory_scope_counts_owner_scope on memory_private.memory_scope_counts (owner_id, scope);
comment on table memory_private.memory_scope_counts is
  'Per tenant and scope base (a namespace or one of its parents), the valid, active memories that are not episodes under it: the sum of the base''s rows (a base has one row, or a few while writers ran at once). Kept by the devai_memories_count_scope_* triggers; read by public.memory_scope_size. docs/retrieval.md#vector.';
alter table memory_private.memory_scope_counts enable row level security;
create policy "Service role can read scope counts" on memory_private.memory_scope_counts
  for select to service_role using (true);
grant select on memory_private.memory_scope_counts to service_role;

-- The scope bases a namespace falls under: itself and each of its parents ('a', 'a/b', 'a/b/c'
-- for 'a/b/c'), the bases a search scope can name (match_memories matches by path segment).
-- Called by the counting trigger and recount_scope_sizes.
create function memory_private.namespace_scopes(p_namespace text)
returns text[]
language plpgsql
immutable
set search_path = ''
as $$
declare
  v_parts  text[] := string_to_array(p_namespace, '/');
  v_scopes text[] := '{}';
begin
  for i in 1 .. coalesce(cardinality(v_parts), 0) loop
    v_scopes := v_scopes || array_to_string(v_parts[1:i], '/');
  end loop;
  return v_scopes;
end;
$$;
revoke all on function memory_private.namespace_scopes(text) from public;

-- Adds changes ({"<owner><base>": change}) to the scope counts, one per tenant and base. Each is
-- added to a row of the base no other transaction holds (FOR UPDATE SKIP LOCKED), or, when every
-- row is held or the transaction runs above read committed (updating a row changed since its
-- snapshot would fail it), to a row of its own: writers never wait for each other here, so they
-- cannot deadlock. Called by the counting triggers below.
create function memory_private.add_to_scope_counts(p_changes jsonb)
returns void
language plpgsql
set search_path = ''
as $$
declare
  v_shared boolean := current_setting('transaction_isolation') = 'read committed';
  v_change record;
  v_done   boolean;
begin
  for v_change in
    select left(c.key, 36)::uuid as owner_id, substr(c.key, 37) as scope, c.value::integer as delta
      from jsonb_each_text(coalesce(p_changes, '{}')) as c(key, value)
     where c.value::integer <> 0
     order by c.key
  loop
    v_done := false;
    if v_shared then
      update memory_private.memory_scope_counts c
         set memories = c.memories + v_change.delta
       where c.id = (select h.id from memory_private.memory_scope_counts h
                      where h.owner_id = v_change.owner_id and h.scope = v_change.scope
                      limit 1
                        for update skip locked);
      v_done := found;
    end if;
    if not v_done then
      insert into memory_private.memory_scope_counts (owner_id, scope, memories)
      values (v_change.owner_id, v_change.scope, v_change.delta);
    end if;
  end loop;
end;
$$;
revoke all on function memory_private.add_to_scope_counts(jsonb) from public;

-- Statement triggers of devai_memories after INSERT (and COPY) and DELETE: the rows the statement
-- added or removed (its transition table) counted per tenant and base in one query, then added.
-- Counting each row on its own made a 5,000-row insert update one count row 5,000 times in one
-- transaction, each update walking the chain of versions the transaction had left before it
-- (none can be pruned while it runs): 0.6 ms a row.
create function memory_private.count_scope_rows()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  -- Both triggers name their transition table "changed".
  perform memory_private.add_to_scope_counts(
    (select jsonb_object_agg(x.key, case when tg_op = 'DELETE' then -x.n else x.n end)
       from (select r.owner_id::text || s.scope as key, count(*) as n
               from changed r
              cross join lateral unnest(memory_private.namespace_scopes(r.namespace)) as s(scope)
              where r.is_valid and r.state = 'active' and r.source is distinct from 'conversation'
              group by r.owner_id, s.scope) as x));
  return null;
end;
$$;
revoke all on function memory_private.count_scope_rows() from public;

-- An updated row's changes to the counts until its statement ends (flush_scope_counts), by
-- transaction. Unlogged: a row lives only within its statement, and is never read elsewhere.
create unlogged table memory_private.scope_count_changes (
  id       bigint generated always as identity primary key,
  xact     xid8 not null,
  owner_id uuid not null,
  scope    text not null,
  change   integer not null
);
create index scope_count_changes_xact on memory_private.scope_count_changes (xact);
comment on table memory_private.scope_count_changes is
  'The scope-count changes of the rows an UPDATE of devai_memories changed, until the statement''s end, when memory_private.flush_scope_counts adds them to memory_private.memory_scope_counts and deletes them. docs/operations.md#scope-counts.';
alter table memory_private.scope_count_changes enable row level security;
create policy "Service role can read scope count changes" on memory_private.scope_count_changes
  for select to service_role using (true);
grant select on memory_private.scope_count_changes to service_role;

-- Row trigger of devai_memories after an UPDATE that changes what is counted (validity, state,
-- source, namespace, owner): the row's change to its bases (-1 each for the old, +1 for the new;
-- the levels a namespace move keeps add up to 0), kept in scope_count_changes for the statement's
-- end. A transition table is not used for updates: it would hold a copy of every row every update
-- writes (reinforcement, decay's strength pass), counted or not. Added up in a transaction
-- setting instead, 5,000 invalidations across 200 tenants took 29 s (the setting parsed again
-- for each row, and added early past a bound).
create function memory_private.count_scope_update()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  insert into memory_private.scope_count_changes (xact, owner_id, scope, change)
  select pg_catalog.pg_current_xact_id(), old.owner_id, s.scope, -1
    from unnest(memory_private.namespace_scopes(old.namespace)) as s(scope)
   where old.is_valid and old.state = 'active' and old.source is distinct from 'conversation'
  union all
  select pg_catalog.pg_current_xact_id(), new.owner_id, s.scope, 1
    from unnest(memory_private.namespace_scopes(new.namespace)) as s(scope)
   where new.is_valid and new.state = 'active' and new.source is distinct from 'conversation';
  perform set_config('memory.scope_count_changes', 'on', true);
  return null;
end;
$$;
revoke all on function memory_private.count_scope_update() from public;

-- Statement trigger of devai_memories after UPDATE: adds what its rows kept, summed per tenant
-- and base. The setting says whether any row did (most updates change nothing counted).
create function memory_private.flush_scope_counts()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
declare
  v_changes jsonb;
begin
  if current_setting('memory.scope_count_changes', true) is distinct from 'on' then
    return null;
  end if;
  perform set_config('memory.scope_count_changes', '', true);
  with taken as (
    delete from memory_private.scope_count_changes c
     where c.xact = pg_catalog.pg_current_xact_id()
    returning c.owner_id, c.scope, c.change
  )
  select jsonb_object_agg(x.key, x.change) into v_changes
    from (select t.owner_id::text || t.scope as key, sum(t.change) as change
            from taken t
           group by t.owner_id, t.scope) as x;
  perform memory_private.add_to_scope_counts(v_changes);
  return null;
end;
$$;
revoke all on function memory_private.flush_scope_counts() from public;

-- Statement trigger of devai_memories: a TRUNCATE leaves no memory to count.
create function memory_private.clear_scope_counts()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  delete from memory_private.memory_scope_counts;
  perform set_config('memory.scope_count_changes', '', true);
  return null;
end;
$$;
revoke all on function memory_private.clear_scope_counts() from public;

create trigger devai_memories_count_scope_insert
  after insert on public.devai_memories
  referencing new table as changed
  for each statement
  execute function memory_private.count_scope_rows();
create trigger devai_memories_count_scope_delete
  after delete on public.devai_memories
  referencing old table as changed
  for each statement
  execute function memory_private.count_scope_rows();
-- No column list: a BEFORE trigger may change a counted column the UPDATE did not name. The WHEN
-- clause keeps the function out of every other update (reinforcement, decay's strength pass).
create trigger devai_memories_count_scope_update
  after update on public.devai_memories
  for each row
  when ((old.is_valid and old.state = 'active' and old.source is distinct from 'conversation')
          is distinct from (new.is_valid and new.state = 'active' and new.source is distinct from 'conversation')
        or (new.is_valid and new.state = 'active' and new.source is distinct from 'conversation'
            and (old.namespace is distinct from new.namespace or old.owner_id is distinct from new.owner_id)))
  execute function memory_private.count_scope_update();
-- After the statement's row triggers (Postgres fires them first, in the order queued).
create trigger devai_memories_count_scope_flush
  after update on public.devai_memories
  for each statement
  execute function memory_private.flush_scope_counts();
create trigger devai_memories_count_scope_truncate
  after truncate on public.devai_memories
  for each statement
  execute function memory_private.clear_scope_counts();
alter table public.devai_memories enable always trigger devai_memories_count_scope_insert;
alter table public.devai_memories enable always trigger devai_memories_count_scope_delete;
alter table public.devai_memories enable always trigger devai_memories_count_scope_update;
alter table public.devai_memories enable always trigger devai_memories_count_scope_flush;
alter table public.devai_memories enable always trigger devai_memories_count_scope_truncate;

-- Rebuilds every scope count from the memories (this migration's backfill; a repair if counts
-- ever drift: docs/operations.md#scope-counts). Writes to devai_memories wait while it runs (SHARE
-- lock), so no change is counted twice or missed; at 100k memories about a second.
create function memory_private.recount_scope_sizes()
returns jsonb
language plpgsql
security definer
set search_path = ''
as $$
declare
  v_rows bigint;
begin
  lock table public.devai_memories in share mode;
  lock table memory_private.memory_scope_counts in exclusive mode;
  delete from memory_private.memory_scope_counts;
  insert into memory_private.memory_scope_counts (owner_id, scope, memories)
  select m.owner_id, s.scope, count(*)::integer
    from public.devai_memories m
   cross join lateral unnest(memory_private.namespace_scopes(m.namespace)) as s(scope)
   where m.is_valid and m.state = 'active' and m.source is distinct from 'conversation'
   group by m.owner_id, s.scope;
  get diagnostics v_rows = row_count;
  return jsonb_build_object('scopes', v_rows);
end;
$$;
revoke all on function memory_private.recount_scope_sizes() from public;
grant execute on function memory_private.recount_scope_sizes() to service_role;

-- The devai-scope-count-compaction job: merges each base's rows into one (and drops bases whose
-- count is 0), taking only rows no writer holds (SKIP LOCKED), so it never waits for a writer.
create function memory_private.compact_scope_counts()
returns jsonb
language plpgsql
security definer
set search_path = ''
as $$
declare
  v_taken  bigint;
  v_merged bigint;
begin
  with bases as (
    select c.owner_id, c.scope
      from memory_private.memory_scope_counts c
     group by c.owner_id, c.scope
    having count(*) > 1 or sum(c.memories) = 0
  ),
  taken as (
    delete from memory_private.memory_scope_counts c
     where c.id = any (array(select h.id
                               from memory_private.memory_scope_counts h
                               join bases b on b.owner_id = h.owner_id and b.scope = h.scope
                                for update of h skip locked))
    returning c.owner_id, c.scope, c.memories
  ),
  merged as (
    insert into memory_private.memory_scope_counts (owner_id, scope, memories)
    select t.owner_id, t.scope, sum(t.memories)::integer
      from taken t
     group by t.owner_id, t.scope
    having sum(t.memories) <> 0
    returning 1
  )
  select (select count(*) from taken), (select count(*) from merged) into v_taken, v_merged;
  return jsonb_build_object('rows_taken', v_taken, 'rows_written', v_merged);
end;
$$;
revoke all on function memory_private.compact_scope_counts() from public;
grant execute on function memory_private.compact_scope_counts() to service_role;

insert into public.memory_maintenance_schedules (job_name, schedule, command, description) values
  ('devai-scope-count-compaction', '*/10 * * * *', 'select memory_private.compact_scope_counts()',
   'Merges the rows concurrent writers left for one scope base in memory_private.memory_scope_counts into one; never waits for a writer.')
on conflict (job_name) do update
  set schedule = excluded.schedule, command = excluded.command, description = excluded.description;
select memory_private.register_maintenance_schedules();

-- The rows search compares, by tenant and namespace: match_memories' exact path and the fresh
-- count of its fallback read a scope by it (the planner takes it for their conditions, which
-- imply its predicate).
create index devai_memories_owner_namespace_searched on public.devai_memories (owner_id, namespace text_pattern_ops)
  where is_valid and state = 'active' and source is distinct from 'conversation';

select memory_private.recount_scope_sizes();

-- The scope's memories counted afresh, up to p_cap + 1 (the former public.memory_scope_size, under
-- the caller's row-level security, without episodes: devai_memories_owner_namespace_searched's
-- entries): match_memories' exact fallback, after a walk that came back short, decides on this
-- count, not on the kept one, so a drifted count cannot keep a short walk's answer.
create function memory_search.scope_rows(p_owner uuid, p_bases text[], p_cap integer)
returns integer
language plpgsql
stable
set search_path = ''
set plan_cache_mode = 'force_generic_plan'
as $$
begin
  return (
    select count(*)::integer
      from (select 1
              from unnest(p_bases, array(select x || '0' from unnest(p_bases) with ordinality as u(x, o) order by o))
                   as b(base, upper)
             cross join lateral (
               select 1 from public.devai_memories m
                where m.owner_id = p_owner and m.is_valid and m.state = 'active'
                  and m.source is distinct from 'conversation'
                  and m.namespace operator(pg_catalog.~>=~) b.base
                  and m.namespace operator(pg_catalog.~<~) b.upper
                  and (m.namespace = b.base or m.namespace ^@ (b.base || '/'))
                limit p_cap + 1) as hit
             limit p_cap + 1) as counted);
end;
$$;
revoke all on function memory_search.scope_rows(uuid, text[], integer) from public;
grant execute on function memory_search.scope_rows(uuid, text[], integer) to authenticated, service_role;

-- The memories a search scope holds (valid, active, not episodes), up to p_cap + 1: the sum of
-- the kept counts of its bases (p_bases: without the trailing '/', none inside another), one
-- index probe each. Another tenant's scopes count 0 (as under row-level security before).
-- Called by match_memories (exact path or HNSW walk) and hybrid_search (the corpus size of idf).
create or replace function public.memory_scope_size(p_owner uuid, p_bases text[], p_cap integer)
returns integer
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
  if not memory_search.caller_reads_owner(p_owner) then
    return 0;
  end if;
  return (select least(greatest(coalesce(sum(c.memories), 0), 0), p_cap::bigint + 1)::integer
            from memory_private.memory_scope_counts c
           where c.owner_id = p_owner and c.scope = any (p_bases));
end;
$$;

-- match_memories: the fallback after a short walk counts the scope afresh (above); the decision
-- reads the kept count through public.memory_scope_size as before. The function's SET options are
-- restated (create or replace sets them anew); the body is the one of 20261207600000 otherwise.
CREATE OR REPLACE FUNCTION public.match_memories(query_embedding extensions.vector, match_namespace text, match_count integer DEFAULT 15, similarity_threshold double precision DEFAULT 0.7, match_owner uuid DEFAULT auth.uid(), match_embedding_model text DEFAULT 'text-embedding-3-small'::text, match_namespaces text[] DEFAULT NULL::text[], as_of timestamp with time zone DEFAULT NULL::timestamp with time zone, with_relations boolean DEFAULT true, filter_after timestamp with time zone DEFAULT NULL::timestamp with time zone, filter_before timestamp with time zone DEFAULT NULL::timestamp with time zone, filter_memory_types text[] DEFAULT NULL::text[], filter_categories text[] DEFAULT NULL::text[], filter_exclude tsquery DEFAULT NULL::tsquery, filter_fields jsonb DEFAULT NULL::jsonb)
 RETURNS TABLE(id uuid, content text, similarity double precision, memory_type text, namespace text, strength double precision, priority text, importance smallint, pinned boolean, source text, metadata jsonb, session_id text, access_count integer, last_accessed_at timestamp with time zone, created_at timestamp with time zone, updated_at timestamp with time zone, max_relation_strength real)
 LANGUAGE plpgsql
 STABLE ROWS 20
 SET search_path TO ''
 SET "hnsw.iterative_scan" TO 'relaxed_order'
 SET "hnsw.ef_search" TO '100'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
declare
  v_bases     text[];
  v_uppers    text[];
  v_scopes    text[];
  v_exact_max integer;
  v_index     regclass;
  v_in_scope  integer;
  v_sort      text;
  v_in_window integer;
  v_from      timestamptz := coalesce(filter_after, '-infinity');
  v_until     timestamptz := coalesce(filter_before, 'infinity');
  v_walk_ids  uuid[];
  v_walk_dist double precision[];
  v_fallback  integer;
  v_short     boolean := false;
  -- The request's filters (time window, types, categories, exclusions) hold inside each path, so
  -- a strict filter gets its match_count nearest memories that pass it, not what passes among
  -- the nearest of all.
  v_filtered  boolean := filter_after is not null or filter_before is not null or filter_memory_types is not null
                         or filter_categories is not null or filter_exclude is not null or filter_fields is not null;
begin
  if match_count is null or match_count < 1 or match_count > 200 then
    raise exception 'match_count must be between 1 and 200, got %', match_count using errcode = '22023';
  end if;
  -- The scopes as namespace bases without the trailing '/', each once, none inside another (a
  -- base whose parent is searched too adds nothing, and would count its rows twice).
  with bases as (
    select distinct rtrim(s, '/') as base
      from unnest(coalesce(match_namespaces, '{}'::text[]) || match_namespace) as s
     where s is not null and rtrim(s, '/') <> ''
  )
  select coalesce(array_agg(b.base order by b.base), '{}') into v_bases
    from bases b
   where not exists (select from bases o where o.base <> b.base and (b.base || '/') ^@ (o.base || '/'));
  if cardinality(v_bases) = 0 then
    raise exception 'at least one namespace scope is required' using errcode = '22023';
  end if;
  -- Scopes match by path segment, never LIKE: base 'devai/project/task_forge' matches itself and
  -- 'devai/project/task_forge/...', never 'devai/project/taskxforge' nor '.../task_forge2'.
  select array_agg(b || '/') into v_scopes from unnest(v_bases) b;
  -- Each scope's byte range ends before base || '0' ('0' follows '/'), computed here so the index
  -- condition holds only values (see the top of this file).
  select array_agg(b || '0' order by o) into v_uppers from unnest(v_bases) with ordinality as u(b, o);
  v_index := public.memory_vector_index_of(match_owner);
  v_exact_max := public.memory_exact_scan_limit(match_count, v_index);

  -- As of an instant: what the tenant's memory held then (public.memory_at: recorded by then,
  -- validity not closed, valid and active after its last change then), filtered and answered with
  -- its fields as they were then (content, type, scope, priority, importance, pin, source,
  -- metadata). Exact: the invalidated rows it may need are not in the HNSW index. Strength is not
  -- filtered (it is today's, not then's).
  if as_of is not null then
    return query
    -- Every row of the scope is compared (its distance), but what it held then (memory_at: a
    -- history lookup per row) and the filters are read only in distance order, until match_count
    -- rows held then and passed: reading them for every row of the scope first cost a function
    -- call and a history probe per row (a 8,500-row scope: 130,000 buffers and 373 ms; 84,000
    -- and about 130 ms so). The rows are sorted by distance with their row address, and each
    -- one checked is read again by that address (a TID scan, one page).
    with nearest as materialized (
      select s.id, r.content, r.memory_type, r.namespace, r.priority, r.importance, r.pinned, r.source, r.metadata,
             s.distance
        from (select m.ctid as tid, m.id, m.embedding operator(extensions.<=>) query_embedding as distance
                from public.devai_memories m
               where m.owner_id = match_owner
                 and m.created_at <= as_of
                 and (m.valid_until is null or m.valid_until > as_of)
                 and m.source is distinct from 'conversation'
                 and m.embedding_model = match_embedding_model
                 and m.embedding is not null
                 and (m.namespace || '/') ^@ any (v_scopes)
               order by distance, m.id
              offset 0) as s
       cross join lateral (
         select a.held, a.content, a.memory_type, a.namespace, a.priority, a.importance, a.pinned, a.source, a.metadata,
                m.content as content_now, m.fts, m.created_at, m.updated_at
           from public.devai_memories m
          cross join lateral public.memory_at(m, as_of) a
          where m.ctid = s.tid
         offset 0) as r
       where r.held
         and (not v_filtered or memory_search.passes_filters(case when filter_exclude is null or r.updated_at <= as_of then r.fts
                                                                  else memory_search.fts_then(s.id, r.content_now, r.fts, as_of) end,
                                                             r.created_at, r.memory_type, r.metadata, r.pinned, r.importance,
                                                             case when r.updated_at > as_of and filter_fields ?| array['updated_after', 'updated_before']
                                                                  then memory_search.updated_at_then(s.id, r.created_at, r.updated_at, as_of)
                                                                  else r.updated_at end,
                                                             filter_exclude, filter_after, filter_before, filter_memory_types, filter_categories, filter_fields))
       order by s.distance, s.id
       limit match_count
    )
    select n.id, n.content, 1 - n.distance, n.memory_type, n.namespace, m.strength, n.priority,
           n.importance, n.pinned, n.source, n.metadata, m.session_id, m.access_count,
           m.last_accessed_at, m.created_at, m.updated_at,
           rs.strength
      from nearest n
      join public.devai_memories m on m.id = n.id
      left join memory_search.relation_strengths(match_owner, case when with_relations then array(select n2.id from nearest n2) end, as_of, v_scopes) rs
        on rs.id = n.id
     where 1 - n.distance > similarity_threshold
     order by n.distance, n.id;
    return;
  end if;

  -- The scope's size up to the exact path's limit, as the write path keeps it
  -- (public.memory_scope_size: one index probe per scope base; migration 20261208300000).
  -- Counting the scope's index entries instead cost up to the limit's heap fetches per search.
  v_in_scope := public.memory_scope_size(match_owner, v_bases, v_exact_max);

  -- Two statements, not one with both branches: a UNION ALL of the two paths, gated by
  -- v_in_scope, planned badly (693 ms p50 instead of 11). The projection they share is short.
  if v_in_scope > v_exact_max then
    -- A large scope, but a time window few of the tenant's memories fall in (a `when` question's
    -- week): those are compared exactly, read by their (owner_id, created_at) range. The index walk
    -- would pass over most of the scope to find them (a week of a 21k-memory tenant: 25 ms for half
    -- the answer; an empty window, 66 ms for none).
    if filter_after is not null or filter_before is not null then
      select count(*) into v_in_window
        from (select 1 from public.devai_memories m
               where m.owner_id = match_owner and m.created_at >= v_from and m.created_at < v_until
               limit v_exact_max + 1) as counted;
    end if;
    if v_in_window <= v_exact_max then
      return query
      with nearest as materialized (
        select s.id, s.distance
          from (select m.id, m.embedding operator(extensions.<=>) query_embedding as distance
                  from public.devai_memories m
                 where m.owner_id = match_owner and m.created_at >= v_from and m.created_at < v_until
                   and m.is_valid and m.state = 'active'
                   and m.strength > 0.05
                   and m.source is distinct from 'conversation'
                   and m.embedding_model = match_embedding_model
                   and m.embedding is not null
                   and (m.namespace || '/') ^@ any (v_scopes)
                   and memory_search.passes_filters(m.fts, m.created_at, m.memory_type, m.metadata, m.pinned, m.importance,
                                                    m.updated_at, filter_exclude, filter_after, filter_before,
                                                    filter_memory_types, filter_categories, filter_fields)
                offset 0) as s
         order by s.distance, s.id
         limit match_count
      )
      select n.id, m.content, 1 - n.distance, m.memory_type, m.namespace, m.strength, m.priority,
             m.importance, m.pinned, m.source, m.metadata, m.session_id, m.access_count,
             m.last_accessed_at, m.created_at, m.updated_at,
             rs.strength
        from nearest n
        join public.devai_memories m on m.id = n.id
        left join memory_search.relation_strengths(match_owner, case when with_relations then array(select n2.id from nearest n2) end, null, v_scopes) rs
          on rs.id = n.id
       where 1 - n.distance > similarity_threshold
       order by n.distance, n.id;
      return;
    end if;

    -- Large scope: the HNSW index, filtered while it is walked (iterative scan, so selective filters
    -- keep recall). Sorting is switched off for this statement only, so the planner cannot fall
    -- back to sorting the whole scope; the rows found are re-sorted exactly below. With a filter
    -- of the request's own that few memories pass, the walk goes on until it has match_count of
    -- them or has read pgvector's hnsw.max_scan_tuples index entries (20,000; a filter nothing
    -- passes costs about 65 ms in a 100k-memory index). A bound of 2,000 was tried: 7 ms, but the
    -- entries of other tenants and dead rows count too, and it missed most of what a user's filter
    -- in a shared index should find.
    v_sort := current_setting('enable_sort');
    perform set_config('enable_sort', 'off', true);
    -- A tenant with its own index: the planner can use that partial index only in a plan made for
    -- this owner, so this statement is planned for this call (the function's SET clause restores
    -- plan_cache_mode when it returns).
    if v_index is distinct from to_regclass('public.devai_memories_embedding_hnsw') then
      perform set_config('plan_cache_mode', 'force_custom_plan', true);
    end if;
    select coalesce(array_agg(w.id order by w.distance, w.id), '{}'), coalesce(array_agg(w.distance order by w.distance, w.id), '{}')
      into v_walk_ids, v_walk_dist
      from (select m.id, m.embedding operator(extensions.<=>) query_embedding as distance
              from public.devai_memories m
             where m.owner_id = match_owner
               and m.is_valid
               and m.state = 'active'
               and m.strength > 0.05
               and m.source is distinct from 'conversation'
               and m.embedding_model = match_embedding_model
               and m.embedding is not null
               and (m.namespace || '/') ^@ any (v_scopes)
               and (not v_filtered or memory_search.passes_filters(m.fts, m.created_at, m.memory_type, m.metadata, m.pinned, m.importance, m.updated_at,
                                                                   filter_exclude, filter_after, filter_before, filter_memory_types, filter_categories, filter_fields))
             order by m.embedding operator(extensions.<=>) query_embedding
             limit match_count) as w;
    perform set_config('enable_sort', v_sort, true);
    -- A walk that comes back with fewer than match_count may have stopped early, not run out of
    -- memories: pgvector's graph walk ends once it reaches no new entries, and many index entries
    -- of one vector (one text written again and again, by any tenant; dead entries count until
    -- vacuum) leave the graph's links within those copies. The walk then returned none of 5 live
    -- memories that the exact comparison finds (pgTAP 08). A scope of at most
    -- exact_scan_fallback_max_rows memories is then compared exactly below; a larger one keeps
    -- what the walk found.
    -- The setting and the count are read only for a walk that came back short (a full one, the
    -- usual case, pays nothing for the fallback). The scope is counted afresh here
    -- (memory_search.scope_rows), not read from the kept counts: a kept count too large (a drift)
    -- sent this small scope to the walk, and must not also keep the walk's short answer.
    if cardinality(v_walk_ids) < match_count then
      v_fallback := public.memory_setting('exact_scan_fallback_max_rows')::integer;
      v_short := memory_search.scope_rows(match_owner, v_bases, v_fallback) <= v_fallback;
    end if;
    if not v_short then
      return query
      with nearest as (
        select w.id, w.distance from unnest(v_walk_ids, v_walk_dist) as w(id, distance)
      )
      select n.id, m.content, 1 - n.distance, m.memory_type, m.namespace, m.strength, m.priority,
             m.importance, m.pinned, m.source, m.metadata, m.session_id, m.access_count,
             m.last_accessed_at, m.created_at, m.updated_at,
             rs.strength
        from nearest n
        join public.devai_memories m on m.id = n.id
        left join memory_search.relation_strengths(match_owner, case when with_relations then v_walk_ids end, null, v_scopes) rs
          on rs.id = n.id
       where 1 - n.distance > similarity_threshold
       order by n.distance, n.id;
      return;
    end if;
  end if;

  -- A scope of at most v_exact_max memories, or a larger one whose walk came back short (above):
  -- compare every vector in it (exact, recall 1).
  return query
  -- One lookup per scope (a lateral subquery that offset 0 keeps from being flattened into a
  -- join): each scope's range is then an index condition. As a plain join, the generic plan
  -- read every row of the tenant and applied the ranges as a join filter (a 109-row scope of
  -- a 21k-row tenant: 33 ms instead of under 1; the bench's same-size check).
  with in_scope as materialized (
    select m.id, m.distance
      from unnest(v_bases, v_uppers) as b(base, upper)
     cross join lateral (
       select m.id, m.embedding operator(extensions.<=>) query_embedding as distance
         from public.devai_memories m
        where m.owner_id = match_owner and m.is_valid and m.state = 'active'
          and m.namespace operator(pg_catalog.~>=~) b.base
          and m.namespace operator(pg_catalog.~<~) b.upper
          and (m.namespace = b.base or m.namespace ^@ (b.base || '/'))
          and m.strength > 0.05
          and m.source is distinct from 'conversation'
          and m.embedding_model = match_embedding_model
          and m.embedding is not null
          and (not v_filtered or memory_search.passes_filters(m.fts, m.created_at, m.memory_type, m.metadata, m.pinned, m.importance, m.updated_at,
                                                              filter_exclude, filter_after, filter_before, filter_memory_types, filter_categories, filter_fields))
       offset 0) as m
  ),
  nearest as (
    select s.id, s.distance from in_scope s order by s.distance, s.id limit match_count
  )
  select n.id, m.content, 1 - n.distance, m.memory_type, m.namespace, m.strength, m.priority,
         m.importance, m.pinned, m.source, m.metadata, m.session_id, m.access_count,
         m.last_accessed_at, m.created_at, m.updated_at,
         rs.strength
    from nearest n
    join public.devai_memories m on m.id = n.id
    left join memory_search.relation_strengths(match_owner, case when with_relations then array(select n2.id from nearest n2) end, null, v_scopes) rs
      on rs.id = n.id
   where 1 - n.distance > similarity_threshold
   order by n.distance, n.id;
  return;
end;
$function$;
