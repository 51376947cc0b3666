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
  /^(?:<[^>]*>|\$\{[A-Za-z0-9_]+(?::?\?[^}]*)?\}?|\$[A-Za-z_][A-Za-z0-9_]*|%[A-Za-z_][A-Za-z0-9_]*%|\{\{[^}]*\}\}|[x*.#-]{3,}|\[REDACTED:[a-z_]+\]|(?:your|my|the)(?:[-_ ][a-z]+)+|(?:your|my|the)(?:api)?(?:key|token|secret|password|pass)(?:here)?|changeme|change[-_]me|example(?:[-_.][\w.-]*)?|secret|password|token|null|none|nil|undefined|true|false|required|optional|await|new|yield|typeof|lambda|function|async|(?:process\.env|Deno\.env|os\.environ)\b.*|env(?:\.|\[|\(|::).*|(?:self|this|cls|config|conf|cfg|settings|options|opts|props|params|args|kwargs|req|request|ctx|context|secrets|vars|inputs)\.[\w$.]+)$/i;
/** A name a call or an index is on: a dotted path, or a word of 4+ letters, lowercase first (camel case). */
const CALLEE = String.raw`(?:[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+|[a-z_$][a-z_$]{3,}(?:[A-Z][a-z_$]+)*)[([]`;
/** Code, case kept: a call or an index on a name, a command substitution, a comparison or an arrow. */
const CODE_EXPRESSION = new RegExp(
  String.raw`^(?:${CALLEE}.*|\$\(.*|` + "`.*" +
    String.raw`|[=>]{1,2}(?:(?:null|undefined|None|nil|NULL|true|false)\b.*|${CALLEE}.*)?)$`,
);
/** A whole call or index on any name or path (`str(uuid.uuid4())`, `row[2]`, `Token::new(claims)`). */
const WHOLE_CALL = /^[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*[([].*[)\]]$/;

export const isPlaceholder = (value: string) => PLACEHOLDER.test(value.replace(/^["'`]|["'`]$/g, ""));

/**
 * An unquoted value that is source code, not a secret (a quoted one is a literal: never code). A
 * whole call counts when its brackets balance: a generated password rarely ends in a closing
 * bracket that balances the ones it opened.
 */
export function isCode(value: string): boolean {
  return CODE_EXPRESSION.test(value) || (WHOLE_CALL.test(value) && balanced(value));
}

function balanced(value: string): boolean {
  const stack: string[] = [];
  for (const c of value) {
    if (c === "(" || c === "[" || c === "{") stack.push(c);
    else if (c in OPENS && stack.pop() !== OPENS[c]) return false;
  }
  return stack.length === 0;
}

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

/** How much of the text before an assignment is read for the brackets it opened (`f(`, `[see `). */
export const LOOKBACK = 64;

/**
 * Where an unquoted value ends in the text around it: at the first closing bracket that closes one
 * opened before it on its line (`(see TOKEN=abc).`, `[DB_PASSWORD=…](#a)`, `f(KEY=val)`); a bracket
 * the value opens, or one nothing before it opened, is its own (`Tr0ub(4dor)`, `5]usNF…`). One
 * pass over the value and the LOOKBACK characters before it.
 */
export function valueInContext(value: string, before: string): string {
  const unmatched: Record<string, number> = { "(": 0, "[": 0, "{": 0 };
  const pending: Record<string, number> = { "(": 0, "[": 0, "{": 0 };
  const from = Math.max(before.lastIndexOf("\n") + 1, before.length - LOOKBACK);
  for (let i = before.length - 1; i >= from; i--) {
    const c = before[i]!;
    if (c in OPENS) pending[OPENS[c]!]!++;
    else if (c in unmatched) {
      if (pending[c]! > 0) pending[c]!--;
      else unmatched[c]!++;
    }
  }
  const own: Record<string, number> = { "(": 0, "[": 0, "{": 0 };
  let end = value.length;
  for (let i = 0; i < value.length && end === value.length; i++) {
    const c = value[i]!;
    if (c in own) own[c]!++;
    else if (c in OPENS) {
      const o = OPENS[c]!;
      if (own[o]! > 0) own[o]!--;
      else if (unmatched[o]! > 0) end = i;
    }
  }
  const cut = value.slice(0, end);
  // Inside a call's arguments, `api_key=key` passes a variable: a name is no secret there.
  return unmatched["("]! > 0 && KEYWORD_ARGUMENT.test(cut) ? "" : cut;
}

/** A variable a keyword argument passes (`api_key=key`, `token=self.token`): a name or a dotted path, no digits. */
const KEYWORD_ARGUMENT = /^[A-Za-z_][A-Za-z_]*(?:\.[A-Za-z_][A-Za-z_]*)*$/;
