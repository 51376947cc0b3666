// What a value found next to a secret's name is (redact.ts's name-based rules): a placeholder or
// a piece of source code, which stay, or a secret; and where an unquoted value ends.

// A value that stands for a secret rather than being one: `<your-key>`, `${TOKEN}`, `$TOKEN`, `***`,
// `changeme`, `process.env.X`, … (documentation and examples keep them). Source code (a file an
// agent read, in a transcript or a checkpoint's state) assigns expressions, not secrets: a call or
// an index on a name (`jwt.sign(payload`, `os.getenv(`, `tokens[0`), a member of a settings object
// (`self._api_key`, `config.client_secret`, `req.body.password`), a keyword (`await getToken()`),
// a comparison or an arrow (`apiKey == null`, `token => …`), a `${VAR` the value's scan cut short.
// A call or an index is on a name that reads as one (`getenv(`, `getToken(`, `jwt.sign(`,
// `tokens[`: letters, camel case or a dotted path), and a comparison is with a literal or a call:
// a generated password may hold `(`, `[` or `=` anywhere (`w1eP8(_&C1…`, `=*Rc4gWc…` are secrets).
const PLACEHOLDER =
  /^(?:<[^>]*>|\$\{[^}]*\}?|\$[A-Za-z_][A-Za-z0-9_]*|%[A-Za-z_][A-Za-z0-9_]*%|\{\{[^}]*\}\}|[x*.#-]{3,}|\[REDACTED:[a-z_]+\]|(?:your|my|the)[-_ ]?\w*|changeme|change[-_]me|example\w*|secret|password|token|null|none|nil|undefined|true|false|required|optional|await|new|yield|typeof|lambda|function|async|(?:process\.env|Deno\.env|os\.environ|env)\b.*|(?:self|this|cls|config|conf|cfg|settings|options|opts|props|params|args|kwargs|req|request|ctx|context|secrets|vars|inputs)\.[\w$.]+)$/i;
/** A name a call or an index is on: a dotted path, or a word of 4+ letters, lowercase first (camel case). */
const CALLEE = String.raw`(?:[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+|[a-z_$][a-z_$]{3,}(?:[A-Z][a-z_$]+)*)[([]`;
/** Code, case kept: a call or an index on a name, a comparison or an arrow (see above). */
const CODE_EXPRESSION = new RegExp(
  String.raw`^(?:${CALLEE}.*|[=>]{1,2}(?:(?:null|undefined|None|nil|NULL|true|false)\b.*|${CALLEE}.*)?)$`,
);

export const isPlaceholder = (value: string) => {
  const v = value.replace(/^["'`]|["'`]$/g, "");
  return PLACEHOLDER.test(v) || CODE_EXPRESSION.test(v);
};

/** Names whose value is a secret: `OPENAI_API_KEY`, `db_password`, `client_secret`, `GITHUB_TOKEN`, `SENTRY_DSN`. */
const SECRET_NAME =
  /(?:^|[_.-])(?:secret|secrets|token|passwd|password|pwd|pass|passphrase|credentials?|dsn|auth|api[_-]?key|apikey|access[_-]?key|secret[_-]?key|private[_-]?key|signing[_-]?key|encryption[_-]?key|master[_-]?key|service[_-]?role[_-]?key|client[_-]?secret|[a-z0-9]+[_-]key)$/i;
/** Key names that are not secrets although they end like one. */
const PUBLIC_NAME =
  /public|publishable|anon|primary|foreign|sort|cache|partition|idempotency|lookup|hash|map|object|index|unique|keyboard|hotkey|monkey|turkey|donkey|_id$|length|ttl|expir|timeout|url$|uri$|path$|file$|name$|type$|header$|count$|max|min|mode$/i;

export function secretName(name: string): boolean {
  return SECRET_NAME.test(name) && !PUBLIC_NAME.test(name);
}

export function looksRandom(value: string): boolean {
  // A quoted or unquoted value after `key: ` in prose is only taken for a secret when it looks
  // like one: long enough, and mixing letters with digits or symbols.
  const v = value.replace(/^["'`]|["'`]$/g, "");
  return v.length >= 8 && /[A-Za-z]/.test(v) && /[0-9_+/=-]/.test(v) && !/\s/.test(v);
}

const OPENS: Record<string, string> = { ")": "(", "}": "{", "]": "[" };

/**
 * A value's closing brackets at its end that open nowhere in it end the code around it
 * (`f(API_KEY=abc)`, `{TOKEN=abc}`), not the value; those a value opens are its own
 * (`Tr0ub(4dor)`). One pass, whatever the value's length.
 */
export function withoutOuterClosers(value: string): string {
  const balance: Record<string, number> = { "(": 0, "{": 0, "[": 0 };
  for (const c of value) {
    if (c in balance) balance[c]!++;
    else if (c in OPENS) balance[OPENS[c]!]!--;
  }
  let end = value.length;
  while (end > 0 && value[end - 1]! in OPENS && balance[OPENS[value[end - 1]!]!]! < 0) {
    balance[OPENS[value[end - 1]!]!]!++;
    end--;
  }
  return value.slice(0, end);
}
