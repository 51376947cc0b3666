// What each tool argument means, for the model that fills it in: tools/list shows it as the
// argument's `description` (tool-server.ts). The input schemas are the HTTP API's zod schemas, which
// say what a value may be (type, bounds, enum) but not what it is for; a model saw only names such
// as `since_revision`, `threshold` or `scope` and had to guess (docs/mcp.md#tools). The HTTP API
// documents the same fields in the README's API table.

/** An argument's meaning wherever a tool takes it, unless the tool says otherwise (TOOL_ARGUMENTS). */
const ARGUMENTS: Record<string, string> = {
  project: "the project the work is in, spelt the same every time (another spelling is another project, whose " +
    "memories are not seen): by default the name of the git repository's folder, as the Claude Code hooks name it " +
    "(a `### Project Knowledge (<name>)` heading in a memory block shows the name in use). Its memories are searched " +
    "(or written) beside the user's and global ones; without it, none of any project's",
  project_context:
    "what the caller is working on (a file, task or goal): searched after the message, to rank what fits",
  budget_tokens: "the most tokens the returned block may take (default by how complex the question is)",
  top_k: "how many memories to return at most",
  threshold: "the least vector (cosine) similarity a memory needs to be found by meaning, 0-1",
  keyword_threshold: "the share of the question's informative words a memory must hold to be found by keyword, 0-1",
  thread_id: "the conversation (or chat) this call belongs to: changes are counted per thread (since_revision)",
  since_revision:
    "the `revision` the previous answer on this thread_id gave: the block then starts with what changed since",
  mode: "which signals to search with: hybrid (default: keyword, vector and graph), vector or keyword",
  after: "only memories from this time on: an ISO date or date-time, today, yesterday, last_week, last_month or " +
    "last_N_days",
  before: "only memories from before this time: an ISO date or date-time, today, yesterday, last_week, last_month " +
    "or last_N_days",
  now: "the instant after and before are read from (an ISO date-time with its offset); default the server's clock",
  intent: "what the question asks for (why, when, who, what, how or general); default read from the question",
  graph_depth: "how many hops to follow over the links between memories from the best hits (0: none)",
  as_of: "search what memory held at that instant (an ISO date-time, or a date: its midnight UTC); nothing is " +
    "reinforced",
  signals: "the code's lineage (repo, branch, commit, default_branch, merged_branches, ancestor_commits, " +
    "deleted_files, renamed_files): another branch's unmerged notes and memories citing deleted files are left out",
  session_id: "the agent's session id (as it sends its transcript), tying what is written to that session",
  content: "the fact, in one self-contained sentence as the user would say it",
  reason: "why, in a few words: kept in the history",
  id: "the memory's id, as search_memory and remember_fact show it",
  limit: "how many to return at most",
  cursor: "the previous answer's next_cursor, unchanged, for the next page; omit it for the first page",
};

/** Where a tool's argument means something of its own. */
const TOOL_ARGUMENTS: Record<string, Record<string, string>> = {
  search_memory: { message: "the user's message or question, as written: what to find memories for" },
  query_memory: {
    query: "what to find: a question or keywords",
    categories: "only these categories (each must be on this agent's allowlist); default every allowed one",
    filters: "exact filters on a memory's fields: category, pinned, importance_min/max, updated_after/before, " +
      "user_id, agent_id, run_id, actor_id, role",
    return: "bullets (default: one line each) or full (every field)",
  },
  remember_fact: {
    project: ARGUMENTS.project + ". Give project or namespace, not both",
    namespace: "where to file it, written out (devai/project/<project>/<topic>, devai/user/<topic> or " +
      "devai/global/<topic>; a / in a project name is written ~). Usually omitted: project and scope choose; " +
      "not with project or scope",
    scope:
      "project (the project's only: needs project), user (this user in every project: the default without project) or " +
      "global (every project of the tenant)",
    memory_type: "semantic (a fact: default), procedural (how to do something) or episodic (what happened)",
    importance: "1 (trivia) to 5 (critical)",
    metadata: "category (one of the configured categories, e.g. commands, conventions, decisions, errors_and_fixes: " +
      "query_memory finds only memories with one) and the code's lineage (repo, branch, commit, files)",
  },
  correct_fact: {
    id: "the id of the memory that is wrong",
    content: "the corrected fact, in one self-contained sentence: it replaces the memory's text",
    reason: "why the memory was wrong, in a few words: kept in the history",
  },
  forget_memory: { reason: "why it is forgotten, in a few words: kept in the history" },
  memory_history: { limit: "how many events to return at most (default 50)" },
  memory_stats: { top_namespaces: "how many of the fullest namespaces to list (default 20)" },
  weak_facts: { limit: "how many memories to return at most (default 20)" },
  get_entity_info: {
    id: "the entity's id; or give q",
    q: "the entity's name, an alias or the start of its name; or give id",
    type: "with q: only an entity of this type",
  },
  assemble_context: {
    budget: "the most tokens the context may take (default 8,000)",
    message: "the user's current message or task, if any",
    signals: "what the agent sees: current_file, open_files, recent_errors, activity (debugging, feature, review, " +
      "refactor, testing, docs, ops) and the code's lineage (repo, branch, commit, default_branch, merged_branches, " +
      "ancestor_commits, deleted_files, renamed_files)",
  },
};

/** What argument `name` of tool `tool` means; undefined for an argument nobody described. */
export function argumentDescription(tool: string, name: string): string | undefined {
  return TOOL_ARGUMENTS[tool]?.[name] ?? ARGUMENTS[name];
}
