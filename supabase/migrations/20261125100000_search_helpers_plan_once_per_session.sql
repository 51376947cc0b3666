-- The small helpers a retrieval calls were SQL functions with `set search_path = ''`. Postgres 17
-- cannot inline such a function, and it parses and plans a SQL function's body again in every
-- execution of every statement that calls it (the plan lives only as long as the calling
-- statement). A hybrid retrieval runs a few dozen such statements: perf on a backend serving
-- retrieve_for_turn put 22% of its CPU in fmgr_sql (parsing and planning these bodies), and one
-- call of memory_search.scoped_query inside a statement cost 137 µs as SQL, 26 µs as plpgsql,
-- whose plans are made once per session. Same bodies, same results, now in plpgsql
-- (docs/retrieval.md#speed). They are called once or a few times per statement, so plpgsql's
-- per-call cost is smaller than the planning it saves.

-- A term's query over fts_scoped (20261124400000_hybrid_search.sql): in each scope key, the
-- term's lexemes prefixed with that key, all of them (a phrase's words); any key. Called by
-- memory_search.keyword_postings for every query term.
create or replace function memory_search.scoped_query(p_term tsquery, p_keys text[])
returns tsquery
language plpgsql
immutable
set search_path = ''
as $$
begin
  return (
    select string_agg('(' || w.words || ')', ' | ')::tsquery
      from unnest(p_keys) as k(key)
     cross join lateral (
       select string_agg('''' || k.key || ':' || l.lexeme || '''', ' & ') as words
         from (select distinct replace(m[1], '''''', '''') as lexeme
                 from regexp_matches(p_term::text, '''((?:[^'']|'''')*)''', 'g') as m) l) w);
end;
$$;

-- The scope whose key a namespace's lexemes carry in fts_scoped: <root>/project/<p> for a
-- project and anything below it, else <root>/<second part> (20261124400000_hybrid_search.sql).
-- Called by the fts trigger (memory_private.derive_content_columns) and keyword_postings.
create or replace function memory_private.keyword_scope(p_namespace text)
returns text
language plpgsql
immutable
parallel safe
set search_path = ''
as $$
begin
  return case when split_part(p_namespace, '/', 2) = 'project' and split_part(p_namespace, '/', 3) <> ''
              then split_part(p_namespace, '/', 1) || '/project/' || split_part(p_namespace, '/', 3)
              else split_part(p_namespace, '/', 1) || '/' || split_part(p_namespace, '/', 2) end;
end;
$$;

-- The key a tenant's scope prefixes its lexemes with in fts_scoped: 16 hex digits of
-- md5(owner | scope). A collision between two tenants' keys costs extra reads, never a leak (the
-- owner is checked on every row read). Called by the fts trigger and keyword_postings.
create or replace function memory_private.keyword_scope_key(p_owner uuid, p_scope text)
returns text
language plpgsql
immutable
parallel safe
set search_path = ''
as $$
begin
  return left(md5(p_owner::text || '|' || p_scope), 16);
end;
$$;

-- Identifiers in a text, as exact lexemes (docs/retrieval.md#keyword): file paths, error codes,
-- package@versions, snake_case, camelCase and hyphenated names. Called by the fts trigger for
-- every written memory and by public.memory_keyword_terms for every query.
create or replace function public.memory_identifier_lexemes(p_text text)
returns text[]
language plpgsql
immutable
parallel safe
set search_path = ''
as $_$
begin
  return (
    select coalesce(array_agg(distinct lower(t.tok) order by lower(t.tok)), '{}')
      from (select btrim(m[1], '.:/-#') as tok
              from regexp_matches(coalesce(p_text, ''), '([A-Za-z0-9_@./:#$-]+)', 'g') as m) as t
     where char_length(t.tok) between 3 and 100
       and t.tok ~ '[A-Za-z]'
       and (t.tok ~ '[_@/$#]'
            or t.tok ~ '[A-Za-z0-9]\.[A-Za-z0-9]'
            or t.tok ~ '[A-Za-z][0-9]|[0-9][A-Za-z]'
            or t.tok ~ '[a-z][A-Z]'
            or t.tok ~ '[A-Za-z0-9]-[A-Za-z0-9]'));
end;
$_$;

-- The fusion weights of an embedding model ('*' for any other) and rrf_k, as the retrieval's
-- `weights` (docs/retrieval.md#fusion). Called by public.retrieve_for_turn and memory.query.
create or replace function public.memory_search_weights_for(p_model text)
returns jsonb
language plpgsql
stable
set search_path = ''
as $$
begin
  return (
    select jsonb_build_object(
             'keyword', coalesce(w.keyword, 1), 'vector', coalesce(w.vector, 1), 'graph', coalesce(w.graph, 0.5),
             'rrf_k', coalesce((select s.value from public.memory_settings s where s.name = 'rrf_k'), 60))
      from (select 1) as one
      left join lateral (
        select x.keyword, x.vector, x.graph
          from public.memory_search_weights x
         where x.embedding_model in (p_model, '*')
         order by (x.embedding_model = '*')
         limit 1) w on true);
end;
$$;

-- The scopes as '/'-terminated prefixes, each once (docs/context.md). Called by context
-- assembly's reads (public.context_candidates, public.context_open_contradictions).
create or replace function public.context_scope_prefixes(match_namespaces text[])
returns text[]
language plpgsql
immutable
parallel safe
set search_path = ''
as $$
begin
  return (
    select coalesce(array_agg(distinct rtrim(s, '/') || '/'), '{}')
      from unnest(coalesce(match_namespaces, '{}'::text[])) as s
     where s is not null and rtrim(s, '/') <> '');
end;
$$;

-- Whether a memory reached by a graph hop may be returned: inside the scopes (when given), and
-- valid and active now, or held at p_at (public.memory_at) for an as-of search
-- (docs/graph.md#graph-signals). Called per reached memory by the graph signals.
create or replace function public.memory_graph_visible(m public.devai_memories, p_at timestamptz, p_prefixes text[])
returns boolean
language plpgsql
stable
set search_path = ''
as $$
begin
  if not (p_prefixes is null or (m.namespace || '/') ^@ any (p_prefixes)) then
    return false;
  end if;
  if p_at is null then
    return m.is_valid and m.state = 'active';
  end if;
  return (select a.held from public.memory_at(m, p_at) a);
end;
$$;

-- Whether the caller may read tenant p_owner's rows through a security-definer lookup: with a
-- tenant (auth.uid()), only its own; without one, only a job's role
-- (20261124900100_owner_lookups_refuse_sessions_without_tenant.sql). Called by
-- memory_search.keyword_postings and memory_search.context_lookups.
create or replace function memory_search.caller_reads_owner(p_owner uuid)
returns boolean
language plpgsql
stable
set search_path = ''
as $$
begin
  return p_owner is not null
     and case when auth.uid() is not null then auth.uid() = p_owner
              else coalesce(nullif(current_setting('role', true), ''), 'none') in ('none', 'postgres', 'service_role') end;
end;
$$;

-- Strength after the idle days since the last access: base × decay_base ^ whole idle days,
-- capped where the power would underflow (docs/operations.md). Called per row by the
-- reinforcement (public.reinforce_memories) and public.restore_memory.
create or replace function public.memory_decayed_strength(
  p_base_strength double precision, p_last_accessed_at timestamptz, p_now timestamptz, p_decay_base double precision)
returns double precision
language plpgsql
immutable
parallel safe
set search_path = ''
as $$
begin
  return p_base_strength * power(p_decay_base, least(
    greatest(0::double precision, floor(date_part('epoch', p_now - p_last_accessed_at) / 86400)),
    case when p_decay_base >= 1 then 0::double precision else floor(-300 / ln(p_decay_base)) end));
end;
$$;

-- What a memory held at an instant (20261124300000_bitemporal_facts_and_typed_edges.sql): the
-- newest history row at or before p_at that records a state, else the row itself. The one as-of
-- rule: match_memories, query_memories, the graph functions and the memory API's as_of call it
-- (docs/graph.md#as-of).
create or replace function public.memory_at(m public.devai_memories, p_at timestamptz)
returns table (held boolean, content text, is_valid boolean, state text, superseded_by uuid)
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
         case when h.found then h.superseded_by else m.superseded_by end
    from (select 1) as one
    left join lateral (
      select true as found, x.new_content as content, (x.meta ->> 'is_valid')::boolean as is_valid,
             x.meta ->> 'state' as state, (x.meta ->> 'superseded_by')::uuid as superseded_by
        from public.memory_history x
       where x.memory_id = m.id and x.ts <= p_at and x.meta ? 'state'
       order by x.ts desc, x.id desc
       limit 1) h on true;
end;
$$;

-- The scopes as '/'-terminated prefixes (null or empty: no scope filter), shared by the graph
-- functions (20261124300200_graph_signals.sql): 'devai/project/a' matches itself and
-- 'devai/project/a/...', never 'devai/project/ab'.
create or replace function public.memory_scope_prefixes(p_scopes text[])
returns text[]
language plpgsql
immutable
parallel safe
set search_path = ''
as $$
begin
  return (
    select case when cardinality(p) = 0 then null else p end
      from (select coalesce(array_agg(distinct rtrim(s, '/') || '/'), '{}') as p
              from unnest(coalesce(p_scopes, '{}'::text[])) as s
             where s is not null and rtrim(s, '/') <> '') as x);
end;
$$;

-- The key an entity name is resolved by: lower-cased (NFKC), every character but letters, digits,
-- '+' and '#' removed, so "Node.js", "nodejs" and "NODE-JS" are one entity while "C", "C++" and
-- "C#" stay three (docs/graph.md#entities). Called by the entity trigger, links and lookups.
create or replace function public.memory_entity_key(p_name text)
returns text
language plpgsql
immutable
parallel safe
set search_path = ''
as $$
begin
  return regexp_replace(lower(normalize(coalesce(p_name, ''), nfkc)), '[^[:alnum:]+#]+', '', 'g');
end;
$$;

-- Open contradictions in the scopes, newest first, at most max_count pairs
-- (20261124700200_open_contradictions_from_the_table.sql, docs/consolidation.md#contradictions):
-- the table's unresolved pairs and `contradicts` edges whose two memories are both valid and
-- active again, unless the user resolved that pair. Called by public.context_candidates.
create or replace function public.context_open_contradictions(match_namespaces text[], max_count integer default 10)
returns table (memory_a uuid, memory_b uuid, detected_at timestamptz)
language plpgsql
stable
set search_path = ''
as $$
#variable_conflict use_column
begin
  return query
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
   limit greatest(1, least(coalesce(max_count, 10), 50));
end;
$$;
