-- Categories and agents a coding agent actually has. 20261122003000 seeded a chat assistant's
-- (agents supervisor, planner, stylist, researcher, executor; categories profile, tone, goals, …):
-- a coding agent asking memory.query as `coder` got 403 unknown_agent, and a memory filed under
-- `testing` could be stored but never queried. This adds the coding defaults beside them; the
-- earlier rows stay as they were (their agents keep working), and planner's allowlist grows by
-- the coding categories a planner reads. Agents and categories are deployment-wide configuration,
-- changed by the service role (the memory function's /memory/agents and /memory/categories
-- routes, or Studio); every signed-in caller reads them (policies of 20261122003000).
--
-- context 'all' (returned without the similarity threshold, capped by rag_length) for the two a
-- coding agent must always see: the project's conventions and the user's preferences stay 'rag' as
-- 20261122003000 configured them, so existing agents' answers do not change.
insert into public.memory_categories (name, context, rag_length, kind) values
  ('architecture', 'rag', null, 'system'),
  ('conventions', 'all', 10, 'system'),
  ('commands', 'rag', null, 'system'),
  ('build', 'rag', null, 'system'),
  ('testing', 'rag', null, 'system'),
  ('deployment', 'rag', null, 'system'),
  ('dependencies', 'rag', null, 'system'),
  ('errors_and_fixes', 'rag', null, 'system'),
  ('decisions', 'rag', null, 'system'),
  ('preferences', 'rag', null, 'system'),
  ('workflows', 'rag', null, 'system'),
  ('procedural', 'rag', null, 'system')
on conflict (name) do update set kind = 'system';

insert into public.memory_agent_allowlists (agent, category)
select a.agent, c.category
  from (values
    ('coder',    array['architecture', 'conventions', 'commands', 'build', 'testing', 'dependencies',
                       'errors_and_fixes', 'decisions', 'preferences', 'workflows', 'procedural']),
    ('reviewer', array['architecture', 'conventions', 'decisions', 'testing', 'errors_and_fixes', 'preferences']),
    ('planner',  array['architecture', 'decisions', 'workflows', 'preferences']),
    ('tester',   array['testing', 'commands', 'build', 'errors_and_fixes', 'conventions', 'procedural']),
    ('ops',      array['deployment', 'commands', 'build', 'dependencies', 'errors_and_fixes', 'workflows', 'procedural'])
  ) as a(agent, categories),
  unnest(a.categories) as c(category)
on conflict do nothing;
