// The one secret redactor. Coding sessions carry API keys, tokens, private keys and connection
// strings; a memory must never store them, and no model is ever shown them. Every writer (rules, LLM
// extraction, compaction, remember, correct, episodes, consolidation, insights) passes its text
// through redactSecrets before storing it or sending it to a model: each secret becomes
// `[REDACTED:<kind>]`, and a text that is nothing but a secret is dropped by its writer.
// docs/redaction.md lists what is caught and what is left alone (git SHAs, UUIDs, lockfile hashes).
//
// Every pattern is a plain scan with bounded repetitions (no nested quantifiers), and none re-reads a
// long window at every place it may start (the JWT rule consumes what it scanned), so the work is
// linear in the text's length whatever it holds (tests/redact.test.ts times hostile texts).

import { isCode, isPlaceholder, LOOKBACK, looksRandom, secretName, valueInContext } from "./secret-values.ts";

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

interface Rule {
  kind: SecretKind | ((secret: string, match: string) => SecretKind);
  re: RegExp;
  /** The capture groups that may hold the secret, the first one set wins (the rest of the match is kept); none: the whole match. */
  group?: number[];
  /** Extra check on the secret (look-alikes that pass the pattern). */
  accept?: (secret: string, match: RegExpExecArray) => boolean;
  /** A secret known by what names it (`token: …`, `Bearer …`, `--password …`), not by its own shape. */
  byName?: true;
  /** A match the text continues with one of these is no secret (a call, an index, an expansion: `str(`, `row[`, `${`). */
  notBefore?: RegExp;
  /** The secret without what the text before the match (its last LOOKBACK characters) says is not its own. */
  trim?: (secret: string, match: RegExpExecArray, before: string) => string;
}

/** A JWT whose payload says role service_role is a Supabase service key: it bypasses row level security. */
function jwtKind(token: string): SecretKind {
  try {
    const payload = token.split(".")[1]!.replace(/-/g, "+").replace(/_/g, "/");
    const claims = JSON.parse(atob(payload + "=".repeat((4 - (payload.length % 4)) % 4)));
    return claims?.role === "service_role" ? "supabase_service_role_jwt" : "jwt";
  } catch {
    return "jwt";
  }
}

const mixedCase = (s: string) => /[a-z]/.test(s) && /[A-Z]/.test(s) && /[0-9]/.test(s);

/** The `NAME=value` / `name: value` rule, its unquoted value of `valueChar`s, through brackets or stopping at them. */
function assignment(valueChar: string, throughBrackets: boolean): Rule {
  return {
    kind: "secret_assignment",
    re: new RegExp(
      String
        .raw`(["']?)(?<![A-Za-z0-9_.-])([A-Za-z_][A-Za-z0-9_.-]{0,80})\1[ \t]{0,8}(=|:)[ \t]{0,8}(?:"([^"\n]{1,512})"|'([^'\n]{1,512})'|(${valueChar}{1,512}))`,
      "g",
    ),
    group: [4, 5, 6],
    // Where the unquoted value ends, read in the text before it; the first pass also runs through
    // brackets, the second stops at them and leaves a call, an index or an expansion alone.
    trim: (s, m, before) => (m[6] === undefined ? s : valueInContext(s, before, m[2]!)),
    ...(throughBrackets ? {} : { notBefore: /[([{]/ }),
    // After `=` (.env, shells, DSNs) any value; after `:` a quoted one (JSON, YAML) or one that looks random.
    accept: (s, m) =>
      secretName(m[2]!) && !isPlaceholder(s) &&
      !(m[6] !== undefined && isCode(s, /\s(?:=|:)|(?:=|:)\s/.test(m[0]))) &&
      (m[3] === "=" || m[6] === undefined || looksRandom(s)),
    byName: true,
  };
}

// Order matters: what is specific first, so a key inside an assignment is named by its provider.
const RULES: Rule[] = [
  {
    kind: "private_key",
    re:
      /-----BEGIN (?:[A-Z0-9]{1,20} ){0,4}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END (?:[A-Z0-9]{1,20} ){0,4}PRIVATE KEY(?: BLOCK)?-----|$)/g,
  },
  // The header segment is consumed whether or not a payload and signature follow (then the match is
  // kept as it is): a scan that failed would start again at the next `eyJ` inside the same run and
  // re-read up to 4,096 characters each time (`eyJ-eyJ-…`: quadratic up to that cap).
  {
    kind: jwtKind,
    re: /\beyJ[A-Za-z0-9_-]{8,4096}(?:\.eyJ[A-Za-z0-9_-]{8,8192}\.[A-Za-z0-9_-]{8,4096})?/g,
    accept: (s) => s.includes("."),
  },
  { kind: "anthropic_key", re: /\bsk-ant-(?:api|admin|oat|sid)[0-9]{2}-[A-Za-z0-9_-]{20,400}/g },
  {
    kind: "openai_key",
    re: /\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,400}/g,
    // "sk-learn-compatible-estimators" is prose: a key mixes cases and digits.
    accept: (s) => mixedCase(s.slice(3)) && !s.startsWith("sk-ant-"),
  },
  { kind: "aws_access_key", re: /\b(?:AKIA|ASIA|ABIA|ACCA|AROA|AIDA|ANPA|AGPA)[A-Z0-9]{16}\b/g },
  { kind: "gcp_api_key", re: /\bAIza[0-9A-Za-z_-]{35}\b/g },
  { kind: "gcp_oauth_token", re: /\bya29\.[0-9A-Za-z_-]{20,2048}/g },
  { kind: "github_token", re: /\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b/g },
  { kind: "stripe_key", re: /\b(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,247}|whsec_[A-Za-z0-9]{20,247})\b/g },
  { kind: "slack_token", re: /\bxox[abposr]-[A-Za-z0-9-]{10,250}/g },
  { kind: "supabase_secret_key", re: /\bsb_secret_[A-Za-z0-9_-]{16,200}/g },
  // scheme://user:password@host: the password only.
  {
    kind: "password",
    re: /\b[a-z][a-z0-9+.-]{1,20}:\/\/[^\s:@/?#'"`[\]]{1,256}:([^\s@/'"`]{1,256})@/gi,
    group: [1],
    accept: (s) => !isPlaceholder(s),
  },
  // Authorization: Bearer <token>, Basic <credentials>.
  {
    kind: "bearer_token",
    re: /\b(?:Bearer|Basic|Token)\s+([A-Za-z0-9._~+/-]{16,4096}=*)/g,
    group: [1],
    accept: (s) => /[0-9]/.test(s) && /[A-Za-z]/.test(s) && !isPlaceholder(s),
    byName: true,
  },
  // ?access_token=…&api_key=… in URLs.
  {
    kind: "url_secret",
    re:
      /[?&](?:access_token|refresh_token|id_token|token|api_key|apikey|key|secret|client_secret|password|sig|signature|auth)=([^&\s#'"`]{6,2048})/gi,
    group: [1],
    accept: (s) => !isPlaceholder(s),
  },
  // --password=…, --token … of command lines.
  {
    kind: (_s, m) => (/pass/i.test(m) ? "password" : "secret_assignment"),
    re:
      /(?:^|\s)--?(?:password|passwd|token|api-key|apikey|secret|auth-token|access-token)(?:=|\s+)(?:"([^"\n]{1,512})"|'([^'\n]{1,512})'|([^\s'"`-][^\s'"`]{3,511}))/gi,
    group: [1, 2, 3],
    accept: (s, m) => !isPlaceholder(s) && !(m[3] !== undefined && isCode(s, false)),
    byName: true,
  },
  // NAME=value (.env, shells, DSNs `password=…`) and name: value (YAML, JSON) for names of secrets.
  // A password may hold brackets (generated ones often do): the unquoted value runs to a blank, a
  // comma or a semicolon, up to a closing bracket of the code around it (valueInContext).
  assignment(/[^\s"'`,;]/.source, true),
  // Again, each value stopping at a bracket: an assignment inside another name's value
  // (`config={password:S3cr3t}`), which the first pass read as part of that value. A value a
  // bracket follows is a call, an index or an expansion (`str(`, `row[`, `${`), judged whole by the first pass.
  assignment(/[^\s"'`,;(){}[\]]/.source, false),
];

const PASSWORD_NAME = /^(?:pg|ssh)pass(?:word)?$|(?:^|[_.-])(?:passwd|password|pwd|pass|passphrase)$/i;

/**
 * What every rule's match holds, one of (a superset: case ignored): a `=` or `:` (assignments, URL
 * passwords and parameters), a key's prefix, a JWT's `eyJ`, a key block's BEGIN, an auth scheme or
 * a command line's secret word. A text without any is read once, not by every rule: a checkpoint
 * of a million short strings and keys cost 1 µs each (1.9 s of the event loop for 4 MB). A rule
 * added needs its own literal here (tests/redact.test.ts runs the leak corpus through this test).
 */
export const MAY_HOLD_SECRET =
  /[=:]|eyJ|sk|rk_|whsec_|A(?:KIA|SIA|BIA|CCA|ROA|IDA|NPA|GPA|Iza)|ya29\.|gh[pousr]_|github_pat_|xox|sb_secret_|BEGIN|bearer|basic|token|pass|secret|api-?key|auth/i;

/**
 * How a text is read: `text` (prose, config, transcripts: every rule) or `id` (an identifier: only
 * secrets known by their own shape, a key's prefix, a JWT, a URL's password). In an id, `name:value`
 * is a naming scheme, not an assignment: `auth:login-bug-123` is a thread, `token:refresh-fix-7` a run.
 */
export type ReadAs = "text" | "id";

/** Replaces every secret in `text` by `[REDACTED:<kind>]`. */
export function redactSecrets(text: string, as: ReadAs = "text"): Redaction {
  if (!MAY_HOLD_SECRET.test(text)) return { text, counts: {}, total: 0, onlySecret: false };
  const counts: RedactionCounts = {};
  let total = 0;
  let out = text;
  for (const rule of RULES) {
    if (as === "id" && rule.byName) continue;
    rule.re.lastIndex = 0;
    out = out.replace(rule.re, (...args: unknown[]) => {
      const match = args[0] as string;
      const groups = args.slice(1, -2) as (string | undefined)[];
      const offset = args.at(-2) as number;
      const exec = [match, ...groups] as unknown as RegExpExecArray;
      const found = rule.group ? rule.group.map((g) => groups[g - 1]).find((g) => g !== undefined) : match;
      const secret = found !== undefined && rule.trim
        ? rule.trim(found, exec, (args.at(-1) as string).slice(Math.max(0, offset - LOOKBACK), offset))
        : found;
      if (!secret || secret.includes("[REDACTED:")) return match;
      if (rule.notBefore?.test((args.at(-1) as string)[offset + match.length] ?? "")) return match;
      if (rule.accept && !rule.accept(secret, exec)) return match;
      let kind = typeof rule.kind === "function" ? rule.kind(secret, match) : rule.kind;
      if (kind === "secret_assignment" && PASSWORD_NAME.test(exec[2] ?? "")) kind = "password";
      counts[kind] = (counts[kind] ?? 0) + 1;
      total++;
      if (!rule.group) return marker(kind);
      // Keep what surrounds the secret (the name, the URL, the quotes' owner).
      const at = match.lastIndexOf(secret);
      return match.slice(0, at) + marker(kind) + match.slice(at + secret.length);
    });
  }
  return { text: out, counts, total, onlySecret: total > 0 && nothingButSecrets(out) };
}

/**
 * A free-text field stored beside a memory's content (a model's summary, compressed form or index
 * key, a correction's reason, a resolution's note): redacted like the content; `undefined` when
 * nothing but a secret is left (the field is dropped, what it belongs to is kept).
 */
export function redactField(text: string | undefined, as: ReadAs = "text"): FieldRedaction {
  if (text === undefined) return { text, counts: {}, total: 0, dropped: 0 };
  const r = redactSecrets(text, as);
  return { text: r.onlySecret ? undefined : r.text, counts: r.counts, total: r.total, dropped: r.onlySecret ? 1 : 0 };
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
