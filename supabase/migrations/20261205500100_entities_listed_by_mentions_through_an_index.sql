-- GET memory/entities (the listing by mentions, with or without type) reads a page through an
-- index instead of sorting all the tenant's entities.
--
-- The listing is ordered by mention_count desc, id, a page after the cursor's (count, id). No
-- index had mention_count: every page read every entity of the table the tenant's rows were in and
-- kept the best 51 (a tenant of 50,000 entities among 100,000: 28 ms, 2,746 buffers, the same at
-- page 1 and page 1,000). Now (owner_id, mention_count desc, id) and the same with entity_type
-- give the first page by an index scan and a later one as two index ranges, the entities tied
-- with the cursor's count after its id and those with fewer mentions (0.1-0.2 ms, under 10
-- buffers). The cursor's ties are a range of their own because most entities are mentioned once:
-- one range from the cursor's count filtered by id read every tie before the cursor's.
-- The price is on writes: a mention count change now updates these two indexes and is never a
-- HOT update (20,000 updates of mention_count and last_seen_at on a 100,000-entity table: 3.3-3.9 s
-- without, 4.3-5.3 s with; about 50 us each), against a page of the listing at any depth.
-- tests/entity_listing_cost.test.ts; docs/graph.md#entities.

create index if not exists memory_entities_by_mentions
  on public.memory_entities (owner_id, mention_count desc, id);
create index if not exists memory_entities_of_type_by_mentions
  on public.memory_entities (owner_id, entity_type, mention_count desc, id);
