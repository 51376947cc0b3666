-- A setting's row cannot be deleted or truncated, by anyone (migration 20261128926000): the
-- functions count on every row (hybrid_search read a deleted one as NULL, not as an error). Its
-- value can still be changed.
begin;
select plan(4);

select throws_ok($$delete from public.memory_settings where name = 'keyword_max_terms'$$, '23001',
  'a setting cannot be deleted: every function that reads public.memory_settings counts on its rows',
  'deleting a setting is refused, saying why');
select throws_ok($$truncate public.memory_settings cascade$$, '23001', null, 'truncating the settings is refused');
select is((select count(*) from public.memory_settings where name = 'keyword_max_terms'), 1::bigint, 'the row is there');
update public.memory_settings set value = 7 where name = 'keyword_max_terms';
select is(public.memory_setting('keyword_max_terms'), 7::numeric, 'a value is still changed with an update');

select * from finish();
rollback;
