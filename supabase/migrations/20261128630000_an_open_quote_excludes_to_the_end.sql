-- An exclusion whose quote is left open (`-"widget gizmo`) excludes the phrase to the end of the
-- text, as websearch_to_tsquery reads it. public.memory_keyword_terms needed the closing quote,
-- read the rest as two positive words, and the search returned exactly the memories the user
-- tried to leave out (found by an outside attack). _shared/search/plan.ts reads exclusions the
-- same way (the text it embeds). Body otherwise as in 20261128500100.
CREATE OR REPLACE FUNCTION public.memory_keyword_terms(query_text text, max_terms integer DEFAULT 12)
 RETURNS TABLE(term text, kind text, query tsquery)
 LANGUAGE plpgsql
 STABLE PARALLEL SAFE
 SET search_path TO ''
AS $function$
declare
  -- The longest text a search is given: a retrieval's message (20,000 characters), two newlines
  -- and its project_context (4,000). Read whole, so an exclusion at its end still excludes.
  v_text   text := left(coalesce(query_text, ''), 24002);
  v_seen   text[] := '{}';
  v_count  integer := 0;
  v_part   text;
  v_q      tsquery;
  v_lex    text;
begin
  -- Exclusions first (they are removed from the text before the rest is read). A quote left open
  -- runs to the end of the text, as websearch_to_tsquery reads it.
  for v_part in select m[1] from regexp_matches(v_text, '(?:^|\s)-"([^"]*)(?:"|$)', 'g') as m loop
    v_q := phraseto_tsquery('english'::regconfig, v_part);
    if numnode(v_q) > 0 then term := v_part; kind := 'exclude'; query := v_q; return next; end if;
  end loop;
  v_text := regexp_replace(v_text, '(^|\s)-"[^"]*("|$)', ' ', 'g');
  for v_part in select m[1] from regexp_matches(v_text, '(?:^|\s)-([[:alpha:]][^\s"]+)', 'g') as m loop
    v_q := plainto_tsquery('english'::regconfig, v_part);
    if numnode(v_q) > 0 then term := v_part; kind := 'exclude'; query := v_q; return next; end if;
  end loop;
  v_text := regexp_replace(v_text, '(^|\s)-[[:alpha:]][^\s"]+', ' ', 'g');

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
$function$;
