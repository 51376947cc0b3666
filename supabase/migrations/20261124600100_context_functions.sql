-- Living context, part 2: what context assembly reads besides the hybrid search, what it and the
-- usage report write, and the nightly prune of session records. docs/context.md.

-- Scope bases as hybrid_search takes them ('devai/global', 'devai/project/x') → '/'-terminated
-- prefixes matched with ^@ (starts_with, never LIKE). Shared by the functions below.
create or replace function public.context_scope_prefixes(match_namespaces text[])
returns text[]
language sql
immutable
parallel safe
security invoker
set search_path = ''
as $$
  select coalesce(array_agg(distinct rtrim(s, '/') || '/'), '{}')
    from unnest(coalesce(match_namespaces, '{}'::text[])) as s
   where s is not null and rtrim(s, '/') <> ''
$$;
revoke all on function public.context_scope_prefixes(text[]) from public, anon;
grant execute on function public.context_scope_prefixes(text[]) to authenticated, service_role;

-- Unresolved contradictions between memories the caller can see in the scopes: what the critical
-- tier of context/assemble shows. Today a `contradicts` edge (written when the write path replaced
-- a fact it contradicted) whose two memories are both valid and active again, i.e. the replaced
-- fact was restored or re-validated and nobody has decided between them. A contradictions table
-- with a resolution API feeds the critical tier by replacing this function's body; its callers
-- do not change. Newest first, at most max_count pairs.
create or replace function public.context_open_contradictions(match_namespaces text[], max_count integer default 10)
returns table (memory_a uuid, memory_b uuid, detected_at timestamptz)
language sql
stable
security invoker
set search_path = ''
as $$
  select r.to_id, r.from_id, r.created_at
    from public.memory_relations r
    join public.devai_memories a on a.id = r.to_id
    join public.devai_memories b on b.id = r.from_id
   where r.relation_type = 'contradicts'
     and r.owner_id = (select auth.uid())
     and (r.valid_until is null or r.valid_until > now())
     and a.is_valid and a.state = 'active' and b.is_valid and b.state = 'active'
     and (a.namespace || '/') ^@ any (public.context_scope_prefixes(match_namespaces))
     and (b.namespace || '/') ^@ any (public.context_scope_prefixes(match_namespaces))
   order by r.created_at desc, r.id
   limit greatest(1, least(coalesce(max_count, 10), 50))
$$;
revoke all on function public.context_open_contradictions(text[], integer) from public, anon;
grant execute on function public.context_open_contradictions(text[], integer) to authenticated, service_role;

-- The lookups of context assembly (files, a directory's files, a branch, background categories,
-- recent errors), as memory ids with the reason each was found: (kind, detail, weight) in
-- parallel arrays, at most p_max_per_kind per kind, only valid, active memories of strength above
-- 0.05 in the scopes ('/'-terminated prefixes), raw episodes left out. Row level security cannot
-- use these lookups' conditions as index conditions (->> and ^@ are not leakproof), so, like
-- memory_search.keyword_postings, this is a security-definer function that pins the tenant to the
-- caller (auth.uid(); any other owner finds nothing) and returns only ids: the memories themselves
-- are read under RLS by public.context_candidates. Each kind is one small statement run only when
-- asked for, planned with its values (force_custom_plan).
create or replace function memory_search.context_lookups(
  p_owner uuid, p_scopes text[], p_files text[], p_modules text[], p_branch text, p_categories text[],
  p_recent_since timestamptz, p_max_per_kind integer,
  out ids uuid[], out kinds text[], out details text[], out weights double precision[])
language plpgsql
stable
security definer
set search_path = ''
set plan_cache_mode = 'force_custom_plan'
as $$
declare
  v_uid uuid := auth.uid();
  v_dir text;
  v_key text;
  v_ids uuid[];
  v_det text[];
  v_w   double precision[];
begin
  ids := '{}'; kinds := '{}'; details := '{}'; weights := '{}';
  if p_owner is null or (v_uid is not null and p_owner <> v_uid) then
    return;
  end if;

  -- Memories citing the files: their file entities by key (the unique index), then the links.
  if coalesce(cardinality(p_files), 0) > 0 then
    select coalesce(array_agg(y.id), '{}'), coalesce(array_agg(y.path), '{}') into v_ids, v_det
      from (select x.id, x.path
              from (select distinct on (m.id) m.id, f.path, m.importance, m.strength
                      from unnest(p_files) as f(path)
                      join public.memory_entities e
                        on e.owner_id = p_owner and e.normalized_name = public.memory_entity_key(f.path)
                       and e.entity_type = 'file' and regexp_replace(e.canonical_name, '^(\./)+', '') = f.path
                      join public.memory_entity_links l on l.entity_id = e.id and l.owner_id = p_owner
                      join public.devai_memories m on m.id = l.memory_id
                     where m.owner_id = p_owner and m.is_valid and m.state = 'active' and m.strength > 0.05
                       and m.source is distinct from 'conversation' and (m.namespace || '/') ^@ any (p_scopes)
                     order by m.id, f.path) x
             order by x.importance desc, x.strength desc, x.id
             limit p_max_per_kind) y;
    ids := ids || v_ids; details := details || v_det;
    kinds := kinds || array_fill('file'::text, array[cardinality(v_ids)]);
    weights := weights || array_fill(1::double precision, array[cardinality(v_ids)]);
  end if;

  -- A directory's files: normalized_name keeps letters and digits only, so the range
  -- [key, key || U+10FFFF) holds every name starting with the key (the text_pattern_ops index);
  -- the canonical name then checks the directory boundary exactly. At most 200 files a directory.
  foreach v_dir in array coalesce(p_modules, '{}'::text[]) loop
    v_key := public.memory_entity_key(v_dir);
    continue when v_key = '';
    select coalesce(array_agg(x.id), '{}') into v_ids
      from (select distinct m.id, m.importance, m.strength
              from (select e.id from public.memory_entities e
                     where e.owner_id = p_owner
                       and e.normalized_name operator(pg_catalog.~>=~) v_key
                       and e.normalized_name operator(pg_catalog.~<~) (v_key || chr(1114111))
                       and e.entity_type = 'file'
                       and regexp_replace(e.canonical_name, '^(\./)+', '') ^@ (v_dir || '/')
                     limit 200) e
              join public.memory_entity_links l on l.entity_id = e.id and l.owner_id = p_owner
              join public.devai_memories m on m.id = l.memory_id
             where m.owner_id = p_owner and m.is_valid and m.state = 'active' and m.strength > 0.05
               and m.source is distinct from 'conversation' and (m.namespace || '/') ^@ any (p_scopes)
               and not (m.id = any (ids))
             order by m.importance desc, m.strength desc, m.id
             limit p_max_per_kind) x;
    ids := ids || v_ids;
    details := details || array_fill(v_dir, array[cardinality(v_ids)]);
    kinds := kinds || array_fill('module'::text, array[cardinality(v_ids)]);
    weights := weights || array_fill(0.7::double precision, array[cardinality(v_ids)]);
  end loop;

  -- Recorded on the branch, newest first (devai_memories_owner_branch).
  if p_branch is not null then
    select coalesce(array_agg(x.id), '{}') into v_ids
      from (select m.id from public.devai_memories m
             where m.owner_id = p_owner and m.metadata ? 'branch' and m.is_valid and m.state = 'active'
               and (m.metadata ->> 'branch') = p_branch
               and m.strength > 0.05 and m.source is distinct from 'conversation' and (m.namespace || '/') ^@ any (p_scopes)
             order by m.created_at desc, m.id
             limit p_max_per_kind) x;
    ids := ids || v_ids;
    details := details || array_fill(p_branch, array[cardinality(v_ids)]);
    kinds := kinds || array_fill('branch'::text, array[cardinality(v_ids)]);
    weights := weights || array_fill(0.6::double precision, array[cardinality(v_ids)]);
  end if;

  -- Background: per category the most important first (devai_memories_owner_category), then the
  -- best of them all.
  if coalesce(cardinality(p_categories), 0) > 0 then
    select coalesce(array_agg(x.id), '{}'), coalesce(array_agg(x.cat), '{}'), coalesce(array_agg(x.importance / 5.0), '{}')
      into v_ids, v_det, v_w
      from (select c.cat, b.id, b.importance
              from unnest(p_categories) as c(cat)
              cross join lateral (
                select m.id, m.importance, m.created_at from public.devai_memories m
                 where m.owner_id = p_owner and m.is_valid and m.state = 'active'
                   and (case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end) = c.cat
                   and m.strength > 0.05 and m.source is distinct from 'conversation' and (m.namespace || '/') ^@ any (p_scopes)
                 order by m.importance desc, m.created_at desc
                 limit p_max_per_kind) b
             order by b.importance desc, b.created_at desc, b.id
             limit p_max_per_kind) x;
    ids := ids || v_ids; details := details || v_det; weights := weights || v_w;
    kinds := kinds || array_fill('background'::text, array[cardinality(v_ids)]);
  end if;

  -- Error memories since p_recent_since, newest first (devai_memories_owner_created).
  if p_recent_since is not null then
    select coalesce(array_agg(x.id), '{}') into v_ids
      from (select m.id from public.devai_memories m
             where m.owner_id = p_owner and m.created_at >= p_recent_since
               and m.is_valid and m.state = 'active' and m.strength > 0.05
               and (case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end) = 'errors_and_fixes'
               and (m.namespace || '/') ^@ any (p_scopes)
             order by m.created_at desc, m.id desc
             limit p_max_per_kind) x;
    ids := ids || v_ids;
    details := details || array_fill(null::text, array[cardinality(v_ids)]);
    kinds := kinds || array_fill('recent_error'::text, array[cardinality(v_ids)]);
    weights := weights || array_fill(0.6::double precision, array[cardinality(v_ids)]);
  end if;
end;
$$;
revoke all on function memory_search.context_lookups(uuid, text[], text[], text[], text, text[], timestamptz, integer) from public;
grant execute on function memory_search.context_lookups(uuid, text[], text[], text[], text, text[], timestamptz, integer)
  to authenticated, service_role;

-- The memories context assembly considers besides its hybrid searches, each with the reason it
-- was found (kind) and everything assembly needs about it, in one call as the tenant (RLS):
--   given          the ids passed in (hits of the hybrid search, a prefetch): details only
--   file           memories citing one of `files` (linked to that file entity: by the entity
--                  rules when the content names it, or by the API's metadata.files), weight 1
--   module         memories citing a file under one of `modules` (directories), weight 0.7
--   branch         memories recorded on `branch` (metadata.branch), newest first, weight 0.6
--   background     memories of `background_categories` (the category as memory.query reads it:
--                  procedural memories count as 'procedural'), by importance, weight importance/5
--   recent_error   errors_and_fixes memories created since `recent_since`, newest first, weight 0.6
--   contradiction  both sides of each open contradiction (context_open_contradictions); detail is
--                  the other side's id, weight 1
-- The lookups are memory_search.context_lookups'; every row obeys the search's scope rules: the
-- tenant, '/'-bounded namespace prefixes, valid, active, strength > 0.05, no raw episodes. A
-- memory found for several reasons has several rows. cited_files: the files the memory cites
-- (entity links and metadata.files, leading ./ removed); the usage counters are memory_usage's
-- (0 when never reported).
create or replace function public.context_candidates(
  match_namespaces text[],
  given_ids uuid[] default null,
  files text[] default null,
  modules text[] default null,
  branch text default null,
  background_categories text[] default null,
  recent_since timestamptz default null,
  contradictions boolean default false,
  max_per_kind integer default 30,
  match_owner uuid default auth.uid()
)
returns table (
  id uuid,
  kind text,
  detail text,
  weight double precision,
  content text,
  memory_type text,
  namespace text,
  strength double precision,
  priority text,
  importance smallint,
  pinned boolean,
  source text,
  metadata jsonb,
  created_at timestamptz,
  category text,
  max_relation_strength real,
  cited_files text[],
  retrieval_count integer,
  citation_count integer,
  ignore_count integer
)
language plpgsql
stable
security invoker
set search_path = ''
as $$
#variable_conflict use_column
declare
  v_scopes  text[] := public.context_scope_prefixes(match_namespaces);
  v_files   text[] := (select coalesce(array_agg(distinct regexp_replace(f, '^(\./)+', '')), '{}')
                         from unnest(coalesce(files, '{}'::text[])) f where f <> '');
  v_modules text[] := (select coalesce(array_agg(distinct rtrim(regexp_replace(d, '^(\./)+', ''), '/')), '{}')
                         from unnest(coalesce(modules, '{}'::text[])) d where rtrim(regexp_replace(d, '^(\./)+', ''), '/') <> '');
  v_found   record;
  v_ids     uuid[];
  v_kinds   text[];
  v_details text[];
  v_weights double precision[];
begin
  if cardinality(v_scopes) = 0 then
    raise exception 'at least one namespace scope is required' using errcode = '22023';
  end if;
  if max_per_kind is null or max_per_kind < 1 or max_per_kind > 100 then
    raise exception 'max_per_kind must be between 1 and 100, got %', max_per_kind using errcode = '22023';
  end if;
  if coalesce(cardinality(given_ids), 0) > 500 or cardinality(v_files) > 100 or cardinality(v_modules) > 20 then
    raise exception 'at most 500 given ids, 100 files and 20 modules' using errcode = '22023';
  end if;
  select * into v_found
    from memory_search.context_lookups(match_owner, v_scopes, v_files, v_modules, branch, background_categories,
                                       recent_since, max_per_kind);
  select array_agg(g.id), array_agg('given'::text), array_agg(null::text), array_agg(0::double precision)
    into v_ids, v_kinds, v_details, v_weights
    from (select distinct x as id from unnest(coalesce(given_ids, '{}'::uuid[])) x) g;
  v_ids := coalesce(v_ids, '{}') || v_found.ids;
  v_kinds := coalesce(v_kinds, '{}') || v_found.kinds;
  v_details := coalesce(v_details, '{}') || v_found.details;
  v_weights := coalesce(v_weights, '{}') || v_found.weights;
  if contradictions then
    select v_ids || coalesce(array_agg(c.id), '{}'), v_kinds || coalesce(array_agg('contradiction'::text), '{}'),
           v_details || coalesce(array_agg(c.other), '{}'), v_weights || coalesce(array_agg(1::double precision), '{}')
      into v_ids, v_kinds, v_details, v_weights
      from (select o.memory_a as id, o.memory_b::text as other from public.context_open_contradictions(match_namespaces, 10) o
            union all
            select o.memory_b, o.memory_a::text from public.context_open_contradictions(match_namespaces, 10) o) c;
  end if;

  -- Each memory by its id (the primary key), read under RLS.
  return query
  select r.id, r.kind, r.detail, r.weight,
         m.content, m.memory_type, m.namespace, m.strength, m.priority, m.importance, m.pinned, m.source,
         m.metadata, m.created_at,
         case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end,
         (select max(rel.strength) from public.memory_relations rel
           where rel.owner_id = m.owner_id and (rel.from_id = m.id or rel.to_id = m.id)),
         array(select distinct p.path
                 from (select regexp_replace(e.canonical_name, '^(\./)+', '') as path
                         from public.memory_entity_links l
                         join public.memory_entities e on e.id = l.entity_id and e.entity_type = 'file'
                        where l.memory_id = m.id and l.owner_id = m.owner_id
                       union all
                       select regexp_replace(x, '^(\./)+', '')
                         from jsonb_array_elements_text(
                                case when jsonb_typeof(m.metadata -> 'files') = 'array' then m.metadata -> 'files'
                                     else '[]'::jsonb end) as x) p
                order by p.path),
         coalesce(u.retrieval_count, 0), coalesce(u.citation_count, 0), coalesce(u.ignore_count, 0)
    from unnest(v_ids, v_kinds, v_details, v_weights) as r(id, kind, detail, weight)
    cross join lateral (
      select mm.* from public.devai_memories mm
       where mm.id = r.id and mm.owner_id = match_owner and mm.is_valid and mm.state = 'active' and mm.strength > 0.05
         and mm.source is distinct from 'conversation' and (mm.namespace || '/') ^@ any (v_scopes)) m
    left join public.memory_usage u on u.memory_id = m.id
   order by r.kind, r.weight desc, r.id;
end;
$$;
revoke all on function public.context_candidates(text[], uuid[], text[], text[], text, text[], timestamptz, boolean, integer, uuid)
  from public, anon;
grant execute on function public.context_candidates(text[], uuid[], text[], text[], text, text[], timestamptz, boolean, integer, uuid)
  to authenticated, service_role;

-- What one context/assemble leaves behind, in one call as the tenant: p_reinforce (the memories
-- its signals and message selected: the critical and relevant tiers) are reinforced like
-- retrieval's (public.reinforce_memories), what it injected into the session is recorded (tier,
-- level, tokens: read by memory/usage), and one memory_events row describes it.
create or replace function public.record_context_assembly(
  p_session_id text,
  p_ids uuid[],
  p_tiers text[],
  p_levels text[],
  p_tokens integer[],
  p_reinforce uuid[],
  p_thread_id text,
  p_meta jsonb
)
returns void
language plpgsql
volatile
security invoker
set search_path = ''
as $$
begin
  if coalesce(cardinality(p_reinforce), 0) > 0 then
    perform count(*) from public.reinforce_memories(p_reinforce);
  end if;
  if p_session_id is not null and coalesce(cardinality(p_ids), 0) > 0 then
    insert into public.context_injections as i (owner_id, session_id, memory_id, tier, level, tokens, injected_at)
    select (select auth.uid()), p_session_id, t.id, t.tier, t.level, t.tokens, now()
      from unnest(p_ids, p_tiers, p_levels, p_tokens) as t(id, tier, level, tokens)
      join public.devai_memories m on m.id = t.id
    on conflict (owner_id, session_id, memory_id) do update
       set tier = excluded.tier, level = excluded.level, tokens = excluded.tokens, injected_at = excluded.injected_at;
  end if;
  insert into public.memory_events (owner_id, thread_id, node, op, status, meta)
  values ((select auth.uid()), p_thread_id, 'context', 'search', 'ok', coalesce(p_meta, '{}'::jsonb));
end;
$$;
revoke all on function public.record_context_assembly(text, uuid[], text[], text[], integer[], uuid[], text, jsonb) from public, anon;
grant execute on function public.record_context_assembly(text, uuid[], text[], text[], integer[], uuid[], text, jsonb)
  to authenticated, service_role;

-- One usage report (POST memory/usage), as the tenant. For each retrieved memory of the caller's
-- (cited ones count as retrieved; ids of nobody's or another tenant's memories are returned as
-- unknown and change nothing): retrieval_count + 1, then citation_count + 1 if cited, else
-- ignore_count + 1. A cited memory is reinforced more than a merely retrieved one: strength =
-- base_strength = least(1, decayed strength + citation_reinforce_step), last access now (pinned
-- and highest-priority memories keep their strength: they never decay). The tenant's totals add
-- the report: tokens injected (p_tokens, per retrieved id) and cited, and, when the session had
-- predictions (context_prefetch rows), how many cited memories were among them.
create or replace function public.record_memory_usage(
  p_session_id text,
  p_retrieved uuid[],
  p_cited uuid[],
  p_tokens integer[],
  p_now timestamptz default now()
)
returns table (recorded integer, cited integer, unknown uuid[], cited_prefetched integer, predicted_session boolean)
language plpgsql
volatile
security invoker
set search_path = ''
as $$
#variable_conflict use_column
declare
  v_owner        uuid := (select auth.uid());
  v_step         double precision := public.memory_setting('citation_reinforce_step')::double precision;
  v_base         double precision := public.memory_setting('decay_base')::double precision;
  v_known        uuid[];
  v_known_cited  uuid[];
  v_tokens       bigint;
  v_cited_tokens bigint;
  v_hits         integer;
begin
  if coalesce(cardinality(p_retrieved), 0) <> coalesce(cardinality(p_tokens), 0) then
    raise exception 'p_tokens must have one count per retrieved id' using errcode = '22023';
  end if;
  with r as (
    select distinct on (t.id) t.id, greatest(coalesce(t.tokens, 0), 0) as tokens
      from unnest(coalesce(p_retrieved, '{}'::uuid[]), coalesce(p_tokens, '{}'::integer[])) as t(id, tokens)
     order by t.id
  )
  select coalesce(array_agg(r.id order by r.id), '{}'),
         coalesce(sum(r.tokens), 0),
         coalesce(sum(r.tokens) filter (where r.id = any (coalesce(p_cited, '{}'::uuid[]))), 0)
    into v_known, v_tokens, v_cited_tokens
    from r
    join public.devai_memories m on m.id = r.id;
  select coalesce(array_agg(k order by k), '{}') into v_known_cited
    from unnest(v_known) k where k = any (coalesce(p_cited, '{}'::uuid[]));

  insert into public.memory_usage as u
    (memory_id, owner_id, retrieval_count, citation_count, ignore_count, last_reported_at, last_cited_at)
  select k, v_owner, 1, case when k = any (v_known_cited) then 1 else 0 end,
         case when k = any (v_known_cited) then 0 else 1 end, p_now,
         case when k = any (v_known_cited) then p_now end
    from unnest(v_known) k
  on conflict (memory_id) do update
     set retrieval_count = u.retrieval_count + 1,
         citation_count = u.citation_count + excluded.citation_count,
         ignore_count = u.ignore_count + excluded.ignore_count,
         last_reported_at = greatest(u.last_reported_at, excluded.last_reported_at),
         last_cited_at = greatest(u.last_cited_at, excluded.last_cited_at);

  with target as (
    select m.id,
           least(1.0::double precision,
             case when m.priority = 'highest' or m.pinned then m.strength
                  else public.memory_decayed_strength(m.base_strength, m.last_accessed_at, p_now, v_base) + v_step
             end) as reinforced
      from public.devai_memories m
     where m.id = any (v_known_cited) and m.is_valid and m.state = 'active'
     order by m.id
       for update of m skip locked
  )
  update public.devai_memories m
     set strength = t.reinforced, base_strength = t.reinforced,
         last_accessed_at = greatest(m.last_accessed_at, p_now)
    from target t
   where m.id = t.id;

  predicted_session := exists (select from public.context_prefetch p where p.session_id = p_session_id);
  select count(distinct k)::int into v_hits
    from unnest(v_known_cited) k
   where predicted_session
     and exists (select from public.context_prefetch p where p.session_id = p_session_id and k = any (p.memory_ids));

  insert into public.memory_usage_totals as t
    (owner_id, reports, retrieved, cited, cited_in_predicted_sessions, cited_prefetched, injected_tokens, cited_tokens, updated_at)
  values (v_owner, 1, cardinality(v_known), cardinality(v_known_cited),
          case when predicted_session then cardinality(v_known_cited) else 0 end, v_hits, v_tokens, v_cited_tokens, p_now)
  on conflict (owner_id) do update
     set reports = t.reports + 1,
         retrieved = t.retrieved + excluded.retrieved,
         cited = t.cited + excluded.cited,
         cited_in_predicted_sessions = t.cited_in_predicted_sessions + excluded.cited_in_predicted_sessions,
         cited_prefetched = t.cited_prefetched + excluded.cited_prefetched,
         injected_tokens = t.injected_tokens + excluded.injected_tokens,
         cited_tokens = t.cited_tokens + excluded.cited_tokens,
         updated_at = excluded.updated_at;

  recorded := cardinality(v_known);
  cited := cardinality(v_known_cited);
  unknown := coalesce((select array_agg(distinct x order by x) from unnest(coalesce(p_retrieved, '{}'::uuid[])) x
                        where not (x = any (v_known))), '{}');
  cited_prefetched := v_hits;
  return next;
end;
$$;
revoke all on function public.record_memory_usage(text, uuid[], uuid[], integer[], timestamptz) from public, anon;
grant execute on function public.record_memory_usage(text, uuid[], uuid[], integer[], timestamptz) to authenticated, service_role;

-- Deletes the prefetch and injection records of sessions older than
-- context_session_retention_hours (the usage counters and totals stay). Called by pg_cron
-- (devai-context-prune) or by hand; returns what it deleted.
create or replace function memory_private.prune_context_sessions(p_now timestamptz default now())
returns jsonb
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
  v_cutoff     timestamptz := p_now - make_interval(secs => public.memory_setting('context_session_retention_hours')::double precision * 3600);
  v_prefetch   bigint;
  v_injections bigint;
begin
  delete from public.context_prefetch where computed_at < v_cutoff;
  get diagnostics v_prefetch = row_count;
  delete from public.context_injections where injected_at < v_cutoff;
  get diagnostics v_injections = row_count;
  return jsonb_build_object('prefetch', v_prefetch, 'injections', v_injections);
end;
$$;
revoke all on function memory_private.prune_context_sessions(timestamptz) from public;

insert into public.memory_maintenance_schedules (job_name, schedule, command, description) values
  ('devai-context-prune', '45 6 * * *', 'select memory_private.prune_context_sessions()',
   'Deletes context prefetch and injection records of sessions older than context_session_retention_hours.')
on conflict (job_name) do update
  set schedule = excluded.schedule, command = excluded.command, description = excluded.description;

select memory_private.register_maintenance_schedules();
