// The secret redactor's rules (redact.ts runs them in this order): secrets known by their own
// shape (a key's prefix, a JWT, a key block, a URL's password) and those known by what names them
// (`--password …`, `DB_PASSWORD=…`, `dbPassword: "…"`); those of particular commands and files
// (`curl -u user:…`, `<password>…</password>`, `.pgpass`, `setx`) are secret-rules-formats.ts's.
import type { SecretKind } from "./redact.ts";
import { holdsAnyValue, NAME_END, PW_ABBREVIATION, secretName } from "./secret-names.ts";
import {
  isCode,
  isPlaceholder,
  isVariable,
  LOOKBACK,
  looksRandom,
  plainSecret,
  regexGroup,
  shortOrNumber,
  valueInContext,
} from "./secret-values.ts";
import { endsLine, FORMAT_RULES, OPTION_START } from "./secret-rules-formats.ts";

export interface Rule {
  kind: SecretKind | ((secret: string, match: RegExpExecArray) => SecretKind);
  re: RegExp;
  /** The capture groups that may hold the secret, the first one set wins (the rest of the match is kept); none: the whole match. */
  group?: number[];
  /** Extra check on the secret (look-alikes that pass the pattern); the match's `index` and `input` are set. */
  accept?: (secret: string, match: RegExpExecArray) => boolean;
  /** A secret known by what names it (`token: …`, `Bearer …`, `--password …`), not by its own shape. */
  byName?: true;
  /** The capture group of the name the secret is assigned to: a password's name makes it a `password`. */
  name?: number;
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

/**
 * The `NAME=value` / `name: value` rule, its unquoted value of `valueChar`s, through brackets or
 * stopping at them. Also Go's `:=` and PHP's, Perl's and Ruby's `=>`, of a quoted value only
 * (`password := os.Getenv("PW")`, `'password' => $request->input('password')` are code; a
 * Makefile's upper-case `NAME := value` is read as `=`). A name starts only where one ends like a
 * secret's (NAME_END), so another name's value is read too (`run: DB_PASSWORD=… ./deploy.sh`).
 */
function assignment(valueChar: string, throughBrackets: boolean): Rule {
  return {
    kind: "secret_assignment",
    re: new RegExp(
      String
        .raw`((?:\\?["'])?)(?<![A-Za-z0-9_.-])([A-Za-z_][A-Za-z0-9_.-]{0,80})(?<=${NAME_END})\1(?:(?<=["'])\]|${TYPE_ANNOTATION})?[ \t]{0,8}(:=|=>|=|:)[ \t]{0,8}(?:${WRAPPED}${STRING_PREFIX}"((?:[^"\\\n]|\\.){0,512})"|${WRAPPED}${STRING_PREFIX}'((?:[^'\\\n]|\\.){0,512})'|\x60([^\x60\n]{1,512})\x60|\\"([^"\\\n]{1,512})\\"|(${valueChar}{1,512}))`,
      "gi",
    ),
    group: [4, 5, 6, 7, 8],
    name: 2,
    // Where the unquoted value ends, read in the text before it; the first pass also runs through
    // brackets, the second stops at them and leaves a call, an index or an expansion alone.
    trim: (s, m, before) => (m[8] === undefined ? s : valueInContext(s, before, m[2]!)),
    ...(throughBrackets ? {} : { notBefore: /[([{]/ }),
    accept: assigned,
    byName: true,
  };
}

/**
 * After `=` (.env, shells, DSNs) any value; after `:` a quoted one (JSON, YAML), one that looks
 * random, or one alone on its line after a password's name (`password: hunter2`, plainSecret).
 */
function assigned(s: string, m: RegExpExecArray): boolean {
  const [, quote, name, op] = m as unknown as string[];
  const unquoted = m[8] !== undefined;
  // A variable passed under its own name (`api_key=api_key,`), an interpolation (`f"Bearer {t}"`,
  // `` `${prefix}_${id}` ``): no literal secret.
  if (
    !secretName(name!) || isPlaceholder(s) || s === name || interpolated(s, m) || workingDirectory(s, m) ||
    statusWord(s, m)
  ) {
    return false;
  }
  if (unquoted) {
    // `user["password"] = hashed`: an index is code's, where a literal is quoted.
    if (m[0][m[1]!.length * 2 + m[2]!.length] === "]") return false;
    const spaced = /\s(?:[:=]|=>)|[:=>]\s/.test(m[0]);
    const next = m.input[m.index + m[0].length] ?? "";
    // A tuple's or a list's first item (`auth=(user, pw)`), a call's first argument (`auth =
    // HTTPBasicAuth(user, pw)`), a call on a literal (`auth=HTTPBasicAuth('u', …`, `api_key =
    // Field(default="")`).
    const literalAround = (/^(?:[A-Za-z_$][\w$.]*)?[([{][^)\]}]*$/.test(s) && next === ",") ||
      ((/[([]$/.test(s) || /^[A-Za-z_$][\w$.]*\([^)]*=$/.test(s)) && /["'`]/.test(next));
    if (isCode(s, spaced) || regexGroup(s) || isVariable(s, name!, spaced) || literalAround) return false;
    if (spaced && shortOrNumber(s, op === ":")) return false;
    if (spaced && readsOn(m.input, m.index + m[0].length)) return false;
    // Unpacking into names (`user, pw = auth, None`): each value is a variable's, as each target is.
    if (spaced && next === "," && TUPLE_TARGETS.test(m.input.slice(Math.max(0, m.index - LOOKBACK), m.index))) {
      return false;
    }
  }
  if (op === "=") return true;
  if (op === ":=") return !unquoted || name === name!.toUpperCase();
  // Ruby's `:name =>`, not a path's `::` (Rust's match arm `Kind::Token => "access token"`).
  if (op === "=>") return !unquoted && (quote !== "" || rubySymbol(m.input, m.index) || perlPair(m));
  return !unquoted || looksRandom(s) ||
    (holdsAnyValue(name!) && endsLine(m.input, m.index + m[0].length) && plainSecret(s));
}

/**
 * The shell's `PWD=/home/me/app` (`env`'s output): a directory. ODBC's `PWD=` is a password, also
 * after a connection string's `;` and blanks (`Server=db; PWD=/x`).
 */
const workingDirectory = (s: string, m: RegExpExecArray) =>
  /^pwd$/i.test(m[2]!) && m[8] !== undefined && /^(?:~|\/[\w.@+-]*)(?:\/[\w.@+-]+)*\/?$/.test(s) &&
  !/;[ \t]*$/.test(m.input.slice(Math.max(0, m.index - 8), m.index));

/**
 * A CPU's program status word in a register dump (`PSW=00000246`, `psw=0x0246`, s390's `Krnl PSW :
 * 0704c00180000000 …`): a bare `psw` and a hex word, zero-padded, `0x`-prefixed or holding a letter.
 * `psw=12345678` and `EMAIL_PSW=…` stay passwords.
 */
const statusWord = (s: string, m: RegExpExecArray) =>
  /^psw$/i.test(m[2]!) && m[8] !== undefined && /^(?:0[xX]?[0-9A-Fa-f]*|[0-9]*[A-Fa-f][0-9A-Fa-f]*)$/.test(s) &&
  s.length <= 18;

/** The names a line unpacks into before the last one (`user, ` of `user, pw = …`), alone on their line. */
const TUPLE_TARGETS = /(?:^|\n)[ \t]*(?:[A-Za-z_][\w.]*[ \t]*,[ \t]*)+$/;

const rubySymbol = (text: string, at: number) => text[at - 1] === ":" && text[at - 2] !== ":";

/**
 * Perl's bare `password => "…"` is a pair of a list: after another pair's `,` or alone on its line
 * (a hash's), or first in brackets when another pair follows or the line is Perl's (`my %h = (`,
 * `->new(`). JavaScript's arrow returning a literal reads the same (`.then(password => "x")`, `f =
 * password => "x"`): an arrow is first in its call's brackets or after `=` (`(password) =>` is no pair).
 */
function perlPair(m: RegExpExecArray): boolean {
  const line = m.input.slice(Math.max(0, m.index - LOOKBACK), m.index).split("\n").at(-1)!.trimEnd();
  PAIR_END.lastIndex = m.index + m[0].length;
  const end = PAIR_END.exec(m.input)?.[1];
  // A pair's key is a lower-case word: `CredentialType.Token => "…"` is C#'s switch arm, `Token =>` Rust's.
  if (end === undefined || !/^[a-z][a-z0-9_]*$/.test(m[2]!)) return false;
  const prev = line.at(-1) ?? "";
  // A method called with `.` is JavaScript's (`.then(password => "x", onError)`): Perl's is `->`.
  return prev === "," || prev === "" ||
    (/[({]/.test(prev) && ((end === "," && !/\.[\w$]+[ \t]*\($/.test(line)) || PERL_LINE.test(line)));
}
// (A `# comment` may follow a pair alone on its line.)
const PAIR_END = /[ \t]*([,)};#]|\r?\n|$)/y;
const PERL_LINE = /->|\b(?:my|our|local)[ \t]*[%$@(]|%[A-Za-z_]\w*[ \t]*=/;

/**
 * A declared type between a name and its `=` (`const apiKey: string = "…"`, `password: str = "…"`),
 * or Go's, without a colon (`var password string = "…"`, `var key []byte = …`).
 */
const TYPE_ANNOTATION = String
  .raw`(?:[ \t]{0,8}:[ \t]{0,8}[A-Za-z_][\w.]{0,40}(?:<[^<>\n]{0,40}>|\[[^\]\n]{0,40}\])?\??|[ \t]{1,8}(?:string|\[\]byte))(?=[ \t]{1,8}=[ \t])`;

/** A conversion the literal is wrapped in (Rust's `String::from("…")`, Go's `[]byte("…")`): the string is the secret. */
const WRAPPED = String.raw`(?:(?:String::from|\[\]byte)\([ \t]{0,4})?`;

/** Python's and C#'s string prefixes (`r"…"`, `b'…'`, `@"…"`): the marker replaces the string, not its prefix. */
const STRING_PREFIX = String.raw`(?:(?<![\w$@])(?:[rbuf]{1,2}|[@$]{1,2}))?`;

/**
 * Not a literal in backticks or a formatted string: one built from variables (a template's `${…}`,
 * an f-string's or `$"…"`'s `{…}`), or Markdown's code spans around a name.
 */
function interpolated(s: string, m: RegExpExecArray): boolean {
  // Markdown's code spans are no template: `` `password=`/`pwd=` `` (a name in backticks, or a
  // blank inside them).
  if (m[6] !== undefined) return s.includes("${") || m.input[m.index - 1] === "\x60" || /^\s|\s$/.test(s);
  const quoted = m[4] ?? m[5];
  if (quoted === undefined || !/\{[^}]*\}/.test(s)) return false;
  const open = m[0].length - s.length - 2;
  return /(?:[fF][rR]?|[rR][fF]|\$@?|@\$)$/.test(m[0].slice(0, open));
}

/**
 * An operator follows a value: an expression goes on (`usage === "sign"`, `a = b = ''`,
 * `Whitespace + group(`, `x ?? y`). Not a word nor a dash, which prose puts after a password too
 * (`DB_PASSWORD = hunter2 and restart`, `… - rotate it`).
 */
function readsOn(text: string, at: number): boolean {
  OPERATOR_NEXT.lastIndex = at;
  return OPERATOR_NEXT.test(text);
}
const OPERATOR_NEXT = /[ \t]+[+*/%&|^<>!?=]/y;

/**
 * Option names of secrets; after a quote or `=` only `--option=value` (`"--token " + x` is no option's
 * value). `--pw` with two dashes only: `-pw` is also two flags (`ss -pw`), PuTTY's is its own rule.
 */
const SECRET_OPTION = "(?:password|passwd|-pw|token|api-key|apikey|secret|auth-token|access-token)";
const OPTION_IN_WORD = String.raw`(?<=["'=\x60])`;

// Order matters: what is specific first, so a key inside an assignment is named by its provider.
export const RULES: Rule[] = [
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
  // This service's own agent tokens (agent-tokens.ts: dvm_ + 32 random bytes in base64url), before the
  // bearer and assignment rules so `Authorization: Bearer dvm_…` is named for what it is. A `_` or
  // `-` may touch it on either side (`_dvm_…_` in Markdown, `dvm_…_old`): the token is in there all
  // the same, so the run is redacted whole rather than left as sent.
  { kind: "agent_token", re: /(?<![A-Za-z0-9])dvm_[A-Za-z0-9_-]{43,200}/g },
  // scheme://user:password@host: the password only (also with no user: `redis://:password@host`).
  {
    kind: "password",
    re: /\b[a-z][a-z0-9+.-]{1,20}:\/\/[^\s:@/?#'"`[\]]{0,256}:([^\s@/'"`]{1,256})@/gi,
    group: [1],
    accept: (s) => !isPlaceholder(s),
  },
  // Authorization: Bearer <token>, Basic <credentials> (lower case after `Authorization:`, GitHub's `token …`).
  {
    kind: "bearer_token",
    re:
      /\b(?:Bearer|Basic|Token|(?<=[Aa]uthorization["']?:[ \t]{0,4}["']?)(?:bearer|basic|token))\s+([A-Za-z0-9._~+/-]{16,4096}=*)/g,
    group: [1],
    accept: (s) => /[0-9]/.test(s) && /[A-Za-z]/.test(s) && !isPlaceholder(s),
    byName: true,
  },
  // ?access_token=…&api_key=… in URLs; a password's short name (`&pw=`, `?pwd=`) is a password that
  // ends at its `&` (the name rules ran on through `&user=bob`).
  {
    // Group 1 is a token's or a key's parameter, group 2 a password's short name.
    kind: (_s, m) => (m[1] !== undefined ? "url_secret" : "password"),
    re: new RegExp(
      String
        .raw`[?&](?:(?:access_token|refresh_token|id_token|token|api_key|apikey|key|secret|client_secret|password|sig|signature|auth)=([^&\s#'"\x60]{6,2048})|(?:passwd|pwd|pass|${PW_ABBREVIATION})=([^&\s#'"\x60]{1,512}))`,
      "gi",
    ),
    group: [1, 2],
    accept: (s) => !isPlaceholder(s),
  },
  // --password=…, --token … of command lines, also inside brackets or quotes (`args=(--password=…)`).
  {
    kind: (_s, m) => (/pass|-pw/i.test(m[0]) ? "password" : "secret_assignment"),
    re: new RegExp(
      String
        .raw`(?:${OPTION_START}--?${SECRET_OPTION}(?:=|\s+(?!-))|${OPTION_IN_WORD}--?${SECRET_OPTION}=)(?:"([^"\n]{1,512})"|'([^'\n]{1,512})'|([^\s'"\x60]{4,512}))`,
      "gi",
    ),
    group: [1, 2, 3],
    trim: (s, m, before) => (m[3] === undefined ? s : valueInContext(s, before, "")),
    accept: (s, m) => !isPlaceholder(s) && !(m[3] !== undefined && (isCode(s, false) || regexGroup(s))),
    byName: true,
  },
  // (The secret ends each match: the text after it is read ahead, so its place is the last.)
  ...FORMAT_RULES,
  // NAME=value (.env, shells, DSNs `password=…`) and name: value (YAML, JSON) for names of secrets.
  // A password may hold brackets (generated ones often do): the unquoted value runs to a blank, a
  // comma or a semicolon, up to a closing bracket of the code around it (valueInContext).
  assignment(/[^\s"'`,;]/.source, true),
  // Again, each value stopping at a bracket: an assignment inside another name's value
  // (`config={password:S3cr3t}`), which the first pass read as part of that value. A value a
  // bracket follows is a call, an index or an expansion (`str(`, `row[`, `${`), judged whole by the first pass.
  assignment(/[^\s"'`,;(){}[\]]/.source, false),
];
