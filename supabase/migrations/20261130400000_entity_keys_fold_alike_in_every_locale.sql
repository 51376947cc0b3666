-- Entity keys fold letters alike in every database, whatever its locale (docs/graph.md#entities).
--
-- public.memory_entity_key lower-cased and classified letters with the database's LC_CTYPE. In a
-- database created with the plain C locale that folds ASCII only and drops every other letter:
-- 'Zoë' and 'Zoé' were one entity (key 'zo'), 'JÜRGEN' was 'jrgen', 'Ærø' was 'r', and a name of
-- no ASCII letter ('東京') had no key, so it was never an entity. A UTF-8 locale kept them, by its
-- libc's tables. The key is now computed under pg_c_utf8, Postgres's built-in Unicode collation
-- (Postgres 17 and later, PGlite included; no ICU, no libc): the same key in every database, and the
-- one _shared/entity-rules.ts's entityKey mirrors. The result takes the caller's collation, as
-- before (the database's default for the columns and lookups).

-- The key an entity name is resolved by: NFKC, lower-cased by Unicode's simple case mapping, every
-- character but letters (Unicode Alphabetic), ASCII digits, '+' and '#' removed, so "Node.js",
-- "nodejs" and "NODE-JS" are one entity while "C", "C++" and "C#" stay three, and "Zoë" and "ZOË"
-- are one while "Zoé" is another. Used by the derived columns of memory_entities and by every lookup.
-- plpgsql, as migration 20261125100000 made it: a SQL function with a SET clause is planned again
-- in every statement that calls it (supabase/tests/database/64).
create or replace function public.memory_entity_key(p_name text)
returns text
language plpgsql
immutable
parallel safe
security invoker
set search_path = ''
as $$
begin
  return regexp_replace(lower(normalize(coalesce(p_name, ''), nfkc) collate pg_catalog.pg_c_utf8),
                        '[^[:alnum:]+#]+', '', 'g');
end;
$$;
revoke all on function public.memory_entity_key(text) from public, anon;
grant execute on function public.memory_entity_key(text) to authenticated, service_role;

-- Re-derives the keys of entities stored under an earlier key function (called below, and by
-- supabase/tests/database/99_entity_keys_fold_alike_in_every_locale). Entities of one tenant whose
-- names now have one key become one: the one seen first keeps its id and takes the others' links
-- (a memory linked to both keeps one link), their names as aliases (at most 20, one per key), their
-- mention counts, first and last seen times, and summary and attributes where it has none; the
-- others are deleted. Returns how many entities were merged away and how many were re-keyed. Runs
-- as the table owner (the migration): RLS does not apply, every tenant is done.
create or replace function memory_private.rekey_entities(out merged integer, out rekeyed integer)
language plpgsql
set search_path = ''
as $$
declare
  g record;
  v_drops uuid[];
  v_keep uuid;
  v_dropped jsonb;
  v_round integer;
  v_done integer;
begin
  merged := 0;
  rekeyed := 0;
  for g in
    select e.owner_id, array_agg(e.id order by e.first_seen_at, e.created_at, e.id) as ids
      from public.memory_entities e
     group by e.owner_id, public.memory_entity_key(e.canonical_name)
    having count(*) > 1
  loop
    v_keep := g.ids[1];
    v_drops := g.ids[2:];
    insert into public.memory_entity_links (owner_id, memory_id, entity_id, mention, confidence, source, created_at)
    select distinct on (l.memory_id) l.owner_id, l.memory_id, v_keep, l.mention, l.confidence, l.source, l.created_at
      from public.memory_entity_links l
     where l.entity_id = any (v_drops)
     order by l.memory_id, l.created_at, l.entity_id
    on conflict (memory_id, entity_id) do nothing;
    -- What the merged-away entities add, read before they are deleted (their links go with them).
    select jsonb_agg(jsonb_build_object(
             'canonical_name', d.canonical_name, 'aliases', to_jsonb(d.aliases), 'mention_count', d.mention_count,
             'first_seen_at', d.first_seen_at, 'last_seen_at', d.last_seen_at, 'summary', d.summary,
             'attributes', d.attributes, 'ord', array_position(v_drops, d.id)))
      into v_dropped
      from public.memory_entities d where d.id = any (v_drops);
    delete from public.memory_entities where id = any (v_drops);
    with dropped as (
      select * from jsonb_to_recordset(v_dropped) as d(canonical_name text, aliases text[], mention_count integer,
        first_seen_at timestamptz, last_seen_at timestamptz, summary text, attributes jsonb, ord integer)
    )
    update public.memory_entities k
       set aliases = (coalesce((
             select array_agg(a.name order by a.ord)
               from (select distinct on (public.memory_entity_key(n.name)) n.name, n.ord
                       from (select x.name, x.ord
                               from unnest(k.aliases) with ordinality as x(name, ord)
                             union all
                             select d.canonical_name, 1000 * d.ord from dropped d
                             union all
                             select y.name, 1000 * d.ord + y.ord
                               from dropped d, unnest(d.aliases) with ordinality as y(name, ord)) n
                      where public.memory_entity_key(n.name) not in ('', public.memory_entity_key(k.canonical_name))
                      order by public.memory_entity_key(n.name), n.ord) a), '{}'::text[]))[1:20],
           mention_count = k.mention_count + (select sum(d.mention_count) from dropped d),
           first_seen_at = least(k.first_seen_at, (select min(d.first_seen_at) from dropped d)),
           last_seen_at = greatest(k.last_seen_at, (select max(d.last_seen_at) from dropped d)),
           summary = coalesce(k.summary, (select d.summary from dropped d
                                           where d.summary is not null order by d.ord limit 1)),
           attributes = coalesce((select jsonb_object_agg(a.key, a.value)
                                    from (select distinct on (j.key) j.key, j.value
                                            from dropped d, jsonb_each(d.attributes) j
                                           order by j.key, d.ord) a), '{}'::jsonb) || k.attributes
     where k.id = v_keep;
    merged := merged + cardinality(v_drops);
  end loop;

  -- Keys and alias keys re-derived (the derive trigger fires on normalized_name; updated_at does not
  -- move: what the entity is has not changed). All at once; should one's new key be another's old
  -- one, not re-derived yet, row by row in rounds until none is left.
  begin
    update public.memory_entities e set normalized_name = e.normalized_name
     where e.normalized_name is distinct from public.memory_entity_key(e.canonical_name)
        or e.alias_keys is distinct from public.memory_entity_alias_keys(e.owner_id, e.aliases);
    get diagnostics v_done = row_count;
    rekeyed := v_done;
  exception when unique_violation then
    for v_round in 1..100 loop
      v_done := 0;
      for g in
        select e.id from public.memory_entities e
         where e.normalized_name is distinct from public.memory_entity_key(e.canonical_name)
            or e.alias_keys is distinct from public.memory_entity_alias_keys(e.owner_id, e.aliases)
      loop
        begin
          update public.memory_entities e set normalized_name = e.normalized_name where e.id = g.id;
          v_done := v_done + 1;
        exception when unique_violation then
          null; -- its new key is still another entity's old one: the next round
        end;
      end loop;
      rekeyed := rekeyed + v_done;
      exit when v_done = 0;
    end loop;
    if exists (select 1 from public.memory_entities e
                where e.normalized_name is distinct from public.memory_entity_key(e.canonical_name)) then
      raise exception 'memory_entities: keys that cannot be re-derived (a cycle of names)';
    end if;
  end;
end;
$$;
revoke all on function memory_private.rekey_entities() from public, anon, authenticated, service_role;

set local lock_timeout = '5s';
select merged, rekeyed from memory_private.rekey_entities();
