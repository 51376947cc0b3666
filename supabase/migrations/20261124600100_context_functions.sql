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

-- The memories context assembly considers besides its hybrid searches, each with the reason it
-- was found (kind) and everything assembly needs about it, in one call as the tenant (RLS):
--   given          the ids passed in (hits of the hybrid search, a prefetch): details only
--   file           memories citing one of `files` (linked to that file entity: by the entity
--                  rules when the content names it, or by the API's metadata.files), weight 1
--   module         memories citing a file under one of `modules` (directories), weight 0.7
--   branch         memories recorded on `branch` (metadata.branch), newest first, weight 0.6
--   background     memories of `background_categories` (the category as memory.query reads it:
--                  procedural memories count as 'procedural'), by importance, weight importance/5
--   recent_error   errors_and_fixes / error_resolution memories created since `recent_since`, weight 0.6
--   contradiction  both sides of each open contradiction (context_open_contradictions); detail is
--                  the other side's id, weight 1
-- Every kind obeys the search's scope rules: the tenant, '/'-bounded namespace prefixes, valid,
-- active, strength > 0.05, no raw episodes. A memory found for several reasons has several rows.
-- files: the files the memory cites (entity links and metadata.files, leading ./ removed); the
-- usage counters are memory_usage's (0 when never reported).
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

  -- `visible` is inlined where it is used (not materialized), so each lookup keeps its index.
  return query
  with visible as not materialized (
    select m.* from public.devai_memories m
     where m.owner_id = match_owner and m.is_valid and m.state = 'active' and m.strength > 0.05
       and m.source is distinct from 'conversation'
       and (m.namespace || '/') ^@ any (v_scopes)
  ),
  given as (
    select distinct g.id, 'given'::text as kind, null::text as detail, 0::double precision as weight
      from unnest(coalesce(given_ids, '{}'::uuid[])) as g(id)
  ),
  file_entities as (
    select e.id as entity_id, f.path
      from unnest(v_files) as f(path)
      join public.memory_entities e
        on e.owner_id = match_owner and e.normalized_name = public.memory_entity_key(f.path)
       and e.entity_type = 'file' and regexp_replace(e.canonical_name, '^(\./)+', '') = f.path
  ),
  file_hits as (
    select x.id, 'file'::text, x.path, 1::double precision
      from (select distinct on (m.id) m.id, fe.path, m.importance, m.strength
              from file_entities fe
              join public.memory_entity_links l on l.entity_id = fe.entity_id and l.owner_id = match_owner
              join visible m on m.id = l.memory_id
             order by m.id, fe.path) x
     order by x.importance desc, x.strength desc, x.id
     limit max_per_kind
  ),
  -- normalized_name keeps letters and digits only, so LIKE on its prefix needs no escaping; the
  -- canonical name then checks the directory boundary exactly. At most 200 files per module.
  module_entities as (
    select e.id as entity_id, d.dir
      from unnest(v_modules) as d(dir)
      cross join lateral (
        select e.id from public.memory_entities e
         where e.owner_id = match_owner and e.entity_type = 'file'
           and e.normalized_name like public.memory_entity_key(d.dir) || '%'
           and regexp_replace(e.canonical_name, '^(\./)+', '') ^@ (d.dir || '/')
         order by e.mention_count desc, e.id
         limit 200) e
  ),
  module_hits as (
    select x.id, 'module'::text, x.dir, 0.7::double precision
      from (select distinct on (m.id) m.id, me.dir, m.importance, m.strength
              from module_entities me
              join public.memory_entity_links l on l.entity_id = me.entity_id and l.owner_id = match_owner
              join visible m on m.id = l.memory_id
             order by m.id, me.dir) x
     where not exists (select from file_hits fh where fh.id = x.id)
     order by x.importance desc, x.strength desc, x.id
     limit max_per_kind
  ),
  branch_hits as (
    select m.id, 'branch'::text, branch, 0.6::double precision
      from visible m
     where branch is not null and m.metadata ? 'branch' and (m.metadata ->> 'branch') = branch
     order by m.created_at desc, m.id
     limit max_per_kind
  ),
  background_hits as (
    select m.id, 'background'::text,
           case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end,
           m.importance / 5.0::double precision
      from visible m
     where background_categories is not null
       and (case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end)
           = any (background_categories)
     order by m.importance desc, m.strength desc, m.created_at desc, m.id
     limit max_per_kind
  ),
  recent_error_hits as (
    select m.id, 'recent_error'::text, null::text, 0.6::double precision
      from visible m
     where recent_since is not null and m.created_at >= recent_since
       and (m.metadata ->> 'category' = 'errors_and_fixes' or m.source = 'error_resolution')
     order by m.created_at desc, m.id
     limit max_per_kind
  ),
  open_contradictions as (
    select c.memory_a, c.memory_b
      from public.context_open_contradictions(match_namespaces, 10) c
     where contradictions
  ),
  contradiction_hits as (
    select oc.memory_a, 'contradiction'::text, oc.memory_b::text, 1::double precision from open_contradictions oc
    union all
    select oc.memory_b, 'contradiction'::text, oc.memory_a::text, 1::double precision from open_contradictions oc
  ),
  refs as (
    select * from given
    union all select * from file_hits
    union all select * from module_hits
    union all select * from branch_hits
    union all select * from background_hits
    union all select * from recent_error_hits
    union all select * from contradiction_hits
  )
  select r.id, r.kind, r.detail, r.weight,
         m.content, m.memory_type, m.namespace, m.strength, m.priority, m.importance, m.pinned, m.source,
         m.metadata, m.created_at,
         case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end,
         (select max(rel.strength) from public.memory_relations rel
           where rel.owner_id = m.owner_id and (rel.from_id = m.id or rel.to_id = m.id)),
         array(select distinct f.path
                 from (select regexp_replace(e.canonical_name, '^(\./)+', '') as path
                         from public.memory_entity_links l
                         join public.memory_entities e on e.id = l.entity_id and e.entity_type = 'file'
                        where l.memory_id = m.id and l.owner_id = m.owner_id
                       union all
                       select regexp_replace(x, '^(\./)+', '')
                         from jsonb_array_elements_text(
                                case when jsonb_typeof(m.metadata -> 'files') = 'array' then m.metadata -> 'files'
                                     else '[]'::jsonb end) as x) f
                order by f.path),
         coalesce(u.retrieval_count, 0), coalesce(u.citation_count, 0), coalesce(u.ignore_count, 0)
    from refs r
    join visible m on m.id = r.id
    left join public.memory_usage u on u.memory_id = m.id
   order by r.kind, r.weight desc, r.id;
end;
$$;
revoke all on function public.context_candidates(text[], uuid[], text[], text[], text, text[], timestamptz, boolean, integer, uuid)
  from public, anon;
grant execute on function public.context_candidates(text[], uuid[], text[], text[], text, text[], timestamptz, boolean, integer, uuid)
  to authenticated, service_role;

-- What one context/assemble leaves behind, in one call as the tenant: the memories it injected
-- are reinforced like retrieval's (public.reinforce_memories; index pointers and stale flags are
-- not injected content and are left out by the caller), what it injected into the session is
-- recorded (tier, level, tokens: read by memory/usage), and one memory_events row describes it.
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
