-- public.memory_identifier_lexemes tested each token against five patterns, one per identifier
-- shape (20261125100000_search_helpers_plan_once_per_session.sql); the same shapes are now one
-- pattern of alternatives. A token matches the alternation exactly when it matches one of them
-- (the dot and hyphen shapes share a bracket: [.-]), so the lexemes are the same. It runs for
-- every query (public.memory_keyword_terms) and every memory written (the fts trigger): on the
-- bench's 100k contents the old body took 4.46 s and this one 2.37 s, with the same lexemes for
-- all of them; on a retrieval's question, 2,000 calls took 225-271 ms and 87-128 ms
-- (docs/retrieval.md#speed). pgTAP 99_identifier_lexemes_unchanged holds the old outputs of
-- paths, error codes, package names, versions, mixed case and non-ASCII text.

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
       -- Any of: _ @ / $ #; a dot or an inner hyphen between letters or digits (auth.ts,
       -- web-app); a letter-digit mix (TS2345, v18); camelCase.
       and t.tok ~ '[_@/$#]|[A-Za-z0-9][.-][A-Za-z0-9]|[A-Za-z][0-9]|[0-9][A-Za-z]|[a-z][A-Z]');
end;
$_$;
revoke all on function public.memory_identifier_lexemes(text) from public, anon;
grant execute on function public.memory_identifier_lexemes(text) to authenticated, service_role;
