-- Hybrid search: keyword + vector + graph, fused with weighted reciprocal rank fusion, in one SQL
-- call made as the tenant (RLS). docs/retrieval.md explains the signals, the fusion and the
-- settings; this file is the implementation.
--
-- Keyword: the fts column, now the English lexemes of the content PLUS its identifiers as exact
-- lexemes (file paths, ERR_CODES, package@versions, function_names, camelCase), so
-- `ERR_MODULE_NOT_FOUND` matches that code and not every memory that says "module" or "found".
-- A query becomes a set of terms (words, identifiers, "quoted phrases"), any of which may match
-- (OR, not websearch_to_tsquery's AND: a question's words are rarely all in its answer), minus
-- -exclusions; matches are scored BM25-style (idf from the term's document frequency in the
-- caller's scope, length-normalised), and the work is bounded: at most keyword_max_terms terms,
-- each term's matches counted up to keyword_df_cap rows through a GIN index over scoped lexemes
-- (fts_scoped: each lexeme prefixed with a key of the memory's tenant and scope), so a lookup
-- reads exactly the caller's scope in a big table. Terms more common than the cap still score but
-- do not generate candidates.
--
-- Vector: public.match_memories, unchanged (exact search for small scopes, HNSW above).
-- Graph: one or more hops over memory_relations from the best keyword/vector hits, weighted by
-- edge strength. Fusion: sum over signals of weight / (rrf_k + rank), weights per embedding model
-- (public.memory_search_weights), normalised to 0..1 so callers can multiply by strength.

-- Identifier-like tokens of a text, lower-cased: what a coding agent names exactly. A token
-- counts when it has a letter and any of: _ @ / $ #, a dot between letters/digits (auth.ts,
-- os.path), a letter-digit mix (TS2345, v18, e1234), camelCase, or an inner hyphen (web-app).
-- Surrounding punctuation is trimmed ("auth.ts." at a sentence end). Used for the fts column and
-- for the query's terms, so both sides agree.
create or replace function public.memory_identifier_lexemes(p_text text)
returns text[]
language sql
immutable
parallel safe
set search_path = ''
as $$
  select coalesce(array_agg(distinct lower(t.tok) order by lower(t.tok)), '{}')
    from (select btrim(m[1], '.:/-#') as tok
            from regexp_matches(coalesce(p_text, ''), '([A-Za-z0-9_@./:#$-]+)', 'g') as m) as t
   where char_length(t.tok) between 3 and 100
     and t.tok ~ '[A-Za-z]'
     and (t.tok ~ '[_@/$#]'
          or t.tok ~ '[A-Za-z0-9]\.[A-Za-z0-9]'
          or t.tok ~ '[A-Za-z][0-9]|[0-9][A-Za-z]'
          or t.tok ~ '[a-z][A-Z]'
          or t.tok ~ '[A-Za-z0-9]-[A-Za-z0-9]')
$$;
revoke all on function public.memory_identifier_lexemes(text) from public, anon;
grant execute on function public.memory_identifier_lexemes(text) to authenticated, service_role;

-- The scope a namespace belongs to for keyword lookups: <root>/project/<project> for project
-- namespaces, else its first two segments (<root>/global, <root>/user). Retrieval searches whole
-- scopes; a deeper scope (dedup: its candidate's namespace) is looked up through its scope and
-- then filtered by prefix.
create or replace function memory_private.keyword_scope(p_namespace text)
returns text
language sql
immutable
parallel safe
set search_path = ''
as $$
  select case when split_part(p_namespace, '/', 2) = 'project' and split_part(p_namespace, '/', 3) <> ''
              then split_part(p_namespace, '/', 1) || '/project/' || split_part(p_namespace, '/', 3)
              else split_part(p_namespace, '/', 1) || '/' || split_part(p_namespace, '/', 2) end
$$;
revoke all on function memory_private.keyword_scope(text) from public;

-- The key a tenant's scope prefixes its lexemes with in fts_scoped: 16 hex digits of
-- md5(owner | scope). A collision between two tenants' keys costs extra reads, never a leak (the
-- owner is checked on every row read).
create or replace function memory_private.keyword_scope_key(p_owner uuid, p_scope text)
returns text
language sql
immutable
parallel safe
set search_path = ''
as $$
  select left(md5(p_owner::text || '|' || p_scope), 16)
$$;
revoke all on function memory_private.keyword_scope_key(uuid, text) from public;

alter table public.devai_memories add column fts_scoped tsvector not null default ''::tsvector;

-- The trigger that derives content_hash and fts now adds the identifier lexemes to fts, and
-- derives fts_scoped (fts's lexemes, each prefixed with the tenant-and-scope key) from fts.
create or replace function memory_private.derive_content_columns()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
declare
  v_key text;
begin
  new.content_hash := memory_private.content_hash(new.content);
  new.fts := to_tsvector('english'::regconfig, new.content)
             || array_to_tsvector(public.memory_identifier_lexemes(new.content));
  v_key := memory_private.keyword_scope_key(new.owner_id, memory_private.keyword_scope(new.namespace));
  new.fts_scoped := array_to_tsvector(array(select v_key || ':' || l from unnest(tsvector_to_array(new.fts)) l));
  return new;
end;
$$;
revoke all on function memory_private.derive_content_columns() from public;

-- Also when a memory moves to another namespace or tenant (its scope key changes).
drop trigger devai_memories_derive_content on public.devai_memories;
create trigger devai_memories_derive_content
  before insert or update of content, content_hash, fts, fts_scoped, namespace, owner_id on public.devai_memories
  for each row execute function memory_private.derive_content_columns();
alter table public.devai_memories enable always trigger devai_memories_derive_content;

-- Existing rows get the new fts and fts_scoped (the trigger fires on an update of fts; these
-- columns are not audited, see the history trigger's column list).
update public.devai_memories set fts = fts;

comment on column public.devai_memories.fts is
  'English tsvector of content plus its identifier lexemes (public.memory_identifier_lexemes), for the keyword signal of public.hybrid_search. Derived from content by trigger devai_memories_derive_content on insert and content change; a value written directly is replaced.';
comment on column public.devai_memories.fts_scoped is
  'fts''s lexemes, each prefixed with a key of the memory''s tenant and scope (memory_private.keyword_scope_key), so a keyword lookup reads exactly one tenant''s scope through the GIN index. Derived by trigger devai_memories_derive_content; a value written directly is replaced.';

-- The keyword lookups' index: scoped lexemes of what retrieval searches (valid, active facts,
-- like the HNSW index). The plain fts index had no reader left.
drop index if exists public.devai_memories_fts;
create index devai_memories_fts_scoped on public.devai_memories using gin (fts_scoped)
  where is_valid and state = 'active' and source is distinct from 'conversation';

-- Tunables of the hybrid search (read at every call).
insert into public.memory_settings (name, value, description) values
  ('rrf_k', 60,
   'Reciprocal rank fusion constant: a signal contributes weight / (rrf_k + rank). Larger values flatten the difference between ranks.'),
  ('keyword_max_terms', 10,
   'hybrid_search uses at most this many query terms (phrases and identifiers first, then words in query order).'),
  ('keyword_df_cap', 25,
   'A query term''s matches in the caller''s scope are counted up to this many; a term matching more is too common to generate keyword candidates (it still adds to their score).'),
  ('keyword_min_coverage', 0.45,
   'A memory found only by keyword is returned when its BM25 score reaches this share of the best score a memory matching every query term could get.'),
  ('bm25_k1', 1.2, 'BM25 term-frequency saturation.'),
  ('bm25_b', 0.75, 'BM25 length normalisation (0: none, 1: full).'),
  ('graph_seed_count', 5, 'hybrid_search follows the graph from this many of the best keyword/vector hits.')
on conflict (name) do nothing;

alter table public.memory_settings add constraint memory_settings_hybrid_search_range check (
  case name
    when 'rrf_k'                then value >= 1 and value <= 1000
    when 'keyword_max_terms'    then value >= 1 and value <= 64 and value = trunc(value)
    when 'keyword_df_cap'       then value >= 10 and value <= 100000 and value = trunc(value)
    when 'keyword_min_coverage' then value >= 0 and value <= 1
    when 'bm25_k1'              then value >= 0 and value <= 10
    when 'bm25_b'               then value >= 0 and value <= 1
    when 'graph_seed_count'     then value >= 1 and value <= 50 and value = trunc(value)
    else true
  end);

-- Fusion weights per embedding model: how much each signal counts. A weak embedder (the offline
-- hashed n-grams) gets a small vector weight so it cannot drag a good keyword list down; a neural
-- one counts as much as keywords. '*' applies to models without a row of their own.
create table public.memory_search_weights (
  embedding_model text primary key,
  keyword         real not null,
  vector          real not null,
  graph           real not null,
  updated_at      timestamptz not null default now(),
  constraint memory_search_weights_model_shape check (char_length(embedding_model) between 1 and 200),
  constraint memory_search_weights_range check (
    keyword between 0 and 10 and vector between 0 and 10 and graph between 0 and 10
    and keyword + vector + graph > 0)
);
comment on table public.memory_search_weights is
  'Weights of the keyword, vector and graph signals in hybrid_search''s rank fusion, per embedding model (''*'' = any other model). docs/retrieval.md#fusion.';

alter table public.memory_search_weights enable row level security;
revoke all on table public.memory_search_weights from anon, authenticated, public;
grant select on table public.memory_search_weights to authenticated;
grant all on table public.memory_search_weights to service_role;
create policy "Signed-in users can read the search weights" on public.memory_search_weights
  for select to authenticated using (true);

insert into public.memory_search_weights (embedding_model, keyword, vector, graph) values
  ('*', 1.0, 1.0, 0.5),
  ('local-hash-512-v1', 1.0, 0.5, 0.5)
on conflict (embedding_model) do nothing;

-- A query's keyword terms: "quoted phrases", identifiers and English words, in that order, each
-- with the tsquery that matches it; -word and -"phrase" exclusions come back as kind 'exclude'.
-- Never raises on any input (no tsquery syntax reaches the parser: lexemes are quoted, phrases
-- go through phraseto_tsquery). Stop words and punctuation give no terms.
create or replace function public.memory_keyword_terms(query_text text, max_terms integer default 12)
returns table (term text, kind text, query tsquery)
language plpgsql
stable
parallel safe
set search_path = ''
as $$
declare
  v_text   text := left(coalesce(query_text, ''), 20000);
  v_seen   text[] := '{}';
  v_count  integer := 0;
  v_part   text;
  v_q      tsquery;
  v_lex    text;
begin
  -- Exclusions first (they are removed from the text before the rest is read).
  for v_part in select m[1] from regexp_matches(v_text, '(?:^|\s)-"([^"]*)"', 'g') as m loop
    v_q := phraseto_tsquery('english'::regconfig, v_part);
    if numnode(v_q) > 0 then term := v_part; kind := 'exclude'; query := v_q; return next; end if;
  end loop;
  v_text := regexp_replace(v_text, '(^|\s)-"[^"]*"', ' ', 'g');
  for v_part in select m[1] from regexp_matches(v_text, '(?:^|\s)-([^\s"]+)', 'g') as m loop
    v_q := plainto_tsquery('english'::regconfig, v_part);
    if numnode(v_q) > 0 then term := v_part; kind := 'exclude'; query := v_q; return next; end if;
  end loop;
  v_text := regexp_replace(v_text, '(^|\s)-[^\s"]+', ' ', 'g');

  -- Phrases.
  for v_part in select m[1] from regexp_matches(v_text, '"([^"]*)"', 'g') as m loop
    exit when v_count >= max_terms;
    v_q := phraseto_tsquery('english'::regconfig, v_part);
    if numnode(v_q) > 0 and not (v_q::text = any (v_seen)) then
      v_seen := v_seen || v_q::text; v_count := v_count + 1;
      term := v_part; kind := 'phrase'; query := v_q; return next;
    end if;
  end loop;
  v_text := regexp_replace(v_text, '"[^"]*"', ' ', 'g');

  -- Identifiers: exact lexemes (quoted, so their punctuation is not tsquery syntax).
  foreach v_lex in array public.memory_identifier_lexemes(v_text) loop
    exit when v_count >= max_terms;
    v_lex := replace(replace(v_lex, '''', ''), '\', '');
    continue when v_lex = '';
    v_q := ('''' || v_lex || '''')::tsquery;
    if not (v_q::text = any (v_seen)) then
      v_seen := v_seen || v_q::text; v_count := v_count + 1;
      term := v_lex; kind := 'identifier'; query := v_q; return next;
    end if;
  end loop;

  -- Words: the English lexemes, in the order they appear in the query.
  for v_lex in
    select l.lexeme
      from unnest(to_tsvector('english'::regconfig, v_text)) as l
     order by l.positions[1], l.lexeme
  loop
    exit when v_count >= max_terms;
    v_lex := replace(replace(v_lex, '''', ''), '\', '');
    continue when v_lex = '';
    v_q := ('''' || v_lex || '''')::tsquery;
    if not (v_q::text = any (v_seen)) then
      v_seen := v_seen || v_q::text; v_count := v_count + 1;
      term := v_lex; kind := 'word'; query := v_q; return next;
    end if;
  end loop;
end;
$$;
revoke all on function public.memory_keyword_terms(text, integer) from public, anon;
grant execute on function public.memory_keyword_terms(text, integer) to authenticated, service_role;

-- How many valid, active memories of the owner lie in the scopes (namespace bases without the
-- trailing '/'), counting at most p_cap + 1: an index-only walk of the owner + namespace btree as
-- byte ranges (namespace ~>=~ base and ~<~ base || '0'; '0' follows '/'). Bases inside another
-- base must be left out by the caller (they would count twice).
create or replace function public.memory_scope_size(p_owner uuid, p_bases text[], p_cap integer)
returns integer
language sql
stable
security invoker
set search_path = ''
as $$
  select count(*)::integer
    from (select 1
            from unnest(p_bases) as b(base)
           cross join lateral (
             select 1 from public.devai_memories m
              where m.owner_id = p_owner and m.is_valid and m.state = 'active'
                and m.namespace operator(pg_catalog.~>=~) b.base
                and m.namespace operator(pg_catalog.~<~) (b.base || '0')
                and (m.namespace = b.base or m.namespace ^@ (b.base || '/'))
              limit p_cap + 1) as hit
           limit p_cap + 1) as counted
$$;
revoke all on function public.memory_scope_size(uuid, text[], integer) from public, anon;
grant execute on function public.memory_scope_size(uuid, text[], integer) to authenticated, service_role;

-- The keyword signal's index lookups. Row level security cannot use a query's own conditions as
-- index conditions unless their operators are leakproof, and tsvector @@ tsquery is not: as the
-- tenant, the (owner_id, fts) index could only be searched by owner_id, visiting every memory of
-- the tenant for every term. This function runs as its owner (no RLS) with the tenant pinned
-- explicitly, so a term is looked up through both keys and work stays bounded by the term's
-- matches. It returns only the caller's own memory ids and counts, never content: the search
-- reads the memories themselves under RLS. Schema memory_search is not exposed by the API.
create schema if not exists memory_search;
revoke all on schema memory_search from public;
grant usage on schema memory_search to authenticated, service_role;

-- A term's query over fts_scoped: in each scope key, the term's lexemes prefixed with that key,
-- all of them (a phrase's words; the phrase itself is checked on fts). A lexeme never holds a
-- quote or backslash (memory_keyword_terms strips them; the English parser splits on them).
create or replace function memory_search.scoped_query(p_term tsquery, p_keys text[])
returns tsquery
language sql
immutable
set search_path = ''
as $$
  select string_agg('(' || w.words || ')', ' | ')::tsquery
    from unnest(p_keys) as k(key)
   cross join lateral (
     select string_agg('''' || k.key || ':' || l.lexeme || '''', ' & ') as words
       from (select distinct replace(m[1], '''''', '''') as lexeme
               from regexp_matches(p_term::text, '''((?:[^'']|'''')*)''', 'g') as m) l) w
$$;
revoke all on function memory_search.scoped_query(tsquery, text[]) from public, anon;

-- Per term: its valid, active matches in the scopes ('/'-terminated prefixes), raw episodes left
-- out (docs/graph.md#episodes-in-retrieval), counted up to p_df_cap + 1 (term_df, in term order); candidates: the matches of the terms with at most
-- p_df_cap of them, rarest first, until p_max_candidates; when every term is more common than
-- the cap, the memories matching all of them, else any of them (at most p_df_cap each).
-- A signed-in caller can only look up its own tenant: for any other p_owner it finds nothing, as
-- row level security would answer. With p_as_of: the memories held at that instant
-- (public.memory_at), found by a scan of the tenant's rows (the index holds today's active rows).
create or replace function memory_search.keyword_postings(
  p_owner uuid, p_scopes text[], p_terms tsquery[], p_df_cap integer, p_max_candidates integer,
  p_as_of timestamptz default null,
  out term_df integer[], out candidates uuid[])
language plpgsql
stable
security definer
set search_path = ''
set plan_cache_mode = 'force_custom_plan'
as $$
declare
  v_uid    uuid := auth.uid();
  v_keys   text[];
  v_scoped boolean;
  v_ids    uuid[];
  v_rare   text[] := '{}';
  v_q      tsquery;
  v_sq     tsquery;
  v_order  integer[];
  v_live   tsquery[];
begin
  term_df := '{}';
  candidates := '{}';
  if p_owner is null or (v_uid is not null and p_owner <> v_uid) then
    return;
  end if;
  -- Whole scopes (or deeper ones) are looked up by their keys in fts_scoped; an as-of search, or
  -- a scope above them ('devai/project'), scans the tenant's rows instead.
  v_scoped := p_as_of is null and not exists (
    select 1 from unnest(p_scopes) s
     where split_part(rtrim(s, '/'), '/', 2) = ''
        or (split_part(rtrim(s, '/'), '/', 2) = 'project' and split_part(rtrim(s, '/'), '/', 3) = ''));
  select array_agg(distinct memory_private.keyword_scope_key(p_owner, memory_private.keyword_scope(rtrim(s, '/'))))
    into v_keys from unnest(p_scopes) s;

  foreach v_q in array coalesce(p_terms, '{}') loop
    if v_scoped then
      v_sq := memory_search.scoped_query(v_q, v_keys);
      select array_agg(x.id) into v_ids
        from (select m.id from public.devai_memories m
               where m.fts_scoped @@ v_sq
                 and m.is_valid and m.state = 'active' and m.source is distinct from 'conversation'
                 -- The key pins the tenant already; this re-check (against a key collision) is
                 -- written so the planner cannot add the tenant's whole owner index to the lookup.
                 and m.owner_id::text = p_owner::text
                 and (m.namespace || '/') ^@ any (p_scopes)
                 and m.fts @@ v_q
               limit p_df_cap + 1) x;
    else
      select array_agg(x.id) into v_ids
        from (select m.id from public.devai_memories m
               where m.owner_id = p_owner
                 and (case when p_as_of is null then m.is_valid and m.state = 'active'
                           else m.created_at <= p_as_of and (m.valid_until is null or m.valid_until > p_as_of)
                                and (select a.held from public.memory_at(m, p_as_of) a) end)
                 and m.source is distinct from 'conversation'
                 and m.fts @@ v_q
                 and (m.namespace || '/') ^@ any (p_scopes)
               limit p_df_cap + 1) x;
    end if;
    term_df := term_df || coalesce(cardinality(v_ids), 0);
    v_rare := v_rare || case when coalesce(cardinality(v_ids), 0) between 1 and p_df_cap then array_to_string(v_ids, ' ') else '' end;
  end loop;

  -- Rarest terms first bring their matches in.
  select coalesce(array_agg(o.i order by term_df[o.i], o.i), '{}') into v_order
    from generate_subscripts(term_df, 1) o(i)
   where term_df[o.i] between 1 and p_df_cap;
  for i in 1 .. cardinality(v_order) loop
    exit when cardinality(candidates) >= p_max_candidates;
    candidates := candidates || string_to_array(v_rare[v_order[i]], ' ')::uuid[];
  end loop;
  if cardinality(v_order) > 0 then
    return;
  end if;

  -- Every term that matches is common: the memories matching all of them, else any of them.
  select coalesce(array_agg(q order by i), '{}') into v_live
    from unnest(p_terms) with ordinality t(q, i) where term_df[t.i] > 0;
  if cardinality(v_live) = 0 then
    return;
  end if;
  for pass in 1 .. 2 loop
    exit when cardinality(candidates) >= p_df_cap;
    v_q := (select string_agg('(' || q::text || ')', case when pass = 1 then ' & ' else ' | ' end)::tsquery from unnest(v_live) q);
    if v_scoped then
      v_sq := memory_search.scoped_query(v_q, v_keys);
      select candidates || coalesce(array_agg(x.id), '{}') into candidates
        from (select m.id from public.devai_memories m
               where m.fts_scoped @@ v_sq
                 and m.is_valid and m.state = 'active' and m.source is distinct from 'conversation'
                 and m.owner_id::text = p_owner::text
                 and (m.namespace || '/') ^@ any (p_scopes)
                 and m.fts @@ v_q
                 and not (m.id = any (candidates))
               limit p_df_cap) x;
    else
      select candidates || coalesce(array_agg(x.id), '{}') into candidates
        from (select m.id from public.devai_memories m
               where m.owner_id = p_owner
                 and (case when p_as_of is null then m.is_valid and m.state = 'active'
                           else m.created_at <= p_as_of and (select a.held from public.memory_at(m, p_as_of) a) end)
                 and m.source is distinct from 'conversation'
                 and m.fts @@ v_q
                 and (m.namespace || '/') ^@ any (p_scopes)
                 and not (m.id = any (candidates))
               limit p_df_cap) x;
    end if;
  end loop;
end;
$$;
revoke all on function memory_search.keyword_postings(uuid, text[], tsquery[], integer, integer, timestamptz) from public, anon;
grant execute on function memory_search.keyword_postings(uuid, text[], tsquery[], integer, integer, timestamptz) to authenticated, service_role;

-- The hybrid search (see the top of this file). Returns at most match_count memories, best first
-- by relevance × strength, each with the signals that found it. Called by memory-retrieve,
-- memory.query (public.query_memories) and the dedup neighbour lookup, as the tenant.
--   search_mode      'hybrid' (keyword + vector + graph), 'vector' or 'keyword'
--   graph_depth      hops over memory_relations from the best hits (0: no graph signal)
--   graph_edge_types relation types to follow (default: every type but 'contradicts')
--   filter_*         hard filters for every signal (time window on created_at, types, categories)
--   prefer_memory_types  relevance × 1.25 for these types (the 'how' intent favours procedural)
--   recency_weight   weight of a fourth ranked list, newest first among the candidates ('when')
--   keyword_threshold  the keyword floor (share of the best possible score; default the setting
--                    keyword_min_coverage); 0 with similarity_threshold 0 ranks every candidate
--   as_of            answer from what the memory held at that instant (public.memory_at): its
--                    content then; found by exact scans, not the indexes of today's rows
--   entity_terms     names to look up as entities (who/what questions): their linked memories
--                    join the graph list (public.memory_entity_lookup)
--   graph_episodes   let the graph bring raw episodes in, at half a fact's weight (when/why
--                    questions); the keyword and vector lists never hold them
-- A memory is returned when the vector found it above similarity_threshold, or its keyword score
-- reaches keyword_min_coverage of the query's best possible score, or the graph reached it from
-- such a memory. The same scope rules hold for every signal: the tenant (match_owner, and RLS),
-- '/'-bounded namespace prefixes (never LIKE), is_valid, state 'active', strength > 0.05, and for
-- vectors the embedding model.
create or replace function public.hybrid_search(
  query_text text,
  query_embedding extensions.vector(512) default null,
  match_namespaces text[] default null,
  match_count integer default 15,
  similarity_threshold double precision default 0.7,
  match_embedding_model text default null,
  match_owner uuid default auth.uid(),
  search_mode text default 'hybrid',
  graph_depth integer default 1,
  graph_edge_types text[] default null,
  filter_after timestamptz default null,
  filter_before timestamptz default null,
  filter_memory_types text[] default null,
  filter_categories text[] default null,
  prefer_memory_types text[] default null,
  recency_weight double precision default 0,
  keyword_threshold double precision default null,
  as_of timestamptz default null,
  entity_terms text[] default null,
  graph_episodes boolean default false
)
returns table (
  id uuid,
  content text,
  memory_type text,
  namespace text,
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
  max_relation_strength real,
  category text,
  similarity double precision,
  keyword_rank integer,
  keyword_score double precision,
  keyword_coverage double precision,
  vector_rank integer,
  graph_rank integer,
  graph_via uuid,
  graph_edge text,
  relevance double precision
)
language plpgsql
stable
security invoker
set search_path = ''
set plan_cache_mode = 'force_custom_plan'
as $$
#variable_conflict use_column
declare
  v_bases      text[];
  v_scopes     text[];
  v_k          double precision;
  v_w_kw       double precision := 0;
  v_w_vec      double precision := 0;
  v_w_graph    double precision := 0;
  v_w_recent   double precision := greatest(coalesce(recency_weight, 0), 0);
  v_max_terms  integer;
  v_df_cap     integer;
  v_min_cov    double precision;
  v_k1         double precision;
  v_b          double precision;
  v_seed_count integer;
  v_n          integer;
  v_terms_all  tsquery[];
  v_excludes   tsquery[];
  v_ids        uuid[];
  v_df         integer;
  v_terms_q    tsquery[] := '{}';
  v_terms_idf  double precision[] := '{}';
  v_exclude    tsquery;
  v_cand       uuid[] := '{}';
  v_dfs        integer[];
  v_idf_total  double precision := 0;
  v_pool       integer;
  v_vec_pool   integer;
  -- signal lists (parallel arrays, best first)
  v_kw_ids     uuid[] := '{}';
  v_kw_score   double precision[] := '{}';
  v_kw_cov     double precision[] := '{}';
  v_vec_ids    uuid[] := '{}';
  v_vec_sims   double precision[] := '{}';
  v_conf       double precision;
  v_best_cov   double precision;
  v_seeds      uuid[] := '{}';
  v_g_ids      uuid[] := '{}';
  v_g_weight   double precision[] := '{}';
  v_g_via      uuid[] := '{}';
  v_g_edge     text[] := '{}';
  v_types      text[] := coalesce(graph_edge_types, array['related_to', 'supersedes', 'derived_from', 'temporal', 'causal']);
begin
  if match_count is null or match_count < 1 or match_count > 200 then
    raise exception 'match_count must be between 1 and 200, got %', match_count using errcode = '22023';
  end if;
  if search_mode is null or search_mode not in ('hybrid', 'vector', 'keyword') then
    raise exception 'search_mode must be hybrid, vector or keyword, got %', search_mode using errcode = '22023';
  end if;
  if graph_depth is null or graph_depth < 0 or graph_depth > 4 then
    raise exception 'graph_depth must be between 0 and 4, got %', graph_depth using errcode = '22023';
  end if;

  -- Scopes as in match_memories: bases without the trailing '/', each once, none inside another.
  with bases as (
    select distinct rtrim(s, '/') as base
      from unnest(coalesce(match_namespaces, '{}'::text[])) as s
     where s is not null and rtrim(s, '/') <> ''
  )
  select coalesce(array_agg(b.base order by b.base), '{}') into v_bases
    from bases b
   where not exists (select from bases o where o.base <> b.base and (b.base || '/') ^@ (o.base || '/'));
  if cardinality(v_bases) = 0 then
    raise exception 'at least one namespace scope is required' using errcode = '22023';
  end if;
  select array_agg(b || '/') into v_scopes from unnest(v_bases) b;

  -- Settings (one read) and weights.
  select max(s.value) filter (where s.name = 'rrf_k'),
         max(s.value) filter (where s.name = 'keyword_max_terms'),
         max(s.value) filter (where s.name = 'keyword_df_cap'),
         max(s.value) filter (where s.name = 'keyword_min_coverage'),
         max(s.value) filter (where s.name = 'bm25_k1'),
         max(s.value) filter (where s.name = 'bm25_b'),
         max(s.value) filter (where s.name = 'graph_seed_count')
    into v_k, v_max_terms, v_df_cap, v_conf, v_k1, v_b, v_seed_count
    from public.memory_settings s
   where s.name in ('rrf_k', 'keyword_max_terms', 'keyword_df_cap', 'keyword_min_coverage', 'bm25_k1', 'bm25_b',
                    'graph_seed_count');
  v_min_cov := coalesce(keyword_threshold, v_conf);
  select w.keyword, w.vector, w.graph into v_w_kw, v_w_vec, v_w_graph
    from public.memory_search_weights w
   where w.embedding_model in (coalesce(match_embedding_model, '*'), '*')
   order by (w.embedding_model = '*')
   limit 1;
  v_w_kw := coalesce(v_w_kw, 1); v_w_vec := coalesce(v_w_vec, 1); v_w_graph := coalesce(v_w_graph, 0.5);
  if search_mode = 'vector' then v_w_kw := 0; v_w_graph := 0; v_w_recent := 0; end if;
  if search_mode = 'keyword' then v_w_vec := 0; v_w_graph := 0; v_w_recent := 0; end if;
  if graph_depth = 0 then v_w_graph := 0; end if;
  if query_embedding is null or match_embedding_model is null then v_w_vec := 0; end if;
  v_pool := greatest(match_count * 3, 30);
  -- The vector list is only as deep as the answer (at least 20): in a big scope each further
  -- neighbour costs HNSW work under the filters, and a deep vector list adds little to the fusion.
  v_vec_pool := greatest(match_count, 20);

  -- Keyword signal. Each term's matches in scope, counted up to the cap (its document frequency);
  -- rare terms bring their matches in as candidates.
  if v_w_kw > 0 then
    -- The corpus size for idf, at least 1,000: a young tenant's few memories say little about how
    -- common a word is (with 3 memories, a word in one of them would look as common as "the").
    v_n := greatest(public.memory_scope_size(match_owner, v_bases, v_df_cap * 5), 1000);
    select coalesce(array_agg(t.query order by t.ord) filter (where t.kind <> 'exclude'), '{}'),
           coalesce(array_agg(t.query order by t.ord) filter (where t.kind = 'exclude'), '{}')
      into v_terms_all, v_excludes
      from public.memory_keyword_terms(query_text, v_max_terms) with ordinality as t(term, kind, query, ord);
    select string_agg(q::text, ' | ')::tsquery into v_exclude from unnest(v_excludes) q;
    -- Document frequencies (capped) and candidates, through the index (memory_search.keyword_postings).
    select p.term_df, p.candidates into v_dfs, v_cand
      from memory_search.keyword_postings(match_owner, v_scopes, v_terms_all, v_df_cap, v_pool * 2, as_of) p;
    for i in 1 .. coalesce(cardinality(v_terms_all), 0) loop
      v_df := coalesce(v_dfs[i], v_df_cap + 1);
      -- A term no memory has still counts in the best possible score (coverage's denominator):
      -- a memory that matches the common words of a question but not its rare ones is no answer.
      v_idf_total := v_idf_total + ln(1 + (greatest(v_n, v_df) - v_df + 0.5) / (v_df + 0.5));
      continue when v_df = 0;
      v_terms_q := v_terms_q || v_terms_all[i];
      v_terms_idf := v_terms_idf || ln(1 + (greatest(v_n, v_df) - v_df + 0.5) / (v_df + 0.5));
    end loop;

    -- BM25 over the candidates: sum of matched terms' idf, saturated and length-normalised
    -- (memories are a sentence or two, so a term's frequency in one is almost always 1).
    if coalesce(cardinality(v_cand), 0) > 0 and v_idf_total > 0 then
      with cand as (
        select distinct c.id from unnest(v_cand) c(id)
      ),
      matched as (
        select m.id, length(m.fts)::double precision as dl,
               (select coalesce(sum(t.idf), 0)
                  from unnest(v_terms_q, v_terms_idf) as t(q, idf)
                 where m.fts @@ t.q) as idf_sum
          from cand c
          join public.devai_memories m on m.id = c.id
         where m.owner_id = match_owner
           and (as_of is not null or (m.is_valid and m.state = 'active' and m.strength > 0.05))
           and m.source is distinct from 'conversation'
           and (m.namespace || '/') ^@ any (v_scopes)
           and (v_exclude is null or not (m.fts @@ v_exclude))
           and (filter_after is null or m.created_at >= filter_after)
           and (filter_before is null or m.created_at < filter_before)
           and (filter_memory_types is null or m.memory_type = any (filter_memory_types))
           and (filter_categories is null
                or (case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end)
                   = any (filter_categories))
      ),
      scored as (
        select x.id,
               x.idf_sum * (v_k1 + 1)
                 / (1 + v_k1 * (1 - v_b + v_b * x.dl / greatest((select avg(y.dl) from matched y), 1))) as score
          from matched x
      ),
      ranked as (
        select s.id, s.score, least(1, s.score / (v_idf_total * (v_k1 + 1) / (1 + v_k1))) as coverage
          from scored s
         where s.score > 0
         order by s.score desc, s.id
         limit v_pool
      )
      select coalesce(array_agg(r.id order by r.score desc, r.id), '{}'),
             coalesce(array_agg(r.score order by r.score desc, r.id), '{}'),
             coalesce(array_agg(r.coverage order by r.score desc, r.id), '{}')
        into v_kw_ids, v_kw_score, v_kw_cov
        from ranked r;
    end if;
  end if;

  -- Vector signal: match_memories over the same scopes (exact or HNSW by scope size), filtered,
  -- down to half the threshold (companions of an answer, see below).
  if v_w_vec > 0 then
    select coalesce(array_agg(v.id order by v.similarity desc, v.id), '{}'),
           coalesce(array_agg(v.similarity order by v.similarity desc, v.id), '{}')
      into v_vec_ids, v_vec_sims
      from (select mm.id, mm.similarity
              from public.match_memories(
                     query_embedding, v_bases[1],
                     case when filter_after is null and filter_before is null and filter_memory_types is null
                               and filter_categories is null then v_vec_pool else least(v_vec_pool * 4, 200) end,
                     similarity_threshold / 2, match_owner, match_embedding_model, v_bases[2:], as_of) mm
              join public.devai_memories m on m.id = mm.id
             where (filter_after is null or m.created_at >= filter_after)
               and (filter_before is null or m.created_at < filter_before)
               and (filter_memory_types is null or m.memory_type = any (filter_memory_types))
               and (filter_categories is null
                    or (case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end)
                       = any (filter_categories))
             order by mm.similarity desc, mm.id
             limit v_vec_pool) v;
  end if;

  -- Does the query have an answer at all? Only when its best memory reaches a floor: keyword
  -- coverage keyword_threshold, or cosine similarity_threshold. Then memories reaching half those
  -- floors come with it (a multi-part answer's other parts match less of the question).
  v_best_cov := coalesce((select max(c) from unnest(v_kw_cov) c), 0);
  -- The answer to a question of many terms is usually spread over several memories, none
  -- matching most of it: past five terms, the floor is what five of them would need.
  v_min_cov := v_min_cov * least(1, 5.0 / greatest(cardinality(v_terms_all), 1));
  if not ((cardinality(v_kw_ids) > 0 and v_best_cov >= v_min_cov)
          or (cardinality(v_vec_ids) > 0 and v_vec_sims[1] > similarity_threshold)) then
    return;
  end if;
  -- A keyword list whose best match covers little of the query is mostly common words: it counts
  -- less, from nothing at a third of keyword_min_coverage to its full weight at it.
  if search_mode = 'hybrid' and v_conf > 0 then
    v_w_kw := v_w_kw * least(1, greatest(0, (v_best_cov - v_conf / 3) / (v_conf * 2 / 3)));
  end if;

  -- Graph signal: from the best memories that pass on their own, hop over relations.
  if v_w_graph > 0 then
    select coalesce(array_agg(s.id order by s.fused desc, s.id), '{}') into v_seeds
      from (select u.id, sum(u.f) as fused
              from (select k.id, v_w_kw / (v_k + k.ord) as f
                      from unnest(v_kw_ids, v_kw_cov) with ordinality as k(id, cov, ord)
                     where k.cov >= v_min_cov / 2
                    union all
                    select v.id, v_w_vec / (v_k + v.ord)
                      from unnest(v_vec_ids) with ordinality as v(id, ord)) u
             group by u.id
             order by sum(u.f) desc, u.id
             limit v_seed_count) s;
    -- public.memory_graph_neighbours: bounded BFS over typed edges valid then, inside the scopes,
    -- both directions; entity lookup for who/what questions. Raw episodes only when asked for,
    -- at half weight.
    with reached as (
      select n.id, n.via, n.edge_type as edge, n.weight as w
        from public.memory_graph_neighbours(v_seeds, v_types, graph_depth, least(v_pool, 500), as_of, v_bases, 'both') n
      union all
      select e.id, e.entity_id, 'entity', e.weight
        from public.memory_entity_lookup(entity_terms, least(v_pool, 500), as_of, v_bases) e
       where cardinality(coalesce(entity_terms, '{}')) > 0
      union all
      -- One hop through the entities the best hits name (a file, a package, an error code): the
      -- other memories naming them, weighted down by how common the entity is. Entities named by
      -- more than keyword_df_cap memories say little and are not followed.
      select l2.memory_id, l1.memory_id, 'entity',
             0.5 * l1.confidence * l2.confidence / ln(2 + e.mention_count)
        from public.memory_entity_links l1
        join public.memory_entities e on e.id = l1.entity_id and e.mention_count <= v_df_cap
        join public.memory_entity_links l2 on l2.entity_id = l1.entity_id and l2.memory_id <> l1.memory_id
        join public.devai_memories m2 on m2.id = l2.memory_id
       where l1.memory_id = any (v_seeds)
         and public.memory_graph_visible(m2, as_of, v_scopes)
    ),
    best as (
      select distinct on (r.id) r.id, r.via, r.edge,
             r.w * case when m.source = 'conversation' then 0.5 else 1 end as w
        from reached r
        join public.devai_memories m on m.id = r.id
       where not (r.id = any (v_seeds))
         and (graph_episodes or m.source is distinct from 'conversation')
         and (filter_after is null or m.created_at >= filter_after)
         and (filter_before is null or m.created_at < filter_before)
         and (filter_memory_types is null or m.memory_type = any (filter_memory_types))
         and (filter_categories is null
              or (case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end)
                 = any (filter_categories))
       order by r.id, r.w desc, r.via
    ),
    top as (
      select b.* from best b order by b.w desc, b.id limit v_pool
    )
    select coalesce(array_agg(t.id order by t.w desc, t.id), '{}'),
           coalesce(array_agg(t.w order by t.w desc, t.id), '{}'),
           coalesce(array_agg(t.via order by t.w desc, t.id), '{}'),
           coalesce(array_agg(t.edge order by t.w desc, t.id), '{}')
      into v_g_ids, v_g_weight, v_g_via, v_g_edge
      from top t;
  end if;

  -- Fusion: weighted reciprocal ranks, normalised by what a memory ranked first by every signal
  -- that found anything would get (so a query with no keyword hit is not capped by the keyword
  -- weight), times 1.25 for a preferred type (capped at 1). A pinned single-signal mode ranks by
  -- that signal's own score instead.
  return query
  with kw as (
    select k.id, k.ord::integer as rnk, k.score, k.cov
      from unnest(v_kw_ids, v_kw_score, v_kw_cov) with ordinality as k(id, score, cov, ord)
  ),
  vec as (
    select v.id, v.ord::integer as rnk from unnest(v_vec_ids) with ordinality as v(id, ord)
  ),
  gr as (
    select g.id, row_number() over (order by g.w desc, g.id)::integer as rnk, g.via, g.edge
      from unnest(v_g_ids, v_g_weight, v_g_via, v_g_edge) as g(id, w, via, edge)
  ),
  candidates as (
    select u.id from (select kw.id from kw where kw.cov >= v_min_cov / 2
                      union select vec.id from vec
                      union select gr.id from gr) u
  ),
  recent as materialized (
    -- Only when recency counts ('when' questions), and once: not a plan per candidate.
    select c.id, row_number() over (order by m.created_at desc, c.id)::integer as rnk
      from candidates c join public.devai_memories m on m.id = c.id
     where v_w_recent > 0
  ),
  fused as (
    select c.id, kw.rnk as kw_rnk, kw.score as kw_score, kw.cov as kw_cov, vec.rnk as vec_rnk,
           gr.rnk as g_rnk, gr.via as g_via, gr.edge as g_edge,
           (coalesce(v_w_kw / (v_k + kw.rnk), 0) + coalesce(v_w_vec / (v_k + vec.rnk), 0)
             + coalesce(v_w_graph / (v_k + gr.rnk), 0) + coalesce(v_w_recent / (v_k + rc.rnk), 0))
           / ((case when cardinality(v_kw_ids) > 0 then v_w_kw else 0 end
               + case when cardinality(v_vec_ids) > 0 then v_w_vec else 0 end
               + case when cardinality(v_g_ids) > 0 then v_w_graph else 0 end
               + v_w_recent) / (v_k + 1)) as rel
      from candidates c
      left join kw on kw.id = c.id
      left join vec on vec.id = c.id
      left join gr on gr.id = c.id
      left join recent rc on rc.id = c.id
  ),
  final as (
    select f.*, m.strength as m_strength,
           -- A single signal keeps its own score (vector: cosine; keyword: coverage): nothing is fused.
           least(1, case search_mode when 'vector' then coalesce(vs.sim, 0)
                                     when 'keyword' then coalesce(f.kw_cov, 0)
                                     else f.rel end
                    * case when m.memory_type = any (coalesce(prefer_memory_types, '{}')) then 1.25 else 1 end) as relv
      from fused f
      join public.devai_memories m on m.id = f.id
      left join (select v.id, v.sim from unnest(v_vec_ids, v_vec_sims) as v(id, sim)) vs on vs.id = f.id
  ),
  top as (
    select x.* from final x order by x.relv * x.m_strength desc, x.id limit match_count
  )
  select m.id, case when as_of is null then m.content else (select a.content from public.memory_at(m, as_of) a) end,
         m.memory_type, m.namespace, m.strength, m.priority, m.importance, m.pinned,
         m.source, m.metadata, m.session_id, m.access_count, m.last_accessed_at, m.created_at, m.updated_at,
         (select max(r.strength) from public.memory_relations r
           where r.owner_id = m.owner_id and (r.from_id = m.id or r.to_id = m.id)),
         case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end,
         -- Cosine similarity for every returned memory (the vector list has most of them already).
         coalesce((select v.sim from unnest(v_vec_ids, v_vec_sims) as v(id, sim) where v.id = m.id),
                  case when query_embedding is not null and m.embedding is not null
                            and m.embedding_model = match_embedding_model
                       then 1 - (m.embedding operator(extensions.<=>) query_embedding) end),
         t.kw_rnk, t.kw_score, t.kw_cov, t.vec_rnk, t.g_rnk, t.g_via, t.g_edge, t.relv
    from top t
    join public.devai_memories m on m.id = t.id
   order by t.relv * t.m_strength desc, t.id;
end;
$$;

revoke all on function public.hybrid_search(text, extensions.vector, text[], integer, double precision, text, uuid, text,
  integer, text[], timestamptz, timestamptz, text[], text[], text[], double precision, double precision, timestamptz, text[], boolean)
  from public, anon;
grant execute on function public.hybrid_search(text, extensions.vector, text[], integer, double precision, text, uuid, text,
  integer, text[], timestamptz, timestamptz, text[], text[], text[], double precision, double precision, timestamptz, text[], boolean)
  to authenticated, service_role;

-- memory.query on the hybrid search: the agent's allowed categories (intersected with the ones
-- requested) become a filter of every signal; filters on metadata, pinned, importance and update
-- time apply to the candidates; categories with context 'all' bring their memories whatever the
-- query; rag_length caps a category's share. Replaces the vector-only version.
drop function if exists public.query_memories(extensions.vector, text[], text, text[], integer, double precision, text, uuid,
  text, text, text, text, text, boolean, integer, integer, timestamptz, timestamptz, timestamptz);

create or replace function public.query_memories(
  query_text text,
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
  filter_updated_before timestamptz default null,
  search_mode text default 'hybrid',
  graph_depth integer default 1,
  filter_after timestamptz default null,
  filter_before timestamptz default null,
  keyword_threshold double precision default null,
  as_of timestamptz default null
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
  max_relation_strength real,
  keyword_rank integer,
  keyword_score double precision,
  keyword_coverage double precision,
  vector_rank integer,
  graph_rank integer,
  graph_via uuid,
  graph_edge text,
  relevance double precision
)
language plpgsql
stable
security invoker
set search_path = ''
set plan_cache_mode = 'force_custom_plan'
as $$
#variable_conflict use_column
declare
  v_categories text[];
  v_all        text[];
  v_pool       integer;
  v_scopes     text[];
begin
  if match_count is null or match_count < 1 or match_count > 200 then
    raise exception 'match_count must be between 1 and 200, got %', match_count using errcode = '22023';
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
  select coalesce(array_agg(rtrim(s, '/') || '/'), '{}') into v_scopes
    from unnest(coalesce(match_namespaces, '{}'::text[])) as s
   where s is not null and rtrim(s, '/') <> '';
  -- Per-category caps and the filters below apply after the search: look further than match_count.
  v_pool := least(match_count * 4, 200);

  return query
  with found as (
    select h.*
      from public.hybrid_search(
             query_text => query_text, query_embedding => query_embedding, match_namespaces => match_namespaces,
             match_count => v_pool, similarity_threshold => similarity_threshold,
             match_embedding_model => match_embedding_model, match_owner => match_owner, search_mode => search_mode,
             graph_depth => graph_depth, filter_after => filter_after, filter_before => filter_before,
             filter_categories => v_categories, keyword_threshold => keyword_threshold, as_of => as_of) h
  ),
  everything as (
    -- context 'all' categories: their memories regardless of the query (most important first).
    select m.id, 0::double precision as relevance
      from public.devai_memories m
     where cardinality(v_all) > 0
       and m.owner_id = match_owner
       and m.source is distinct from 'conversation'
       and (case when as_of is null then m.is_valid and m.state = 'active' and m.strength > 0.05
                 else m.created_at <= as_of and (select a.held from public.memory_at(m, as_of) a) end)
       and (m.namespace || '/') ^@ any (v_scopes)
       and (case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end) = any (v_all)
       and not exists (select 1 from found f where f.id = m.id)
     order by m.importance desc, m.updated_at desc, m.id
     limit match_count
  ),
  candidates as (
    select f.id, f.relevance, f.similarity, f.keyword_rank, f.keyword_score, f.keyword_coverage, f.vector_rank,
           f.graph_rank, f.graph_via, f.graph_edge
      from found f
    union all
    select e.id, e.relevance, null, null, null, null, null, null, null, null from everything e
  ),
  eligible as (
    select c.*, m.strength as m_strength,
           case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end as cat
      from candidates c
      join public.devai_memories m on m.id = c.id
     where (filter_user_id is null or m.metadata ->> 'user_id' = filter_user_id)
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
  capped as (
    select e.*, cfg.context as cat_context, cfg.rag_length,
           row_number() over (partition by e.cat order by e.relevance * e.m_strength desc, e.id) as rank_in_category
      from eligible e
      join public.memory_categories cfg on cfg.name = e.cat
  ),
  top as (
    select k.* from capped k
     where k.rag_length is null or k.rank_in_category <= k.rag_length
     order by k.relevance * k.m_strength desc, k.id
     limit match_count
  )
  select m.id, case when as_of is null then m.content else (select a.content from public.memory_at(m, as_of) a) end,
         t.similarity, m.memory_type, m.namespace, t.cat, t.cat_context,
         m.strength, m.priority, m.importance, m.pinned, m.source, m.metadata, m.session_id,
         m.access_count, m.last_accessed_at, m.created_at, m.updated_at,
         (select max(r.strength) from public.memory_relations r
           where r.owner_id = m.owner_id and (r.from_id = m.id or r.to_id = m.id)),
         t.keyword_rank, t.keyword_score, t.keyword_coverage, t.vector_rank, t.graph_rank, t.graph_via, t.graph_edge,
         t.relevance
    from top t
    join public.devai_memories m on m.id = t.id
   order by t.relevance * t.m_strength desc, t.id;
end;
$$;

revoke all on function public.query_memories(text, extensions.vector, text[], text, text[], integer, double precision, text, uuid,
  text, text, text, text, text, boolean, integer, integer, timestamptz, timestamptz, text, integer, timestamptz, timestamptz,
  double precision, timestamptz) from public, anon;
grant execute on function public.query_memories(text, extensions.vector, text[], text, text[], integer, double precision, text, uuid,
  text, text, text, text, text, boolean, integer, integer, timestamptz, timestamptz, text, integer, timestamptz, timestamptz,
  double precision, timestamptz) to authenticated, service_role;
