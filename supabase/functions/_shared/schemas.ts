// Zod schemas shared by several functions. They are the API's documentation too: the MCP tools'
// input schemas are these (the SDK turns them into JSON Schema for tools/list).
import { z } from "zod";
import { redactSecrets } from "./redact.ts";
import { CONTROL_CHARACTERS, firstUnsafeCharacter, nulPath } from "./unsafe-characters.ts";
import { nameText } from "./name-form.ts";

/**
 * The one UUID rule, for an id wherever it is sent (path, query string, body, an MCP tool's
 * arguments): one that is no uuid is 400 `invalid_id` naming the field (http.ts, validate).
 */
export const uuid = z.uuid({
  // A missing id says what any missing field says (zod's own message).
  error: (issue) => issue.code === "invalid_format" ? "expected a uuid" : undefined,
});

/**
 * A uuid of any version, as Postgres reads one: a tenant's id (a user's auth id, or the tenant a
 * service_role caller names in x-devai-tenant), which this service does not issue. Not held to
 * `uuid`'s RFC 9562 version and variant digits: `00000000-0000-0000-0000-000000000001` keys a
 * tenant's rows as well as a random one, and a tenant named so was taken before.
 */
export const anyUuid = z.guid();

export const memoryType = z.enum(["semantic", "episodic", "procedural"]);
/** What a stored memory may be: what a writer sends, or an insight (written by the insight job only). */
export const storedMemoryType = z.enum(["semantic", "episodic", "procedural", "insight"]);
export const priority = z.enum(["highest", "high", "medium", "low"]);
/** Where a stored memory came from (the list's `source` filter); `conversation` is a raw episode (docs/graph.md#episodes). */
export const source = z.enum([
  "user_stated",
  "error_resolution",
  "pattern",
  "discovery",
  "correction",
  "compaction",
  "import",
  "conversation",
]);
export const importance = intWithin(1, 5);

// A namespace segment: letters, digits and . _ % + @ ~ - (so `task_forge` and `100%_done` are
// valid), never '.' or '..', never '/', whitespace or control characters. `%` and `_` are harmless
// because scopes are matched with starts_with, never LIKE.
// A namespace is stored as sent, in NFC (name-form.ts; a key: a marker would make it another
// scope), so a segment holding a secret is refused, as a session id is (withoutSecrets).
const SEGMENT = /^[\p{L}\p{N}._%+@~-]{1,140}$/u;
const segmentShape = nameText()
  .regex(SEGMENT, "use letters, digits and . _ % + @ ~ - only (1-140 characters)")
  .refine((s) => s !== "." && s !== "..", "'.' and '..' are not allowed");
export const segment = withoutSecrets(segmentShape);

// A project name is what a coding agent naturally has: a directory name (`task_forge`), a
// repository (`acme/web`) or a package (`@acme/web`): parts of letters, digits and . _ % + @ -
// joined by '/'. Its scope is ONE namespace segment, `/` written as `~` (a character no project
// name may contain, so the mapping is reversible and `a/b`, `a_b` and `a~b`'s scopes never meet).
// Read in NFC (name-form.ts): `한글` sent in NFD is the project `한글`, not another one.
// One segment, not nested ones: `<root>/project/acme/` must never be a prefix of `acme/web`'s scope.
const PROJECT_PART = /^[\p{L}\p{N}._%+@-]+$/u;
export const PROJECT_SEPARATOR = "~";
export const projectName = withoutSecrets(
  nameText()
    .min(1)
    .max(140)
    .refine(
      (s) => s.split("/").every((p) => PROJECT_PART.test(p) && p !== "." && p !== ".."),
      "a project is letters, digits and . _ % + @ - in parts joined by '/' (e.g. acme/web, @acme/web), 1-140 characters, no empty, '.' or '..' part",
    ),
);

/** The namespace segment of a project: `acme/web` → `acme~web` (see projectName). */
export function projectSegment(project: string): string {
  return project.replaceAll("/", PROJECT_SEPARATOR);
}

/** The project a namespace segment stands for: `acme~web` → `acme/web`. */
export function projectFromSegment(seg: string): string {
  return seg.replaceAll(PROJECT_SEPARATOR, "/");
}

/** `<root>/project/<segment>`: the scope of a project's memories (no trailing '/'). */
export function projectScope(root: string, project: string): string {
  return `${root}/project/${projectSegment(project)}`;
}

/** A full namespace: `<root>/<segment>/...`, 2-8 segments, at most 256 characters. */
export const namespace = withoutSecrets(
  nameText()
    .max(256)
    .refine((s) => {
      const parts = s.split("/");
      return parts.length >= 2 && parts.length <= 8 && parts.every((p) => segmentShape.safeParse(p).success);
    }, "namespace must be 2-8 '/'-separated segments of letters, digits and . _ % + @ ~ - (no '..', no empty segment)"),
);

/**
 * Text stored as it is sent (memory content, a correction's reason): refused when it holds a
 * character stored text may not contain (unsafe-characters.ts), the message naming it.
 */
export function storableText(schema: z.ZodString) {
  return schema.superRefine((s, ctx) => {
    const unsafe = firstUnsafeCharacter(s);
    if (unsafe) {
      ctx.addIssue({
        code: "custom",
        message: `contains ${unsafe}: stored text may not hold control, bidirectional or invisible characters`,
      });
    }
  });
}

/**
 * A JSON value stored as sent (a checkpoint's state, a transcript's messages, whose fields are the
 * caller's): one holding NUL anywhere, which Postgres cannot store, is a 400 naming where. It was
 * the database's 400 naming nothing ("the request contains characters that cannot be stored").
 */
export function withoutNul<T extends z.ZodType>(schema: T) {
  return schema.superRefine((value, ctx) => {
    const at = nulPath(value);
    if (at) ctx.addIssue({ code: "custom", path: at, message: "holds U+0000 (NUL), which Postgres cannot store" });
  });
}

/**
 * An id that keys what is stored (a session's episodes and extract jobs, a thread's events): kept
 * exactly as sent, since a marker would make it another id, so one holding a secret is refused,
 * the message naming its kind (docs/redaction.md). Text is redacted instead (redact.ts).
 */
export function withoutSecrets<T extends z.ZodType<string>>(schema: T) {
  return schema.superRefine((s, ctx) => {
    const { counts, total } = redactSecrets(s, "id");
    if (total > 0) {
      ctx.addIssue({
        code: "custom",
        message: `holds a secret (${Object.keys(counts).join(", ")}): this field is stored as sent, never redacted`,
      });
    }
  });
}

/**
 * The one rule for an integer parameter (`limit`, `top_namespaces`, `importance_min`) of every
 * route: text from a query string, or a number from an MCP tool's JSON arguments. Any integer
 * written in digits is read, then held to the bounds, so every failure says the same thing ("an
 * integer 1-100"): contradictions' and proposals' `limit` refused a fourth digit as "an integer
 * 1-100" where the others took nine and said "Too big". The default sits inside the check, so
 * tools/list shows it beside the bounds (a default around it was dropped, docs/mcp.md).
 */
export function queryInt(min: number, max: number, fallback?: number) {
  const bounded = intWithin(min, max);
  return z.preprocess((v, ctx) => {
    if (typeof v !== "string") return v;
    if (/^-?\d+$/.test(v)) return Number(v);
    ctx.addIssue({ code: "custom", message: `an integer ${min}-${max}, written in digits` });
    return z.NEVER;
  }, fallback === undefined ? bounded : bounded.default(fallback));
}

/** An integer within bounds, every refusal saying them (a JSON body's `limit`; queryInt's check). */
export function intWithin(min: number, max: number) {
  const rule = `an integer ${min}-${max}`;
  return z.int({ error: rule }).min(min, { error: rule }).max(max, { error: rule });
}

/** Memory text as stored: trimmed, 1-4000 characters, none of the characters stored text may not hold. */
export const content = storableText(z.string().trim().min(1).max(4000));

/**
 * Free text from the conversation that is not stored (a query, an error on screen): trimmed, no
 * control characters (unsafe-characters.ts; right-to-left marks are fine here).
 */
export function freeText(max: number) {
  return withoutControlCharacters(z.string().trim().min(1).max(max));
}

/** The one control-character rule (unsafe-characters.ts) on a string schema: a 400 naming the field. */
export function withoutControlCharacters<T extends z.ZodType<string>>(schema: T) {
  return schema.refine((s) => !CONTROL_CHARACTERS.test(s), "control characters are not allowed");
}

/**
 * Whether an ISO time is from 0001-01-01 to 9999-12-31 in UTC: Postgres has no year 0, and an
 * offset that carries 9999-12-31 into year 10000 (or 0001-01-01 back into year 0) was refused by
 * Postgres with a message naming no field; neither can be written back as an ISO time.
 */
const inIsoRange = (s: string) => {
  const ms = Date.parse(s);
  return ms >= Date.parse("0001-01-01T00:00:00Z") && ms <= Date.parse("9999-12-31T23:59:59.999Z");
};

/** A time a message was sent (episodes' `at`): an ISO 8601 date-time with its offset, in range. */
export const isoDateTime = z.iso.datetime({ offset: true }).refine(
  inIsoRange,
  "must be a date-time from 0001-01-01 to 9999-12-31 (UTC)",
);

/**
 * An instant the API is asked about: an ISO date (2026-11-01, its midnight UTC, as retrieval's
 * `after` / `before` read one) or date-time with its offset, from 0001-01-01 to 9999-12-31 UTC.
 * The one parser of `as_of` (GET /memory, GET /memory/{id}, memory-retrieve, memory.query) and of
 * memory.query's `updated_after` / `updated_before`. A date reaches Postgres as its midnight UTC,
 * never read in the session's time zone: as_of by asOfInstant (memories/as-of.ts), the filters by
 * postgres.js, which sends a timestamptz parameter as `new Date(value).toISOString()`.
 */
export const isoInstant = z.union([z.iso.datetime({ offset: true }), z.iso.date()], {
  error: "an ISO date (2026-11-01) or date-time with its offset (2026-11-01T09:30:00Z)",
}).refine(inIsoRange, "must be a date or date-time from 0001-01-01 to 9999-12-31 (UTC)");

/** An instant to answer as of (docs/graph.md#as-of): an isoInstant; a date is its midnight UTC. */
export const asOf = isoInstant;

export const threadId = withoutSecrets(
  z.string().regex(/^[\p{L}\p{N}._:@-]{1,200}$/u, "1-200 letters, digits and . _ : @ -"),
);
export const sessionId = threadId;

/** Names of memory.query agents and of memory categories (public.memory_agent_allowlists / memory_categories). */
export const agentName = z.string().regex(/^[a-z][a-z0-9_-]{0,63}$/, "lowercase letters, digits, _ or -");
export const categoryName = z.string().regex(/^[a-z][a-z0-9_]{0,63}$/, "lowercase letters, digits or _");

// Code lineage (docs/context.md#code-lineage): where a memory came from in the repository. These
// are stored (metadata, file entities), so they follow the rule for stored text.
/**
 * A repository as the client names it: `acme/web`, `github.com/acme/web`, a clone URL. A clone
 * URL's user and password (`https://x-access-token:ghs_…@github.com/acme/web`, what `git remote
 * get-url` prints for a checkout made with a token) are no part of which repository it is
 * (context/lineage.ts sameRepo ignores them): they are dropped, so no credential is stored.
 */
export const repoName = storableText(z.string().min(1).max(300))
  .refine((s) => !/\s/.test(s), "no whitespace")
  .transform((s) => s.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#]*@/i, "$1"));
/** A git branch name, by git's own ref rules (git check-ref-format --branch). */
export const branchName = storableText(z.string().min(1).max(250))
  .refine(
    (s) =>
      // deno-lint-ignore no-control-regex -- git's ref rules refuse control characters
      !/[\u0000-\u0020\u007F~^:?*[\\]/.test(s) && !s.includes("..") && !s.includes("@{") && !s.includes("//") &&
      !/^[-/]/.test(s) && !/(\/|\.|\.lock)$/.test(s) && s !== "@",
    "a git branch name (no spaces, ~ ^ : ? * [ \\, '..', '@{' or '//'; not starting with - or /, not ending with /, . or .lock)",
  );
/** A commit id: 4-64 hex digits (abbreviated or full, SHA-1 or SHA-256). */
export const commitSha = z.string().regex(/^[0-9a-fA-F]{4,64}$/, "4-64 hex digits").transform((s) => s.toLowerCase());
/** A file path as a coding agent reports it (relative to the repository); a leading ./ is dropped. */
export const filePath = storableText(z.string().min(1).max(500))
  .transform((s) => s.replace(/^(\.\/)+/, ""))
  .refine((s) => s.length > 0, "a file path");

/**
 * Where the memories of a request come from in the repository (memory-extract, memory-dedup):
 * stored in the queued job's payload and each new memory's metadata (docs/context.md#code-lineage).
 * Its repo and branch are read for secrets as remember's metadata is (redactMetadata, counted with
 * the request's redactions), before the job is queued: a token in them becomes its marker.
 */
export const codeOrigin = z.object({
  repo: repoName.optional(),
  branch: branchName.optional(),
  commit: commitSha.optional(),
}).strict();
export type CodeOrigin = z.infer<typeof codeOrigin>;
/**
 * A queued job's lineage (the extract and dedup payloads), checked by codeOrigin when the job was
 * queued: its branch may hold a redaction marker, which no git branch name may (`[`).
 */
export const queuedCodeOrigin = z.object({
  repo: repoName.optional(),
  branch: z.string().min(1).max(1000).optional(),
  commit: commitSha.optional(),
}).strict();

/** Metadata a memory carries (memory.query's filter keys, plus code lineage); small and flat on purpose. */
export const metadata = z
  .object({
    // Stored with the memory and written into the Markdown export's front matter: the same
    // character rule as content (a 400 naming the field and the character).
    agent_id: storableText(z.string().max(200)).optional(),
    run_id: storableText(z.string().max(200)).optional(),
    actor_id: storableText(z.string().max(200)).optional(),
    user_id: storableText(z.string().max(200)).optional(),
    role: z.enum(["user", "assistant", "system", "tool"]).optional(),
    category: categoryName.optional(),
    keywords: z.array(storableText(z.string().min(1).max(64))).max(20).optional(),
    repo: repoName.optional(),
    branch: branchName.optional(),
    commit: commitSha.optional(),
    files: z.array(filePath).max(50).optional(),
  })
  .strict();

/**
 * The scopes a memory in `namespace` is visible from, as '/'-terminated prefixes: global and user
 * always, plus its own project. An exact duplicate only counts inside these: the same text stored
 * for project A is invisible to project B's retrieval, so it must not make B's copy a no-op.
 */
export function visibleScopes(namespace: string, root: string): string[] {
  const [, scope, project] = namespace.split("/");
  const base = [`${root}/global/`, `${root}/user/`];
  return scope === "project" && project ? [...base, `${root}/project/${project}/`] : base;
}
