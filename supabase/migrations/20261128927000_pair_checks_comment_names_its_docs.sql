-- The table comment Studio shows for memory_pair_checks pointed at docs/consolidation.md#pairs,
-- a heading that does not exist; the pairs are described under "Nightly consolidation".
comment on table public.memory_pair_checks is
  'Pairs of memories already checked (consolidation fingerprints, the write-time contradiction judge''s cache). See docs/consolidation.md#nightly-consolidation.';
