-- A session's prediction is for the project it was made in: context/predict searches that
-- project's scope (besides global and user), so what it found for `src/index.ts` in project alpha
-- says nothing about `src/index.ts` in project beta. The cache was keyed by session and signal
-- alone, so a session that predicted a file in one project and assembled the same file in another
-- was served the first project's prediction: its memories fell out (another scope), and the file's
-- own lookup in the second project was skipped, so the context held neither (docs/context.md#prefetch).
-- Each row now records the project it was predicted for ('' without one; a project name is 1-140
-- characters), and an assemble reads only its own project's rows; a session may hold a prediction
-- per project for the same signal. Existing rows were made without the distinction: they are
-- taken as made without a project, at worst one miss.
alter table public.context_prefetch add column project text not null default '';
alter table public.context_prefetch add constraint context_prefetch_project_shape check (char_length(project) <= 140);
alter table public.context_prefetch drop constraint context_prefetch_pkey;
alter table public.context_prefetch add primary key (owner_id, session_id, project, signal_key);
comment on column public.context_prefetch.project is
  'The project the prediction was made for ('''' without one): an assemble of another project does not read it.';
-- Like session_id and signal_key, the project is part of the key: a tenant sets it on insert, never changes it.
grant insert (project) on public.context_prefetch to authenticated;
