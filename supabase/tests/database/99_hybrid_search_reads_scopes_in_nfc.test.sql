-- hybrid_search reads the scopes it is given in NFC, the form every stored namespace has
-- (migration 20261210400000): a caller that sends a namespace typed on macOS (NFD: `é` as
-- e + U+0301) finds the memories of that scope by the keyword and by the vector signal, as one
-- that sends it in NFC does, and still never another tenant's memory of the same scope name.
-- Migration 20261211000000.
begin;
select plan(7);

insert into public.devai_memories
  (id, owner_id, content, memory_type, namespace, embedding, embedding_model, strength)
values
  ('99b00000-0000-4000-8000-0000000000a1', '99b00000-0000-4000-8000-00000000000c',
   'The brioche oven of the bakery service runs at 180 degrees.', 'semantic', normalize('devai/project/café', nfc),
   tests.embedding(array[1, 0]::real[]), 'local-hash-512-v1', 1.0),
  -- The same scope name and text, another tenant.
  ('99b00000-0000-4000-8000-0000000000a2', '99b00000-0000-4000-8000-00000000000d',
   'The brioche oven of the bakery service runs at 180 degrees.', 'semantic', normalize('devai/project/café', nfc),
   tests.embedding(array[1, 0]::real[]), 'local-hash-512-v1', 1.0);

select tests.authenticate_as('99b00000-0000-4000-8000-00000000000c');

select isnt(normalize('devai/project/café', nfd), normalize('devai/project/café', nfc),
            'the two forms of the scope are two strings');

create temp table answer on commit drop as
select c.form, c.mode, h.id
  from (values ('nfd', 'keyword'), ('nfd', 'vector'), ('nfd', 'hybrid'), ('nfd/', 'hybrid'), ('nfc', 'hybrid')) as c(form, mode),
       lateral public.hybrid_search(
         'brioche oven temperature', tests.embedding(array[1, 0]::real[]),
         array[case c.form when 'nfd' then normalize('devai/project/café', nfd)
                           when 'nfd/' then normalize('devai/project/café/', nfd)
                           else normalize('devai/project/café', nfc) end],
         10, 0.1, 'local-hash-512-v1', search_mode => c.mode, graph_depth => 0) as h;

select results_eq($$select id from answer where form = 'nfd' and mode = 'keyword'$$,
                  $$values ('99b00000-0000-4000-8000-0000000000a1'::uuid)$$,
                  'the keyword signal finds the NFC-stored memory from the scope sent in NFD');
select results_eq($$select id from answer where form = 'nfd' and mode = 'vector'$$,
                  $$values ('99b00000-0000-4000-8000-0000000000a1'::uuid)$$,
                  'the vector signal finds it too');
select results_eq($$select id from answer where form = 'nfd' and mode = 'hybrid'$$,
                  $$values ('99b00000-0000-4000-8000-0000000000a1'::uuid)$$,
                  'and the fused search');
select results_eq($$select id from answer where form = 'nfd/' and mode = 'hybrid'$$,
                  $$values ('99b00000-0000-4000-8000-0000000000a1'::uuid)$$,
                  'a trailing slash after the NFD name is the same scope');
select results_eq($$select id from answer where form = 'nfc' and mode = 'hybrid'$$,
                  $$values ('99b00000-0000-4000-8000-0000000000a1'::uuid)$$,
                  'as the scope sent in NFC does');
select is((select count(*)::int from answer where id = '99b00000-0000-4000-8000-0000000000a2'),
          0, 'never the other tenant''s memory of the same scope name, in any form or mode');

select * from finish();
rollback;
