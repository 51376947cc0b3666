// The one secret redactor. Coding sessions carry API keys, tokens, private keys and connection
// strings; a memory must never store them, and no model is ever shown them. Every writer (rules, LLM
// extraction, compaction, remember, correct, episodes, consolidation, insights) passes its text
// through redactSecrets before storing it or sending it to a model: each secret becomes
// `[REDACTED:<kind>]`, and a text that is nothing but a secret is dropped by its writer.
// docs/redaction.md lists what is caught and what is left alone (git SHAs, UUIDs, lockfile hashes).
// The rules are secret-rules.ts (commands' and files' own: secret-rules-formats.ts); which names
// hold a secret, secret-names.ts; what a value next to such a name is (a placeholder, code, a
// secret), secret-values.ts.
//
// Every pattern is a plain scan with bounded repetitions (no nested quantifiers), and none re-reads a
// long window at every place it may start (the JWT rule consumes what it scanned), so the work is
// linear in the text's length whatever it holds (tests/redact.test.ts counts the work on hostile texts).

import { shortenToFit } from "./fit-text.ts";
import { RULES } from "./secret-rules.ts";
import { passwordName, secretName } from "./secret-names.ts";
import { LOOKBACK } from "./secret-values.ts";
import { foldLookalikes } from "./secret-lookalikes.ts";

export const SECRET_KINDS = [
  "private_key",
  "supabase_service_role_jwt",
  "jwt",
  "anthropic_key",
  "openai_key",
  "aws_access_key",
  "gcp_api_key",
  "gcp_oauth_token",
  "github_token",
  "stripe_key",
  "slack_token",
  "supabase_secret_key",
  "agent_token",
  "password",
  "bearer_token",
  "url_secret",
  "secret_assignment",
] as const;
export type SecretKind = typeof SECRET_KINDS[number];

export type RedactionCounts = Partial<Record<SecretKind, number>>;

export interface Redaction {
  text: string;
  /** Secrets replaced, by kind. */
  counts: RedactionCounts;
  total: number;
  /** Nothing is left but the secrets (and the names they were assigned to): the writer drops the text. */
  onlySecret: boolean;
}

export const marker = (kind: SecretKind) => `[REDACTED:${kind}]`;
const MARKER_RE = /\[REDACTED:[a-z_]{1,40}\]/g;

/**
 * What every rule's match holds, one of (a superset: case ignored): a `=` or `:` (assignments, URL
 * passwords and parameters), a key's prefix, a JWT's `eyJ`, a key block's BEGIN, an auth scheme or
 * a command line's secret word (`-pw`), an XML element's closing tag, PHP's `define(`, `setenv(`,
 * `SetEnvironmentVariable(`, the clients whose `-p` takes a password (`mysql`, `docker login`), `setx`. A
 * text without any is read once, not by every rule: a checkpoint
 * of a million short strings and keys cost 1 µs each (1.9 s of the event loop for 4 MB). A rule
 * added needs its own literal here (tests/redact.test.ts runs the leak corpus through this test),
 * unless one already here is in every match (`secret` is in Supabase's `sb_secret_`).
 */
export const MAY_HOLD_SECRET =
  /[=:]|eyJ|sk|rk_|whsec_|A(?:KIA|SIA|BIA|CCA|ROA|IDA|NPA|GPA|Iza)|ya29\.|gh[pousr]_|github_pat_|xox|dvm_|BEGIN|bearer|basic|token|pass|-pw|secret|api-?key|auth|<\/|define\(|setenv\(|environmentvariable\(|mysql|mariadb|login|setx/i;

/**
 * How a text is read: `text` (prose, config, transcripts: every rule) or `id` (an identifier: only
 * secrets known by their own shape, a key's prefix, a JWT, a URL's password). In an id, `name:value`
 * is a naming scheme, not an assignment: `auth:login-bug-123` is a thread, `token:refresh-fix-7` a run.
 */
export type ReadAs = "text" | "id";

/**
 * An id holding a blank, or starting with `NAME=`, is not a naming scheme: `DB_PASSWORD=hunter2abc`
 * or `password: Xk9fj2Lq` sent as a metadata id was stored as sent (2026-11-29 red team), where the
 * same words in a statement are redacted. Such an id is read by every rule; a `=` further in
 * (`fix/auth=token-abc123`, a branch) stays an id's.
 */
const ID_AS_ASSIGNMENT = /\s|^[A-Za-z_][\w.-]*=/;

/**
 * A run of default-ignorable characters (soft hyphen, zero-width space and joiners, word joiner,
 * variation selectors, Hangul fillers, …) between two printable ASCII characters: it shows nothing
 * there, but it split a key for every rule, so `ghp_aB3d<U+00AD>E5f…` (a soft hyphen, as text copied
 * from a web page may hold) was stored whole, in a memory, an episode or a checkpoint. Secrets are
 * read in the text without such runs (docs/redaction.md).
 */
const IGNORABLE_IN_ASCII = /(?<=[\x21-\x7e])\p{Default_Ignorable_Code_Point}+(?=[\x21-\x7e])/gu;
const IGNORABLE = /\p{Default_Ignorable_Code_Point}/u;

/**
 * Replaces every secret in `text` by `[REDACTED:<kind>]`. A text with a secret comes back without
 * the invisible runs inside ASCII words (IGNORABLE_IN_ASCII); one without any secret as it was sent.
 * The rules read it with look-alike letters folded to ASCII (secret-lookalikes.ts); what comes back
 * keeps them, but in a secret (its marker replaces it).
 */
export function redactSecrets(text: string, as: ReadAs = "text"): Redaction {
  const read = IGNORABLE.test(text) ? text.replace(IGNORABLE_IN_ASCII, "") : text;
  const folded = foldLookalikes(read);
  if (!MAY_HOLD_SECRET.test(folded)) return { text, counts: {}, total: 0, onlySecret: false };
  const counts: RedactionCounts = {};
  let total = 0;
  let out = folded;
  // `out` as sent (look-alikes kept), changed where `out` is: both have the same length throughout.
  // A look-alike from outside the BMP (`𝐀`, two units) folds to one: the places differ, so a text
  // with a secret and such a letter comes back folded, its look-alikes as their ASCII letters.
  let kept = folded === read || folded.length !== read.length ? undefined : read;
  const byShapeOnly = as === "id" && !ID_AS_ASSIGNMENT.test(folded);
  for (const rule of RULES) {
    if (byShapeOnly && rule.byName) continue;
    rule.re.lastIndex = 0;
    const edits: Edit[] = [];
    out = out.replace(rule.re, (...args: unknown[]) => {
      const match = args[0] as string;
      const groups = args.slice(1, -2) as (string | undefined)[];
      const offset = args.at(-2) as number;
      const exec = Object.assign([match, ...groups], {
        index: offset,
        input: args.at(-1),
      }) as unknown as RegExpExecArray;
      const found = rule.group ? rule.group.map((g) => groups[g - 1]).find((g) => g !== undefined) : match;
      const secret = found !== undefined && rule.trim
        ? rule.trim(found, exec, (args.at(-1) as string).slice(Math.max(0, offset - LOOKBACK), offset))
        : found;
      if (!secret || secret.includes("[REDACTED:")) return match;
      if (rule.notBefore?.test((args.at(-1) as string)[offset + match.length] ?? "")) return match;
      if (rule.accept && !rule.accept(secret, exec)) return match;
      let kind = typeof rule.kind === "function" ? rule.kind(secret, exec) : rule.kind;
      if (kind === "secret_assignment" && rule.name && passwordName(exec[rule.name] ?? "")) kind = "password";
      counts[kind] = (counts[kind] ?? 0) + 1;
      total++;
      // Keep what surrounds the secret (the name, the URL, the quotes' owner).
      // A trimmed secret is its group's start (the group ends the match: its last occurrence).
      const at = rule.group ? match.lastIndexOf(found!) : 0;
      const end = rule.group ? at + secret.length : match.length;
      edits.push({ offset, length: match.length, at, end, marker: marker(kind) });
      return match.slice(0, at) + marker(kind) + match.slice(end);
    });
    if (kept !== undefined && edits.length > 0) kept = applyEdits(kept, edits);
  }
  if (total === 0) return { text, counts, total, onlySecret: false };
  return { text: kept ?? out, counts, total, onlySecret: nothingButSecrets(out) };
}

/** One secret replaced by a rule: its match's place, the secret's within the match, its marker. */
interface Edit {
  offset: number;
  length: number;
  at: number;
  end: number;
  marker: string;
}

/** The same replacements made in the text as sent (the rule read its folded copy, of equal length). */
function applyEdits(text: string, edits: Edit[]): string {
  let out = "";
  let from = 0;
  for (const e of edits) {
    const match = text.slice(e.offset, e.offset + e.length);
    out += text.slice(from, e.offset) + match.slice(0, e.at) + e.marker + match.slice(e.end);
    from = e.offset + e.length;
  }
  return out + text.slice(from);
}

/**
 * A free-text field stored beside a memory's content (a model's summary, compressed form or index
 * key, a correction's reason, a resolution's note): redacted like the content; `undefined` when
 * nothing but a secret is left (the field is dropped, what it belongs to is kept). With `maxChars`
 * (a field whose column checks its length), a text the markers made longer than that is shortened
 * to fit: `[REDACTED:password]` is longer than `hunter2`, and a field sent within its limit was
 * refused by the column's check (422).
 */
export function redactField(text: string | undefined, as: ReadAs = "text", maxChars?: number): FieldRedaction {
  if (text === undefined) return { text, counts: {}, total: 0, dropped: 0 };
  const r = redactSecrets(text, as);
  if (r.onlySecret) return { text: undefined, counts: r.counts, total: r.total, dropped: 1 };
  return { text: maxChars ? withinChars(r.text, maxChars) : r.text, counts: r.counts, total: r.total, dropped: 0 };
}

/** `text` in at most `max` characters (code points, as Postgres' char_length counts), shortened with `…`. */
function withinChars(text: string, max: number): string {
  const fits = (s: string) => [...s].length <= max;
  if (fits(text)) return text;
  return shortenToFit(text, fits) ?? `${[...text].slice(0, max - 1).join("")}…`;
}

/** A field's redaction: its text (undefined when dropped), the secrets replaced, whether it was dropped. */
export interface FieldRedaction {
  text: string | undefined;
  counts: RedactionCounts;
  total: number;
  /** 1 when the field was nothing but a secret and is dropped. */
  dropped: number;
}

// What may surround a secret without saying anything: assignment keywords, the names secrets are
// assigned to (ALL_CAPS_WITH_UNDERSCORES or a secret's name), the auth scheme words.
const FILLER_WORDS = new Set([
  "export",
  "set",
  "setx",
  "env",
  "bearer",
  "basic",
  "token",
  "authorization",
  "auth",
  "key",
  "api",
  "secret",
  "password",
  "is",
  "the",
  "my",
  "here",
  "use",
  "this",
  "it",
]);

function nothingButSecrets(redacted: string): boolean {
  const words = redacted.replace(MARKER_RE, " ").match(/[\p{L}\p{N}][\p{L}\p{N}_.-]*/gu) ?? [];
  return words.every((w) => FILLER_WORDS.has(w.toLowerCase()) || /^[A-Z0-9]+(?:_[A-Z0-9]+)+$/.test(w) || secretName(w));
}

/** Sums counts (for a writer that redacts several texts). */
export function addCounts(into: RedactionCounts, from: RedactionCounts): RedactionCounts {
  for (const [k, n] of Object.entries(from) as [SecretKind, number][]) into[k] = (into[k] ?? 0) + n;
  return into;
}
