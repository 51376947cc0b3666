-- match_memories and query_memories read the scopes they are sent in NFC, the one form names are
-- stored in (migration 20261211600000): a direct RPC caller sending 'devai/user/café' in NFD
-- (e + U+0301, as macOS hands folder names over) finds the memories stored under 'café', and never
-- another tenant's under the same name, nor 'cafe'. Before, such a caller found nothing.
begin;
select plan(10);

insert into public.memory_agent_allowlists (agent, category)
values ('nfc-scope-agent', 'profile'), ('nfc-scope-agent', 'goals') on conflict do nothing;
-- Tenant a: two memories in the scope (one in a child namespace), one context-'all' ('profile')
-- memory in it, one in 'cafe' (another name). Tenant b: the same texts and vectors under 'café'.
insert into public.devai_memories (id, owner_id, content, memory_type, namespace, embedding, embedding_model, metadata)
values ('99611000-0000-4000-8000-0000000000a1', '99611000-0000-4000-8000-00000000000a', 'Deploys go through the staging lane',
        'semantic', 'devai/user/café', tests.embedding(array[1, 0]::real[]), 'text-embedding-3-small', '{"category": "goals"}'),
       ('99611000-0000-4000-8000-0000000000a2', '99611000-0000-4000-8000-00000000000a', 'Staging deploys need a tag',
        'semantic', 'devai/user/café/notes', tests.embedding(array[1, 0.1]::real[]), 'text-embedding-3-small', '{"category": "goals"}'),
       ('99611000-0000-4000-8000-0000000000a3', '99611000-0000-4000-8000-00000000000a', 'Prefers short answers',
        'semantic', 'devai/user/café', tests.embedding(array[0, 1]::real[]), 'text-embedding-3-small', '{"category": "profile"}'),
       ('99611000-0000-4000-8000-0000000000a4', '99611000-0000-4000-8000-00000000000a', 'Deploys go through the staging lane',
        'semantic', 'devai/user/cafe', tests.embedding(array[1, 0]::real[]), 'text-embedding-3-small', '{"category": "goals"}'),
       ('99611000-0000-4000-8000-0000000000b1', '99611000-0000-4000-8000-00000000000b', 'Deploys go through the staging lane',
        'semantic', 'devai/user/café', tests.embedding(array[1, 0]::real[]), 'text-embedding-3-small', '{"category": "goals"}'),
       ('99611000-0000-4000-8000-0000000000b3', '99611000-0000-4000-8000-00000000000b', 'Prefers short answers',
        'semantic', 'devai/user/café', tests.embedding(array[0, 1]::real[]), 'text-embedding-3-small', '{"category": "profile"}');

select isnt(normalize('devai/user/café', nfd), 'devai/user/café', 'the NFD spelling is another string');

-- match_memories, each path: the scope compared exactly (small), a walk (the exact limit at 0),
-- as of an instant. Asked for more than the scope holds, at any similarity: the answer is the
-- scope's whole set.
select is((select array_agg(m.id order by m.id)
             from public.match_memories(tests.embedding(array[1, 0]::real[]), normalize('devai/user/café', nfd), 10, -1,
                                        '99611000-0000-4000-8000-00000000000a') m),
          array['99611000-0000-4000-8000-0000000000a1', '99611000-0000-4000-8000-0000000000a2',
                '99611000-0000-4000-8000-0000000000a3']::uuid[],
          'match_memories: a scope in NFD finds its tenant''s memories stored in NFC (exact), none of ''cafe''');
select is((select array_agg(m.id order by m.id)
             from public.match_memories(tests.embedding(array[1, 0]::real[]), null, 10, -1,
                                        '99611000-0000-4000-8000-00000000000a',
                                        match_namespaces => array[normalize('devai/user/café/', nfd)],
                                        as_of => now()) m),
          array['99611000-0000-4000-8000-0000000000a1', '99611000-0000-4000-8000-0000000000a2',
                '99611000-0000-4000-8000-0000000000a3']::uuid[],
          'match_memories as of an instant: a scope list in NFD (trailing /) finds them too');
update public.memory_settings set value = 0 where name in ('exact_scan_max_rows', 'exact_scan_cost_ratio');
select is((select array_agg(m.id order by m.id)
             from public.match_memories(tests.embedding(array[1, 0]::real[]), normalize('devai/user/café', nfd), 10, -1,
                                        '99611000-0000-4000-8000-00000000000a') m),
          array['99611000-0000-4000-8000-0000000000a1', '99611000-0000-4000-8000-0000000000a2',
                '99611000-0000-4000-8000-0000000000a3']::uuid[],
          'match_memories: a scope in NFD past the exact limit (the walk) finds them too');

-- As the tenant (RLS on): its own memories only, even naming the other tenant.
select tests.authenticate_as('99611000-0000-4000-8000-00000000000a');
select is((select array_agg(m.id order by m.id)
             from public.match_memories(tests.embedding(array[1, 0]::real[]), normalize('devai/user/café', nfd), 10, -1) m),
          array['99611000-0000-4000-8000-0000000000a1', '99611000-0000-4000-8000-0000000000a2',
                '99611000-0000-4000-8000-0000000000a3']::uuid[],
          'as the tenant: a scope in NFD finds its own memories');
select is_empty($$select m.id from public.match_memories(tests.embedding(array[1, 0]::real[]), normalize('devai/user/café', nfd), 10, -1,
                                                        '99611000-0000-4000-8000-00000000000b') m$$,
                'as the tenant naming another tenant: none of that tenant''s memories under the same name');

-- query_memories: what the search finds and the context-'all' memories, each read in the scope
-- sent in NFD.
select is((select array_agg(q.id order by q.id)
             from public.query_memories('staging deploys', null, array[normalize('devai/user/café', nfd)], 'nfc-scope-agent',
                                        array['goals'], 10, 0, match_owner => '99611000-0000-4000-8000-00000000000a',
                                        search_mode => 'keyword') q),
          array['99611000-0000-4000-8000-0000000000a1', '99611000-0000-4000-8000-0000000000a2']::uuid[],
          'query_memories: a scope in NFD: the search finds the tenant''s memories stored in NFC');
select is((select array_agg(q.id order by q.id)
             from public.query_memories('zzqqxv', null, array[normalize('devai/user/café', nfd)], 'nfc-scope-agent',
                                        array['profile', 'goals'], 10, 0, match_owner => '99611000-0000-4000-8000-00000000000a',
                                        search_mode => 'keyword') q),
          array['99611000-0000-4000-8000-0000000000a3']::uuid[],
          'query_memories: a scope in NFD: the context-all category''s memory answers a question nothing matches');
select is_empty($$select q.id from public.query_memories('staging deploys', null, array[normalize('devai/user/café', nfd)],
                                                         'nfc-scope-agent', array['profile', 'goals'], 10, 0,
                                                         match_owner => '99611000-0000-4000-8000-00000000000b',
                                                         search_mode => 'keyword') q$$,
                'query_memories as the tenant naming another tenant: none of that tenant''s memories');
select tests.clear_authentication();
select is((select array_agg(q.id order by q.id)
             from public.query_memories('staging deploys', null, array[normalize('devai/user/café', nfd)], 'nfc-scope-agent',
                                        array['profile', 'goals'], 10, 0, match_owner => '99611000-0000-4000-8000-00000000000b',
                                        search_mode => 'keyword') q),
          array['99611000-0000-4000-8000-0000000000b1', '99611000-0000-4000-8000-0000000000b3']::uuid[],
          'the other tenant''s own call finds its own memories under the name, in NFD too');

select * from finish();
rollback;
