-- memory_relations loses its first two indexes, (from_id, owner_id) and (to_id, owner_id): the
-- ordered indexes added since (migrations 20261203800100 and 20261203800200) lead with the same
-- columns, and owner_id narrows nothing after them (an edge's owner is its memories', the
-- composite foreign keys say so, and a memory id is unique).
--
-- Every read of edges by memory finds them through those: the delete cascades of the foreign
-- keys (from_id = $1 and owner_id = $2, to_id likewise) and memory_search.relation_strengths
-- through memory_relations_from_created / _to_created, memory_graph_neighbours through
-- memory_relations_unique_edge and _to_strongest, explain and provenance through _created and
-- _derived_from. With 60,000 edges of one tenant the planner chose none of the two even with them
-- present, and the plans and buffers read were the same without them. The foreign keys reference
-- devai_memories_id_owner_key, no constraint uses these indexes (pg_constraint.conindid). Each
-- edge written updated 11 indexes; now 9: 20,000 edges written 36 MB of WAL with them, 33 MB
-- without, and they held 5.4 MB of the 39 MB of the table's indexes.
-- Test 99_foreign_keys_find_their_rows_through_an_index.

drop index if exists public.memory_relations_from;
drop index if exists public.memory_relations_to;
