// What a rule the database checks means in the API's words, for the 4xx answer of a request that
// broke it (database-errors.ts). The database's own text names our tables, constraints, columns
// and functions ("new row for relation "devai_memories" violates check constraint ...") and may
// quote SQL: it is logged with the request id for operators (http.ts asHttpError), never answered.
// Keyed by the constraint's name (the error's `constraint_name` field): a rule the API's schemas
// check first is reached here only through a path they miss (a statement its secrets' markers made
// longer, an import, a setting), so every rule a request's values can break has its sentence; one
// missing from the table gets its SQLSTATE's sentence, which is still in the API's terms.

/** Sentences for check (23514) and not-null (23502) violations, by constraint. */
export const CHECKS: Readonly<Record<string, string>> = {
  // Reached by an episode (POST memory/episodes) whose secrets' markers make it longer than this.
  devai_memories_content_length:
    "a memory's or message's content must be 1-8000 characters once trimmed, counted after each secret is replaced by its [REDACTED:<kind>] marker; send it in parts",
  devai_memories_namespace_shape:
    "namespace must be 1-256 characters of '/'-separated segments, without control characters, empty, '.' or '..' segments",
  // Names are stored in NFC (name-form.ts); the API reads every name it is sent so.
  devai_memories_namespace_nfc: "namespace must be in Unicode NFC (composed characters)",
  memory_proposals_namespace_nfc: "namespace must be in Unicode NFC (composed characters)",
  memory_sessions_names_nfc: "a session's project and namespace must be in Unicode NFC (composed characters)",
  context_prefetch_project_nfc: "project must be in Unicode NFC (composed characters)",
  devai_memories_importance_range: "importance must be an integer from 1 to 5",
  devai_memories_memory_type_check: "memory_type must be semantic, episodic, procedural or insight",
  devai_memories_priority_check: "priority must be highest, high, medium or low",
  devai_memories_source_check:
    "source must be user_stated, error_resolution, pattern, discovery, correction, compaction, import or conversation",
  devai_memories_metadata_is_object: "metadata must be a JSON object",
  devai_memories_validity_order: "valid_until must not be before valid_from",
  devai_memories_strength_range: "strength must be between 0 and 1",
  devai_memories_base_strength_range: "strength must be between 0 and 1",
  devai_memories_not_superseded_by_itself: "a memory cannot supersede itself",
  memory_relations_no_self_edge: "a memory cannot be related to itself: from and to must differ",
  memory_relations_confidence_range: "a relation's confidence must be between 0 and 1",
  memory_relations_strength_range: "a relation's strength must be between 0 and 1",
  memory_relations_type_check:
    "relation_type must be related_to, supersedes, derived_from, contradicts, temporal, causal or entity",
  memory_relations_evidence_shape: "a relation's evidence must be a JSON array of at most 20 items",
  memory_relations_validity_order: "a relation's valid_until must not be before its valid_from",
  memory_sessions_session_id_shape: "session_id must be 1-200 characters",
  memory_sessions_thread_id_shape: "thread_id must be 1-200 characters",
  memory_sessions_summary_length: "a session's summary must be 1-2000 characters",
  memory_session_summaries_session_id_shape: "session_id must be 1-200 characters",
  memory_session_summaries_thread_id_shape: "thread_id must be 1-200 characters",
  context_injections_session_shape: "session_id must be 1-200 characters",
  context_prefetch_session_shape: "session_id must be 1-200 characters",
  context_prefetch_project_shape: "project must be at most 140 characters",
  context_prefetch_signal_key_shape: "a file, branch or error signal must be at most 600 characters",
  memory_usage_sessions_session_shape: "session_id must be 1-200 characters",
  memory_thread_revisions_thread_id_shape: "thread_id must be 1-200 characters",
  supervisor_checkpoints_thread_id_shape: "thread_id must be 1-200 characters",
  supervisor_checkpoints_state_is_object: "a checkpoint's state must be a JSON object",
  memory_entities_name_shape: "an entity's name must be 1-200 characters once trimmed, without control characters",
  memory_entities_name_has_key: "an entity's name must hold at least one letter or digit",
  memory_entities_summary_length: "an entity's summary must be 1-2000 characters",
  memory_entities_aliases_shape: "an entity may have at most 20 aliases",
  memory_entities_attributes_is_object: "an entity's attributes must be a JSON object",
  memory_entity_links_mention_shape: "an entity's mention must be 1-200 characters",
  memory_entity_links_confidence_range: "an entity link's confidence must be between 0 and 1",
  memory_contradictions_note_length: "note must be at most 1000 characters",
  memory_contradictions_reason_length: "reason must be at most 1000 characters",
  memory_proposals_content_length: "a proposal's content must be 1-2000 characters once trimmed",
  memory_agent_tokens_label_length: "label must be 1-200 characters",
  memory_agent_tokens_agent_shape:
    "agent must be a lowercase letter followed by at most 63 lowercase letters, digits, '_' or '-'",
  memory_agent_tokens_expiry_after_creation: "expires_at must be in the future",
  memory_agent_allowlists_agent_shape:
    "agent must be a lowercase letter followed by at most 63 lowercase letters, digits, '_' or '-'",
  memory_categories_name_shape:
    "a category's name must be a lowercase letter followed by at most 63 lowercase letters, digits or '_'",
  memory_categories_rag_length_range: "rag_length must be an integer from 1 to 1000",
  memory_search_weights_range: "each search weight must be between 0 and 10, and their sum above 0",
  memory_jobs_idempotency_key_shape: "an idempotency key must be 1-300 characters",
};

/** Sentences for unique violations (23505), by constraint. */
export const DUPLICATES: Readonly<Record<string, string>> = {
  memory_relations_unique_edge: "these two memories are already related by this relation_type",
  memory_entities_unique_name: "an entity with this name already exists",
  memory_sessions_unique_session: "a session with this session_id already exists",
  memory_session_summaries_unique_session: "this session_id is already summarised",
  supervisor_checkpoints_unique_thread: "a checkpoint for this thread_id already exists",
  memory_jobs_unique_key: "a job with this idempotency key already exists",
  memory_categories_pkey: "a category with this name already exists",
  memory_agent_allowlists_pkey: "this agent is already allowed this category",
  memory_search_weights_pkey: "weights for this embedding model already exist",
};

/** Sentences for data exceptions (class 22) by SQLSTATE; the class's own for the others. */
const DATA_EXCEPTIONS: Record<string, string> = {
  "22001": "a text value in the request is longer than its field holds",
  "22003": "a number in the request is out of range",
  "22007": "a date or time in the request is malformed",
  "22008": "a date or time in the request is out of range (from 4713 BC to 294276 AD)",
  "22P02": "a value in the request is not of its field's type (a uuid, a number, a date or a boolean)",
  "22023": "a parameter of the request is outside its allowed values or bounds",
  "22012": "a value in the request leads to a division by zero",
  "22004": "a required value in the request is missing",
};

/** A DB error's fields as postgres.js reports them (the server's ErrorResponse). */
export interface DatabaseErrorFields {
  code: string;
  constraint_name?: string;
  column_name?: string;
}

const SEE = "nothing was written; see the API reference for the field's limits";

/** The 4xx message for a data exception (class 22) or a constraint violation (23514/23502/23505). */
export function databaseRuleMessage(err: DatabaseErrorFields): string {
  const constraint = err.constraint_name;
  if (err.code === "23505") {
    return `${
      (constraint && DUPLICATES[constraint]) ?? "the request conflicts with an item that already exists"
    }; nothing was written`;
  }
  if (err.code === "23514") {
    return `${(constraint && CHECKS[constraint]) ?? "a value in the request is outside what can be stored"}; ${SEE}`;
  }
  if (err.code === "23502") return `a required value in the request is missing; ${SEE}`;
  return `${DATA_EXCEPTIONS[err.code] ?? "a value in the request is out of range or malformed"}; ${SEE}`;
}
