-- Simple questions fused half by rank, half by score. hybrid_search blended a memory's share of the
-- keyword and vector lists from its reciprocal rank and its score as a share of the list's best by
-- fusion_score_share, shipped at 0 (ranks alone) for simple questions. At 0.5 the eval
-- (npm run eval, offline embedder) finds as many answers or more in every category at ten
-- (recall@10 0.719 -> 0.722) and ranks them higher (MRR 0.638 -> 0.660; single-hop answers in the
-- default block 76% -> 78%); the only falls are deep in the list (paraphrase MRR 0.0265 -> 0.0261:
-- answers at ranks 26-49 a place or three lower). eval/README.md has the figures;
-- docs/retrieval.md#fusion.
-- Only a database still at the old default moves: a value someone chose stays theirs.
update public.memory_settings
   set value = 0.5
 where name = 'fusion_score_share' and value = 0;
update public.memory_settings
   set description = 'hybrid_search, simple questions: how much a memory''s share of the keyword and vector lists follows its score as a share of the list''s best (1) rather than its reciprocal rank (0); 0.5 by default. docs/retrieval.md#fusion.'
 where name = 'fusion_score_share';
