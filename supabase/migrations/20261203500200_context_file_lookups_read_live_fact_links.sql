-- Context assembly finds the memories citing a file by the live facts' links, not every mention.
--
-- memory_search.context_lookups (POST context: the files and directories a turn is about) joined a
-- file entity to all its links and looked every linked memory up before it kept the valid, active
-- facts in scope. An agent that sends every message as an episode names the files it works on in
-- most of them, so a context request read one link and one memory per message that ever named the
-- file: 5,000 episodes naming src/app.ts made one file's lookup read 5,000 links and 5,000
-- memories to find the one fact that cites it, on every turn, growing with the conversation.
--
-- Now each file (and each file of a directory) reads only the links that the partial index
-- memory_entity_links_profile holds as 'fact' (migration 20261128910000: valid, active, not an
-- episode, kept by trigger when the memory changes), and looks each memory up by id. The filters
-- and the answer are unchanged. tests/context_file_lookup_cost.test.ts counts the rows fetched.
-- docs/context.md.

CREATE OR REPLACE FUNCTION memory_search.context_lookups(p_owner uuid, p_scopes text[], p_files text[], p_modules text[], p_branch text, p_categories text[], p_recent_since timestamp with time zone, p_max_per_kind integer, OUT ids uuid[], OUT kinds text[], OUT details text[], OUT weights double precision[]) RETURNS record
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO ''
    SET plan_cache_mode TO 'force_custom_plan'
    AS $$
declare
  v_dir text;
  v_key text;
  v_ids uuid[];
  v_det text[];
  v_w   double precision[];
begin
  ids := '{}'; kinds := '{}'; details := '{}'; weights := '{}';
  if not memory_search.caller_reads_owner(p_owner) then
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
                      -- the links of the live facts that cite it (memory_entity_links_profile), each
                      -- memory looked up by id: not every message that ever named the file
                      join public.memory_entity_links l
                        on l.entity_id = e.id and l.owner_id = p_owner and l.profile_kind = 'fact'
                     cross join lateral (select m.* from public.devai_memories m where m.id = l.memory_id offset 0) m
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
              join public.memory_entity_links l
                on l.entity_id = e.id and l.owner_id = p_owner and l.profile_kind = 'fact'
             cross join lateral (select m.* from public.devai_memories m where m.id = l.memory_id offset 0) m
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
               and m.is_valid and m.state = 'active' and m.strength > 0.05 and m.source is distinct from 'conversation'
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

revoke all on function memory_search.context_lookups(uuid, text[], text[], text[], text, text[], timestamptz, integer) from public, anon;
grant execute on function memory_search.context_lookups(uuid, text[], text[], text[], text, text[], timestamptz, integer) to authenticated, service_role;
