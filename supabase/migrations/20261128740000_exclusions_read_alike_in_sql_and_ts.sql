-- The SQL and TS readers of a query's -exclusions read every input alike (found by review).
-- public.memory_keyword_terms matched blanks with the locale's \s (C.UTF-8: U+2003, U+2028, but
-- not U+00A0) and a word's start with [[:alpha:]] (glibc's: combining marks too), while
-- _shared/search/plan.ts listed six ASCII blanks and \p{L}; and it read phrases in a first pass,
-- then words in the text left, so `-"foo"-bar` left out bar while the embedded text kept it.
-- Both now read the text once, left to right, with the same two patterns written out (blanks:
-- Unicode White_Space; an exclusion may follow another's closing quote directly, so
-- `-"foo"-bar` leaves out both, as websearch_to_tsquery reads it). The rule:
-- docs/retrieval.md#exclusions and _shared/search/exclusions.ts; one table of inputs runs through
-- both readers in tests/exclusions.test.ts. The text is read up to 24,003 characters: retrieval
-- closes a quote its message leaves open before appending project_context (retrievalText).
-- Body otherwise as in 20261128630000.
CREATE OR REPLACE FUNCTION public.memory_keyword_terms(query_text text, max_terms integer DEFAULT 12)
 RETURNS TABLE(term text, kind text, query tsquery)
 LANGUAGE plpgsql
 STABLE PARALLEL SAFE
 SET search_path TO ''
AS $function$
declare
  -- The longest text a search is given: a retrieval's message (20,000 characters), the quote
  -- closing an exclusion it left open, two newlines and its project_context (4,000)
  -- (exclusions.ts retrievalText). Read whole, so an exclusion at the message's end still excludes.
  v_text   text := left(coalesce(query_text, ''), 24003);
  v_seen   text[] := '{}';
  v_count  integer := 0;
  v_part   text;
  v_q      tsquery;
  v_lex    text;
  v_run    text;
  v_piece  text[];
begin
  -- Exclusions first (they are removed from the text before the rest is read), read as
  -- _shared/search/exclusions.ts reads them (the same two patterns; docs/retrieval.md#exclusions):
  -- once, left to right; a `-` at the start, after a blank (Unicode White_Space, listed: not the
  -- locale's \s) or right after an exclusion's closing quote starts one; `-"a phrase"` (a quote
  -- left open runs to the end) or `-word` (a first character that is no blank and no ASCII but a
  -- letter, then up to the next blank or quote).
  for v_run in select m[2] from regexp_matches(v_text, $re$(^|[\u0009-\u000d\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000])((?:-"[^"]*")*-(?:"[^"]*(?:"|$)|[^\u0001-\u0040\u005b-\u0060\u007b-\u007f\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000][^\u0009-\u000d\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"]+))$re$, 'g') as m loop
    for v_piece in select regexp_matches(v_run, $re$-(?:"([^"]*)(?:"|$)|([^\u0001-\u0040\u005b-\u0060\u007b-\u007f\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000][^\u0009-\u000d\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"]+))$re$, 'g') loop
      if v_piece[1] is not null then
        v_q := phraseto_tsquery('english'::regconfig, v_piece[1]); term := v_piece[1];
      else
        v_q := plainto_tsquery('english'::regconfig, v_piece[2]); term := v_piece[2];
      end if;
      if numnode(v_q) > 0 then kind := 'exclude'; query := v_q; return next; end if;
    end loop;
  end loop;
  v_text := regexp_replace(v_text, $re$(^|[\u0009-\u000d\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000])((?:-"[^"]*")*-(?:"[^"]*(?:"|$)|[^\u0001-\u0040\u005b-\u0060\u007b-\u007f\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000][^\u0009-\u000d\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"]+))$re$, ' ', 'g');

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
