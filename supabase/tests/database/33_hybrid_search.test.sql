-- hybrid_search: the scope rules hold for every signal (keyword, vector, graph): tenant, '/'-bounded
-- namespace prefixes (task_forge never matches taskxforge, by keyword either), validity, state,
-- strength, embedding model; keyword queries never raise, whatever the text; exclusions, phrases
-- and identifiers; the fusion's explainable columns; and memory_keyword_terms.
begin;
select plan(37);

create temp table fixture (owner text, content text, namespace text, sim real, extra jsonb default '{}') on commit drop;
insert into fixture (owner, content, namespace, sim, extra) values
  ('a', 'The web build fails with ERR_MODULE_NOT_FOUND when src/lib/auth.ts imports lodash.', 'devai/project/task_forge', 0.1, '{}'),
  ('a', 'The team deploys with blue-green releases every Friday afternoon.',                  'devai/project/task_forge', 0.1, '{}'),
  ('a', 'Run pnpm test --filter web before merging a pull request.',                          'devai/project/task_forge', 0.1, '{}'),
  ('a', 'Green builds are required before a release goes out.',                                'devai/project/task_forge', 0.1, '{}'),
  ('a', 'Lookalike project: ERR_MODULE_NOT_FOUND also happened in taskxforge auth.',          'devai/project/taskxforge', 0.99, '{}'),
  ('a', 'Sibling project: ERR_MODULE_NOT_FOUND in task_forge2 auth.',                          'devai/project/task_forge2', 0.99, '{}'),
  ('a', 'Invalid: ERR_MODULE_NOT_FOUND was caused by a stale lockfile.',                       'devai/project/task_forge', 0.99, '{"is_valid": false}'),
  ('a', 'Forgotten: ERR_MODULE_NOT_FOUND was caused by the bundler.',                          'devai/project/task_forge', 0.99, '{"state": "soft_deleted"}'),
  ('a', 'Weak: ERR_MODULE_NOT_FOUND appears with an old Node version.',                        'devai/project/task_forge', 0.99, '{"strength": 0.05}'),
  ('a', 'Vector neighbour without shared words: configuration of sockets.',                   'devai/project/task_forge', 0.95, '{}'),
  ('a', 'Other model: a close vector of another embedding model.',                             'devai/project/task_forge', 0.99, '{"embedding_model": "other-model"}'),
  ('a', 'The user prefers tabs over spaces in Go code.',                                       'devai/user/preferences',   0.1, '{}'),
  ('a', 'An error about a module not being found usually means a missing export.',            'devai/global',             0.1, '{}'),
  ('b', 'Tenant B: ERR_MODULE_NOT_FOUND when src/lib/auth.ts imports lodash.',                 'devai/project/task_forge', 0.999, '{}');

insert into public.devai_memories
  (owner_id, content, memory_type, namespace, embedding, embedding_model, strength, is_valid, state, purge_at)
select case f.owner when 'a' then '33000000-0000-4000-8000-00000000000a'::uuid
                    else '33000000-0000-4000-8000-00000000000b'::uuid end,
       f.content, 'semantic', f.namespace,
       tests.embedding(array[f.sim, sqrt(1 - f.sim * f.sim)]::real[]),
       coalesce(f.extra ->> 'embedding_model', 'm'),
       coalesce((f.extra ->> 'strength')::double precision, 1.0),
       coalesce((f.extra ->> 'is_valid')::boolean, true),
       coalesce(f.extra ->> 'state', 'active'),
       case when f.extra ->> 'state' = 'soft_deleted' then now() + interval '30 days' end
  from fixture f;

-- Graph: the release memory links to a memory in another project (must never be followed out of
-- scope) and to the 'Green builds' one (in scope).
insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength)
select '33000000-0000-4000-8000-00000000000a', a.id, b.id, 'related_to', 0.9
  from public.devai_memories a, public.devai_memories b
 where a.content like 'The team deploys%' and b.content like 'Lookalike project%';
insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength)
select '33000000-0000-4000-8000-00000000000a', a.id, b.id, 'related_to', 0.8
  from public.devai_memories a, public.devai_memories b
 where a.content like 'The team deploys%' and b.content like 'Green builds%';

select tests.authenticate_as('33000000-0000-4000-8000-00000000000a');

create temp view scopes as select array['devai/global', 'devai/project/task_forge', 'devai/user'] as s;
grant select on scopes to authenticated;

-- Keyword signal: scope rules.
select set_eq(
  $$select left(content, 20) from public.hybrid_search('ERR_MODULE_NOT_FOUND lodash', null, (select s from scopes), 20, 0.7, null,
                                                      keyword_threshold => 0.9)$$,
  array['The web build fails '],
  'keyword: only the valid, active, strong memory of this tenant and project (not taskxforge, task_forge2, tenant B, invalid, forgotten or weak ones)');
select is_empty(
  $$select 1 from public.hybrid_search('ERR_MODULE_NOT_FOUND', null, array['devai/project/taskforge'], 20, 0.7, null)$$,
  'keyword: task_forge''s words never match from a scope that only looks like it');
select set_eq(
  $$select left(content, 20) from public.hybrid_search('ERR_MODULE_NOT_FOUND', null, array['devai/project/taskxforge'], 20, 0.7, null)$$,
  array['Lookalike project: E'], 'keyword: taskxforge finds its own memory only');
select is_empty(
  $$select 1 from public.hybrid_search('ERR_MODULE_NOT_FOUND lodash', null, (select s from scopes), 20, 0.7, null,
                                       '33000000-0000-4000-8000-00000000000b')$$,
  'keyword: naming another tenant as match_owner returns nothing (RLS)');

-- Vector signal: scope rules (tenant B's 0.999 and the lookalike projects' 0.99 are never seen).
select set_eq(
  $$select left(content, 20) from public.hybrid_search('zzz', tests.embedding('{1}'), (select s from scopes), 20, 0.5, 'm', search_mode => 'vector')$$,
  array['Vector neighbour wit'],
  'vector: only this tenant''s valid, active, strong memories of this model in scope above the threshold');
select is_empty(
  $$select 1 from public.hybrid_search('zzz', tests.embedding('{1}'), array['devai/project/taskforge'], 20, 0.5, 'm')$$,
  'vector: nothing from a lookalike scope');

-- Graph signal: followed from a hit, never out of scope.
select set_eq(
  $$select left(content, 20) from public.hybrid_search('deploys Friday afternoon', null, (select s from scopes), 20, 0.7, null, graph_depth => 1)$$,
  array['The team deploys wit', 'Green builds are req'],
  'graph: the linked memory in scope comes in, the linked one in taskxforge does not');
select is(
  (select graph_via from public.hybrid_search('deploys Friday afternoon', null, (select s from scopes), 20, 0.7, null, graph_depth => 1)
    where content like 'Green builds%'),
  (select id from public.devai_memories where content like 'The team deploys%'),
  'graph: graph_via names the memory it was reached from');
select is(
  (select graph_edge from public.hybrid_search('deploys Friday afternoon', null, (select s from scopes), 20, 0.7, null, graph_depth => 1)
    where content like 'Green builds%'),
  'related_to', 'graph: graph_edge names the relation type');
select is_empty(
  $$select 1 from public.hybrid_search('deploys Friday afternoon', null, (select s from scopes), 20, 0.7, null, graph_depth => 0)
     where content like 'Green builds%'$$,
  'graph_depth 0: no graph signal');

-- Keyword syntax: any informative term may match; exclusions, phrases, identifiers.
select set_eq(
  $$select left(content, 20) from public.hybrid_search('releases on Friday', null, (select s from scopes), 20, 0.7, null, graph_depth => 0)$$,
  array['The team deploys wit', 'Green builds are req'],
  'OR semantics: memories matching some of the informative words are found');
select set_eq(
  $$select left(content, 20) from public.hybrid_search('releases -Friday', null, (select s from scopes), 20, 0.7, null, graph_depth => 0)$$,
  array['Green builds are req'], '-word excludes memories containing it');
select set_eq(
  $$select left(content, 20) from public.hybrid_search('"pull request"', null, (select s from scopes), 20, 0.7, null, graph_depth => 0)$$,
  array['Run pnpm test --filt'], 'a quoted phrase matches');
select is_empty(
  $$select 1 from public.hybrid_search('"request pull"', null, (select s from scopes), 20, 0.7, null, graph_depth => 0)$$,
  'a quoted phrase matches only in order');
select set_eq(
  $$select left(content, 20) from public.hybrid_search('src/lib/auth.ts', null, (select s from scopes), 20, 0.7, null)$$,
  array['The web build fails '], 'a file path matches exactly');
select results_eq(
  $$select left(content, 20) from public.hybrid_search('what is ERR_MODULE_NOT_FOUND', null, (select s from scopes), 20, 0.3, null)$$,
  array['The web build fails ', 'An error about a mod'],
  'the exact identifier ranks above a memory sharing only its words');
select ok(
  (select keyword_rank = 1 and keyword_coverage > 0.5
     from public.hybrid_search('ERR_MODULE_NOT_FOUND', null, (select s from scopes), 20, 0.7, null)
    where content like 'The web build%'),
  'keyword_rank and keyword_coverage explain the keyword hit');

-- Text that is no query at all still answers (vector signal only), never raises.
select set_eq(
  $$select left(content, 20) from public.hybrid_search('the of and ??? -- " '' \ & | ! : * ( )', tests.embedding('{1}'), (select s from scopes), 20, 0.5, 'm')$$,
  array['Vector neighbour wit'], 'stop words and tsquery punctuation: no keyword signal, the vector still answers');
select lives_ok(
  $$select * from public.hybrid_search(repeat('a&b|!c:* "x ', 2000), null, (select s from scopes), 20, 0.7, null)$$,
  'any text is a safe keyword query');
select is_empty(
  $$select 1 from public.hybrid_search('', null, (select s from scopes), 20, 0.7, null)$$,
  'empty text without a vector finds nothing');

-- Modes and fusion.
select ok(
  (select bool_and(vector_rank is null and keyword_rank is not null)
     from public.hybrid_search('ERR_MODULE_NOT_FOUND', tests.embedding('{1}'), (select s from scopes), 20, 0.5, 'm', search_mode => 'keyword')),
  'keyword mode: no vector signal');
select ok(
  (select bool_and(keyword_rank is null)
     from public.hybrid_search('ERR_MODULE_NOT_FOUND', tests.embedding('{1}'), (select s from scopes), 20, 0.5, 'm', search_mode => 'vector')),
  'vector mode: no keyword signal');
select ok(
  (select bool_and(relevance > 0 and relevance <= 1)
     from public.hybrid_search('ERR_MODULE_NOT_FOUND sockets configuration', tests.embedding('{1}'), (select s from scopes), 20, 0.5, 'm')),
  'hybrid relevance is in (0, 1]');
select set_eq(
  $$select left(content, 20) from public.hybrid_search('ERR_MODULE_NOT_FOUND in src/lib/auth.ts', tests.embedding('{1}'), (select s from scopes), 20, 0.5, 'm',
                                                      keyword_threshold => 0.9)$$,
  array['The web build fails ', 'Vector neighbour wit'],
  'hybrid: the keyword hit and the vector hit, each found by its own signal');

-- Filters apply to every signal.
select is_empty(
  $$select 1 from public.hybrid_search('ERR_MODULE_NOT_FOUND', tests.embedding('{1}'), (select s from scopes), 20, 0.5, 'm',
                                       filter_after => now() + interval '1 day')$$,
  'a time window after every memory excludes them all');
select is_empty(
  $$select 1 from public.hybrid_search('ERR_MODULE_NOT_FOUND', tests.embedding('{1}'), (select s from scopes), 20, 0.5, 'm',
                                       filter_memory_types => array['procedural'])$$,
  'a memory type filter applies to keyword and vector hits');

-- Argument checks.
select throws_ok($$select * from public.hybrid_search('x', null, array['devai'], 0)$$, '22023', null, 'match_count below 1 is rejected');
select throws_ok($$select * from public.hybrid_search('x', null, array['devai'], 5, 0.7, null, search_mode => 'fuzzy')$$, '22023', null, 'an unknown mode is rejected');
select throws_ok($$select * from public.hybrid_search('x', null, array[]::text[], 5)$$, '22023', null, 'at least one scope is required');

-- The index lookups behind the keyword signal: the caller's own tenant only, never anon.
select is(
  (select term_df from memory_search.keyword_postings('33000000-0000-4000-8000-00000000000a',
     array['devai/project/task_forge/'], array['''err_module_not_found'''::tsquery, '''zzz'''::tsquery], 50, 100)),
  array[2, 0], 'keyword_postings: document frequency per term: in scope, valid and active (the invalid, forgotten and other-scope ones do not count)');
select is(
  (select cardinality(candidates) from memory_search.keyword_postings('33000000-0000-4000-8000-00000000000b',
     array['devai/project/task_forge/'], array['''err_module_not_found'''::tsquery], 50, 100)),
  0, 'keyword_postings: another tenant''s owner id finds nothing');
select is(
  (select term_df from memory_search.keyword_postings('33000000-0000-4000-8000-00000000000a',
     array['devai/project/task_forge/'], array['''err_module_not_found'''::tsquery, '''team'''::tsquery], 0, 100)),
  array[1, 1], 'keyword_postings: counts stop at the cap plus one');
-- fts_scoped keys a memory's lexemes by its tenant and scope: a scope's lookup reads only it.
select throws_ok(
  $$select memory_private.keyword_scope_key('33000000-0000-4000-8000-00000000000b', 'devai/project/task_forge')$$,
  '42501', null, 'a tenant cannot compute another tenant''s scope keys (memory_private is not theirs)');
select tests.clear_authentication();
select is(
  (select count(*)::int from public.devai_memories m
    where m.fts_scoped @@ memory_search.scoped_query('''err_module_not_found'''::tsquery,
            array[memory_private.keyword_scope_key('33000000-0000-4000-8000-00000000000a', 'devai/project/task_forge')])),
  4, 'fts_scoped: the task_forge key of tenant A finds its 4 memories naming the code (valid or not), not taskxforge, task_forge2 or tenant B');
select is(
  (select term_df from memory_search.keyword_postings('33000000-0000-4000-8000-00000000000a',
     array['devai/project/'], array['''err_module_not_found'''::tsquery], 50, 100)),
  array[4], 'a scope above the project scopes (devai/project/) is searched by scanning: every project of the tenant (task_forge twice, taskxforge, task_forge2)');
select tests.authenticate_as('33000000-0000-4000-8000-00000000000a');
select tests.as_anon();
select throws_ok(
  $$select * from memory_search.keyword_postings('33000000-0000-4000-8000-00000000000a', array['devai/'], array['''x'''::tsquery], 50, 100)$$,
  '42501', null, 'anon cannot call keyword_postings');
select tests.authenticate_as('33000000-0000-4000-8000-00000000000a');

-- The query's terms, for explanation and debugging.
select results_eq(
  $$select kind, term from public.memory_keyword_terms('fix ERR_X in "auth module" -lodash, the of')$$,
  $$values ('exclude', 'lodash,'), ('phrase', 'auth module'), ('identifier', 'err_x'), ('word', 'fix'), ('word', 'err'), ('word', 'x')$$,
  'memory_keyword_terms: exclusions, phrases, identifiers, then words in query order');

select * from finish();
rollback;
