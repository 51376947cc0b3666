-- Access reinforcement (public.reinforce_memories, called by retrieval as the signed-in user):
--   strength = base_strength = least(1, decayed + 0.1 + 0.05 * ln(1 + access_count / 20)),
--   access_count + 1, last_accessed_at = p_now; decay restarts from there. RLS applies.
begin;
set local timezone to 'UTC';
select plan(16);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace, priority, pinned, state, purge_at, base_strength, strength, access_count, last_accessed_at) values
  ('22000000-0000-4000-8000-000000000001', '22000000-0000-4000-8000-0000000000aa', 'reinforce: idle ten days', 'semantic', 'devai/global', 'medium', false, 'active', null, 1.0, 1.0, 0, '2026-01-01 00:00+00'),
  ('22000000-0000-4000-8000-000000000002', '22000000-0000-4000-8000-0000000000aa', 'reinforce: nearly full', 'semantic', 'devai/global', 'medium', false, 'active', null, 0.98, 0.98, 40, '2026-01-11 00:00+00'),
  ('22000000-0000-4000-8000-000000000003', '22000000-0000-4000-8000-0000000000aa', 'reinforce: highest', 'semantic', 'devai/global', 'highest', false, 'active', null, 0.6, 0.6, 0, '2026-01-01 00:00+00'),
  ('22000000-0000-4000-8000-000000000006', '22000000-0000-4000-8000-0000000000aa', 'reinforce: pinned', 'semantic', 'devai/global', 'low', true, 'active', null, 0.6, 0.6, 0, '2026-01-01 00:00+00'),
  ('22000000-0000-4000-8000-000000000004', '22000000-0000-4000-8000-0000000000aa', 'reinforce: soft-deleted', 'semantic', 'devai/global', 'medium', false, 'soft_deleted', '2026-02-01 00:00+00', 0.5, 0.5, 0, '2026-01-01 00:00+00'),
  ('22000000-0000-4000-8000-000000000005', '22000000-0000-4000-8000-0000000000bb', 'reinforce: other tenant', 'semantic', 'devai/global', 'medium', false, 'active', null, 0.5, 0.5, 0, '2026-01-01 00:00+00');

-- as the owner, through RLS, as the service calls it (retrieval)
select tests.authenticate_as('22000000-0000-4000-8000-0000000000aa');

select results_eq(
  $$select id from public.reinforce_memories(array['22000000-0000-4000-8000-000000000001', '22000000-0000-4000-8000-000000000002',
      '22000000-0000-4000-8000-000000000003', '22000000-0000-4000-8000-000000000004', '22000000-0000-4000-8000-000000000005',
      '22000000-0000-4000-8000-000000000001']::uuid[], '2026-01-11 00:00+00') order by id$$,
  $$values ('22000000-0000-4000-8000-000000000001'::uuid), ('22000000-0000-4000-8000-000000000002'), ('22000000-0000-4000-8000-000000000003')$$,
  'reinforces the caller''s active memories once each; soft-deleted and other tenants'' ids are ignored');
select is(round((select strength from public.devai_memories where id = '22000000-0000-4000-8000-000000000001')::numeric, 12),
          round((power(0.95, 10) + 0.1 + 0.05 * ln(1 + 1 / 20.0))::numeric, 12),
          'strength = decayed (0.95^10) + 0.1 + 0.05 * ln(1 + 1/20)');
select is((select base_strength = strength from public.devai_memories where id = '22000000-0000-4000-8000-000000000001'), true,
          'base_strength is set to the reinforced strength');
select is((select (access_count, last_accessed_at) from public.devai_memories where id = '22000000-0000-4000-8000-000000000001'),
          (1, '2026-01-11 00:00+00'::timestamptz), 'access_count + 1 and last_accessed_at = now');
select is((select strength from public.devai_memories where id = '22000000-0000-4000-8000-000000000002'), 1.0::double precision,
          'capped at 1.0: 0.98 + 0.1 + 0.05 * ln(1 + 41/20) is stored as 1.0');
select is(round((select strength from public.devai_memories where id = '22000000-0000-4000-8000-000000000003')::numeric, 12),
          round((0.6 + 0.1 + 0.05 * ln(1 + 1 / 20.0))::numeric, 12), 'priority highest: its undecayed strength is reinforced');
select is(round((select strength from public.reinforce_memories(array['22000000-0000-4000-8000-000000000006']::uuid[], '2026-01-11 00:00+00'))::numeric, 12),
          round((0.6 + 0.1 + 0.05 * ln(1 + 1 / 20.0))::numeric, 12), 'pinned: its undecayed strength is reinforced');
select is((select (strength, access_count) from public.devai_memories where id = '22000000-0000-4000-8000-000000000004'),
          (0.5::double precision, 0), 'soft-deleted memory untouched');

reset role;
select set_config('request.jwt.claims', '', true);
select is((select (strength, access_count) from public.devai_memories where id = '22000000-0000-4000-8000-000000000005'),
          (0.5::double precision, 0), 'other tenant''s memory untouched (RLS)');

-- decay restarts from the reinforced value
select memory_private.run_decay('2026-01-12 00:00+00');
select is(round((select strength from public.devai_memories where id = '22000000-0000-4000-8000-000000000001')::numeric, 12),
          round(((power(0.95, 10) + 0.1 + 0.05 * ln(1 + 1 / 20.0)) * 0.95)::numeric, 12),
          'one day after the access: reinforced strength * 0.95');

-- cap reached through the access-count term alone
update public.devai_memories set strength = 0.97, base_strength = 0.97, last_accessed_at = '2026-01-12 00:00+00'
 where id = '22000000-0000-4000-8000-000000000002';
select is((select strength from public.reinforce_memories(array['22000000-0000-4000-8000-000000000002']::uuid[], '2026-01-12 00:00+00')),
          1.0::double precision, 'cap again after a later access: 0.97 + 0.1 + 0.05 * ln(1 + 42/20) is stored as 1.0');

-- settings change the boost
update public.memory_settings set value = 0 where name in ('reinforce_step', 'reinforce_log_weight');
select is((select strength from public.reinforce_memories(array['22000000-0000-4000-8000-000000000003']::uuid[], '2026-01-12 00:00+00')),
          (select strength from public.devai_memories where id = '22000000-0000-4000-8000-000000000003'),
          'boost 0 with priority highest: strength unchanged');
select is((select access_count from public.devai_memories where id = '22000000-0000-4000-8000-000000000003'), 2,
          'but the access is still counted');

-- who may call it
select ok(has_function_privilege('authenticated', 'public.reinforce_memories(uuid[], timestamptz)', 'execute'), 'authenticated may reinforce');
select ok(not has_function_privilege('anon', 'public.reinforce_memories(uuid[], timestamptz)', 'execute'), 'anon may not reinforce');
select ok(not has_function_privilege('authenticated', 'memory_private.run_decay(timestamptz)', 'execute'), 'authenticated may not run the decay job');

select * from finish();
rollback;
