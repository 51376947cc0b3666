// Every method the eval runs, in report order. To add one, write an adapter (see method.ts and
// memory-retrieve.ts) and list it here.
import { ftsSql } from "./fts-sql.ts";
import type { RetrievalMethod } from "./method.ts";
import { hybrid, hybridGraph, keyword, planned, vector } from "./memory-retrieve.ts";
import { supabaseHybrid } from "./supabase-hybrid.ts";

export const METHODS: readonly RetrievalMethod[] = [
  vector,
  keyword,
  hybrid,
  hybridGraph,
  planned,
  ftsSql,
  supabaseHybrid,
];
