-- A query's empty or stop-word phrases ("" or "the") and exclusions (-"" or -the) each made
-- phraseto_tsquery / plainto_tsquery raise a NOTICE ("text-search query doesn't contain lexemes"),
-- and every NOTICE travels to the client, which drops it (db-pool.ts: onnotice does nothing). A
-- retrieval message of 20,000 quote marks sent 10,000 of them (23 MB from the database, each with
-- its context lines; 262 bytes for words: tests/retrieve_query_notices) and took
-- 270-410 ms of database time, against 35-45 ms for a 20,000-character message of words.
-- The function now runs with client_min_messages = warning: the same terms, no notices sent.
-- (Set on the function, not at connect: PgBouncer refuses unknown startup parameters.)
alter function public.memory_keyword_terms(text, integer) set client_min_messages = warning;
