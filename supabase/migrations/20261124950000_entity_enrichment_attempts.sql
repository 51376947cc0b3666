-- When nightly enrichment last offered an entity to the model (docs/graph.md#nightly-maintenance).
--
-- Enrichment picks entities with enough mentions and no summary, most mentioned first. An entity
-- the model leaves out (the memories say nothing about it) kept its null summary and was picked
-- again every night, ahead of the rest, so the night's cap went to the same entities forever. The
-- worker now records each attempt here and skips entities attempted in the last 7 days.

alter table public.memory_entities add column enrich_attempted_at timestamptz;

comment on column public.memory_entities.enrich_attempted_at is
  'When nightly enrichment last offered this entity to the model; an entity attempted in the last 7 days is not offered again. See docs/graph.md#nightly-maintenance.';

-- The worker runs as the tenant (authenticated) and records the attempt beside the summary it may write.
grant update (enrich_attempted_at) on public.memory_entities to authenticated;
