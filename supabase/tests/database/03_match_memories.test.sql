-- match_memories: the seed's search made safe for many tenants. Every rule retrieval relies on:
-- threshold, scope by namespace (wildcard-safe), strength cut-off, validity, embedding model,
-- ordering, limit, tenant, argument checks. The query is the first axis; a row stored at
-- array[s, sqrt(1 - s^2)] has cosine similarity s with it.
begin;
select plan(27);

create temp table fixture (owner text, content text, namespace text, sim real, extra jsonb default '{}') on commit drop;
insert into fixture (owner, content, namespace, sim, extra) values
  -- scoping (all close to the query)
  ('a', 'tf',        'devai/project/task_forge',      0.9, '{}'),
  ('a', 'tf-sub',    'devai/project/task_forge/api',  0.9, '{}'),
  ('a', 'taskx',     'devai/project/taskxforge',      0.9, '{}'),
  ('a', 'tf2',       'devai/project/task_forge2',     0.9, '{}'),
  ('a', 'pct',       'devai/project/100%_done',       0.9, '{}'),
  ('a', 'xx',        'devai/project/100xxdone',       0.9, '{}'),
  ('a', 'global',    'devai/global',                  0.9, '{}'),
  ('a', 'globalish', 'devai/globalish',               0.9, '{}'),
  ('a', 'user',      'devai/user',                    0.9, '{}'),
  -- filters
  ('a', 'strong',    'devai/project/filters',         0.95, '{}'),
  ('a', 'weak05',    'devai/project/filters',         0.95, '{"strength": 0.05}'),
  ('a', 'weak06',    'devai/project/filters',         0.95, '{"strength": 0.06}'),
  ('a', 'invalid',   'devai/project/filters',         0.95, '{"is_valid": false}'),
  ('a', 'soft',      'devai/project/filters',         0.95, '{"state": "soft_deleted"}'),
  ('a', 'othermodel','devai/project/filters',         0.95, '{"embedding_model": "nomic-embed-text"}'),
  ('a', 'below',     'devai/project/filters',         0.5,  '{}'),
  -- ordering, limit and threshold (inserted out of order)
  ('a', 'o80',       'devai/project/order',           0.8,  '{}'),
  ('a', 'o99',       'devai/project/order',           0.99, '{}'),
  ('a', 'o75',       'devai/project/order',           0.75, '{}'),
  ('a', 'o90',       'devai/project/order',           0.9,  '{}'),
  -- tenant B, closer to the query than anything of A's
  ('b', 'b-tf',      'devai/project/task_forge',      0.99, '{}'),
  ('b', 'b-o',       'devai/project/order',           0.999, '{}');

insert into public.devai_memories
  (owner_id, content, memory_type, namespace, embedding, embedding_model, strength, is_valid, state, purge_at)
select case f.owner when 'a' then '30000000-0000-4000-8000-00000000000a'::uuid
                    else '30000000-0000-4000-8000-00000000000b'::uuid end,
       f.content, 'semantic', f.namespace,
       tests.embedding(array[f.sim, sqrt(1 - f.sim * f.sim)]::real[]),
       coalesce(f.extra ->> 'embedding_model', 'text-embedding-3-small'),
       coalesce((f.extra ->> 'strength')::double precision, 1.0),
       coalesce((f.extra ->> 'is_valid')::boolean, true),
       coalesce(f.extra ->> 'state', 'active'),
       case when f.extra ->> 'state' = 'soft_deleted' then now() + interval '30 days' end
  from fixture f;
-- A memory without an embedding yet (embedding job pending) is never a match.
insert into public.devai_memories (owner_id, content, memory_type, namespace)
values ('30000000-0000-4000-8000-00000000000a', 'noembed', 'semantic', 'devai/project/filters');

select tests.authenticate_as('30000000-0000-4000-8000-00000000000a');

-- Scoping: by path segment, never by LIKE.
select set_eq($$select content from public.match_memories(tests.embedding('{1}'), 'devai/project/task_forge')$$,
              array['tf', 'tf-sub'],
              'project task_forge sees itself and its sub-namespaces, not taskxforge nor task_forge2');
select set_eq($$select content from public.match_memories(tests.embedding('{1}'), 'devai/project/task_forge/')$$,
              array['tf', 'tf-sub'], 'a trailing slash in the scope changes nothing');
select set_eq($$select content from public.match_memories(tests.embedding('{1}'), 'devai/project/100%_done')$$,
              array['pct'], 'project 100%_done does not see 100xxdone');
select is_empty($$select from public.match_memories(tests.embedding('{1}'), 'devai/project/%')$$,
                'a % in the scope is a literal character, not a wildcard');
select is_empty($$select from public.match_memories(tests.embedding('{1}'), 'devai/project/task_')$$,
                'a _ in the scope is a literal character, and a scope matches whole segments only');
select set_eq($$select content from public.match_memories(tests.embedding('{1}'), 'devai/global')$$,
              array['global'], 'scope devai/global does not see devai/globalish');
select set_eq($$select content from public.match_memories(tests.embedding('{1}'), 'devai/project/task_forge',
                                                           match_namespaces => array['devai/global', 'devai/user'])$$,
              array['tf', 'tf-sub', 'global', 'user'],
              'match_namespaces adds the global and user scopes to the project scope in one search');

-- Filters.
select set_eq($$select content from public.match_memories(tests.embedding('{1}'), 'devai/project/filters')$$,
              array['strong', 'weak06'],
              'only valid, active memories of the same model with strength > 0.05 and similarity above 0.7 match');
select ok(not exists(select from public.match_memories(tests.embedding('{1}'), 'devai/project/filters') where content = 'weak05'),
          'strength 0.05 is excluded');
select ok(exists(select from public.match_memories(tests.embedding('{1}'), 'devai/project/filters') where content = 'weak06'),
          'strength 0.06 is included');
select ok(not exists(select from public.match_memories(tests.embedding('{1}'), 'devai/project/filters') where content = 'invalid'),
          'invalid memories are excluded');
select ok(not exists(select from public.match_memories(tests.embedding('{1}'), 'devai/project/filters') where content = 'soft'),
          'soft-deleted memories are excluded');
select ok(not exists(select from public.match_memories(tests.embedding('{1}'), 'devai/project/filters') where content = 'othermodel'),
          'vectors of another embedding model are excluded');
select set_eq($$select content from public.match_memories(tests.embedding('{1}'), 'devai/project/filters',
                                                           match_embedding_model => 'nomic-embed-text')$$,
              array['othermodel'], 'naming the other model finds only its vectors');

-- Ordering, limit, threshold.
select results_eq($$select content from public.match_memories(tests.embedding('{1}'), 'devai/project/order')$$,
                  array['o99', 'o90', 'o80', 'o75'], 'results come by similarity, highest first');
select results_eq($$select round(similarity::numeric, 3) from public.match_memories(tests.embedding('{1}'), 'devai/project/order')$$,
                  array[0.990, 0.900, 0.800, 0.750], 'similarity is 1 - cosine distance');
select results_eq($$select content from public.match_memories(tests.embedding('{1}'), 'devai/project/order', match_count => 2)$$,
                  array['o99', 'o90'], 'match_count limits the result to the nearest rows');
select results_eq($$select content from public.match_memories(tests.embedding('{1}'), 'devai/project/order',
                      similarity_threshold => (select 1 - (embedding operator(extensions.<=>) tests.embedding('{1}'))
                                                 from public.devai_memories where content = 'o80'))$$,
                  array['o99', 'o90'], 'a row whose similarity equals the threshold is excluded (strictly above)');
select results_eq($$select content from public.match_memories(tests.embedding('{1}'), 'devai/project/order',
                      similarity_threshold => (select 1 - (embedding operator(extensions.<=>) tests.embedding('{1}'))
                                                 from public.devai_memories where content = 'o80') - 1e-9)$$,
                  array['o99', 'o90', 'o80'], 'a row just above the threshold is included');
select is_empty($$select from public.match_memories(tests.embedding('{1}'), 'devai/project/filters', similarity_threshold => 0.96)$$,
                'nothing above a threshold no row reaches');

-- Tenants: RLS decides, whatever match_owner says.
select ok(not exists(select from public.match_memories(tests.embedding('{1}'), 'devai/project/order') where content like 'b-%'),
          'authenticated A never gets B''s memories by default, even when they are nearer');
select is_empty($$select from public.match_memories(tests.embedding('{1}'), 'devai/project/task_forge',
                                                    match_owner => '30000000-0000-4000-8000-00000000000b')$$,
                'authenticated A naming tenant B as match_owner gets nothing');
select tests.as_service_role();
select set_eq($$select content from public.match_memories(tests.embedding('{1}'), 'devai/project/task_forge',
                                                          match_owner => '30000000-0000-4000-8000-00000000000b')$$,
              array['b-tf'], 'the service role names the tenant and gets only that tenant''s memories');

-- Arguments.
select tests.authenticate_as('30000000-0000-4000-8000-00000000000a');
select throws_ok($$select * from public.match_memories(tests.embedding('{1}'), 'devai/global', match_count => 0)$$,
                 '22023', 'match_count must be between 1 and 200, got 0', 'match_count 0 is rejected');
select throws_ok($$select * from public.match_memories(tests.embedding('{1}'), 'devai/global', match_count => 201)$$,
                 '22023', 'match_count must be between 1 and 200, got 201', 'match_count above 200 is rejected');
select throws_ok($$select * from public.match_memories(tests.embedding('{1}'), '/')$$,
                 '22023', 'at least one namespace scope is required', 'a search without any scope is rejected');

select tests.as_anon();
select throws_ok($$select * from public.match_memories(tests.embedding('{1}'), 'devai/global')$$,
                 '42501', 'permission denied for function match_memories', 'anon cannot execute match_memories');

select * from finish();
rollback;
