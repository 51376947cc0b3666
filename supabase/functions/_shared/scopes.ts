// Where a memory is filed. Three scopes under the configured root: `<root>/global/` (every project
// of the tenant sees it), `<root>/project/<project>/` (that project only) and `<root>/user/` (the
// user, in every project). The rule every writer follows (README "Scopes: where a memory goes"):
//
//   1. A namespace the caller names is kept when it is valid for the request: under the root, in
//      one of the three scopes, and in the request's project when the request names one.
//   2. Anything else goes to the request's scope: `scope` when given, else the project's scope when
//      a project is named, else the user scope. Never global by default: a session that names no
//      project must not teach every project of the tenant.
//   3. Global only when the caller says so: `scope: "global"`, or a `<root>/global/…` namespace it
//      names itself.
//
// What a model proposes (LLM extraction, compaction) is not the caller's word: its namespace is kept
// only inside what rules 2 and 3 allow; another project's scope, or global without
// `scope: "global"`, is re-filed under the request's scope with its topic kept.
import { z } from "zod";
import { projectFromSegment, projectScope, projectSegment, segment } from "./schemas.ts";
import { nameForm } from "./name-form.ts";

export const writeScope = z.enum(["project", "user", "global"]);
export type WriteScope = z.infer<typeof writeScope>;

export interface ScopeRequest {
  project?: string;
  scope?: WriteScope;
}

/** For a request schema's refine: scope "project" names no project without one. */
export const scopeHasProject = (b: ScopeRequest): boolean => b.scope !== "project" || b.project !== undefined;
export const SCOPE_NEEDS_PROJECT = { message: 'scope "project" needs a project', path: ["scope"] };

/** The namespace (no trailing '/') of rule 2: where a memory without a valid one of its own goes. */
export function defaultScope(root: string, req: ScopeRequest): string {
  const scope = req.scope ?? (req.project !== undefined ? "project" : "user");
  if (scope === "project") return projectScope(root, req.project!);
  return `${root}/${scope}`;
}

interface ParsedNamespace {
  /** Every segment, the root first; scope words lower-cased, the project segment as written. */
  segments: string[];
  scope: WriteScope;
  /** Where the topic starts: 2 for global/user, 3 for project. */
  topicAt: number;
}

/**
 * A namespace as the three scopes read it, or undefined when it is not one: read in NFC (a model's
 * too), relative forms ("project/x/arch") get the root, slashes are tidied, every segment must be valid.
 */
function parseNamespace(raw: string, root: string, maxSegments: number): ParsedNamespace | undefined {
  let ns = nameForm(raw).trim().replace(/^\/+|\/+$/g, "").replace(/\/{2,}/g, "/");
  if (!ns.toLowerCase().startsWith(`${root}/`)) ns = `${root}/${ns}`;
  if (ns.length > 256) return undefined;
  const segments = ns.split("/");
  if (segments.length < 2 || segments.length > maxSegments) return undefined;
  if (!segments.every((s) => segment.safeParse(s).success)) return undefined;
  segments[0] = root;
  const scope = segments[1]!.toLowerCase();
  segments[1] = scope;
  if (scope === "global" || scope === "user") return { segments, scope, topicAt: 2 };
  if (scope === "project" && segments.length >= 3) return { segments, scope, topicAt: 3 };
  return undefined;
}

/** A namespace names a project by its one segment, a `/` in the name written `~` (schemas.ts projectName). */
const PROJECT_IN_NAMESPACE =
  "a '/' inside a project name is written '~' in a namespace: project acme/web is <root>/project/acme~web/…";

export type CallerNamespace = { ok: true; namespace: string } | { ok: false; message: string };

/** Rule 1: the caller's own namespace, kept as written when valid for the request. */
export function callerNamespace(raw: string, root: string, req: ScopeRequest): CallerNamespace {
  const parsed = parseNamespace(raw, root, 8);
  if (!parsed) {
    return {
      ok: false,
      message:
        `namespace must be ${root}/global/…, ${root}/user/… or ${root}/project/<project>/… (2-8 valid segments; ${
          PROJECT_IN_NAMESPACE.replace("<root>", root)
        })`,
    };
  }
  if (parsed.scope === "project" && req.project !== undefined && parsed.segments[2] !== projectSegment(req.project)) {
    return {
      ok: false,
      message: `namespace is in project '${
        projectFromSegment(parsed.segments[2]!)
      }' but the request's project is '${req.project}' (${PROJECT_IN_NAMESPACE.replace("<root>", root)})`,
    };
  }
  return { ok: true, namespace: parsed.segments.join("/") };
}

/** Rules 2 and 3 for a namespace a model proposed; `rewritten` when it is moved elsewhere. */
export function modelNamespace(
  raw: string,
  root: string,
  req: ScopeRequest,
): { namespace: string; rewritten: boolean } {
  const fallback = defaultScope(root, req);
  const parsed = parseNamespace(raw, root, 6);
  if (!parsed) return { namespace: fallback, rewritten: true };
  const { segments, scope, topicAt } = parsed;
  const topic = segments.slice(topicAt).map((s) => s.toLowerCase());
  let out: string;
  if (scope === "project") {
    const own = req.project !== undefined && segments[2]!.toLowerCase() === projectSegment(req.project).toLowerCase();
    // The request's spelling of its project, the one retrieval searches.
    out = own ? [projectScope(root, req.project!), ...topic].join("/") : [fallback, ...topic].join("/");
  } else if (scope === "global" && req.scope !== "global") {
    out = [fallback, ...topic].join("/");
  } else {
    out = [root, scope, ...topic].join("/");
  }
  if (out.length > 256 || out.split("/").length > 8) out = fallback;
  // Tidying (the root added, letter case) is not a rewrite; a move to another scope or topic is.
  const asProposed = [...segments.slice(0, topicAt), ...topic].join("/");
  return { namespace: out, rewritten: out.toLowerCase() !== asProposed.toLowerCase() };
}

/**
 * The project whose scope holds `namespace` (`<root>/project/acme~web/notes` → `acme/web`), null in
 * the user or global scope. A write's answer says it, since `<root>/project/acme/web/notes` is a
 * valid namespace of project `acme` (topic `web/notes`) that a search of project `acme/web` never reads.
 */
export function projectOfNamespace(namespace: string): string | null {
  const [, scope, seg] = namespace.split("/");
  return scope === "project" && seg !== undefined ? projectFromSegment(seg) : null;
}

/** The scopes one retrieval (or context assembly) searches: global, the project's when named, user. */
export function retrievalScopes(root: string, project?: string): string[] {
  return [`${root}/global`, ...(project !== undefined ? [projectScope(root, project)] : []), `${root}/user`];
}
