// What failed validation, said in one line: "path: problem; path: problem". Error bodies carry the
// issues as data (http.ts zodIssues); this line is for the places that have text only: the
// environment check, the MCP texts a model reads, the check of an LLM's answer.

/** A zod issue, or an issue of an error body (a path of keys and indexes, a message). */
export interface IssueLike {
  path: readonly PropertyKey[];
  message: string;
}

/** The first `max` issues as "path: problem", joined by "; "; an empty path reads as `root`. */
export function issuesText(issues: readonly IssueLike[], root = "(root)", max = Infinity): string {
  return issues.slice(0, max).map((i) => `${i.path.map(String).join(".") || root}: ${i.message}`).join("; ");
}
