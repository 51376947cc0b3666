// What a value found next to a secret's name is (redact.ts's name-based rules): a placeholder or
// a piece of source code, which stay, or a secret; and where an unquoted value ends.

// A value that stands for a secret rather than being one: `<your-key>`, `${TOKEN}`, `$TOKEN`, PowerShell's `$env:TOKEN`, `$1`, `***`, `…`,
// `changeme`, `missing`, `process.env.X`, Maven's `${env.X}`, a format's `%s` or `{}`, a type's name
// (`password: 'string'` in a schema), a deploy tool's token (`#{ApiKey}#`, `__ApiKey__`), a quoted
// command substitution (`"$(op read …)"`), a heredoc's start (`<<~PW`), an auth scheme a value is
// built from (`"Bearer " + token`), WordPress's `put your unique phrase here`, a validation rule
// (`'required|min:8'`: words joined by `|`), … (documentation and examples keep them). Source code (a file an
// agent read, in a transcript or a checkpoint's state) assigns expressions, not secrets: a call or
// an index on a name (`jwt.sign(payload`, `os.getenv(`, `tokens[0`), a member of a settings object
// (`self._api_key`, `config.client_secret`, `req.body.password`), a keyword (`await getToken()`),
// a comparison or an arrow (`apiKey == null`, `token => …`), a `${VAR` the value's scan cut short.
// A call or an index is on a name that reads as one (`getenv(`, `getToken(`, `jwt.sign(`,
// `tokens[`: letters, camel case or a dotted path), and a comparison is with a literal or a call:
// a generated password may hold `(`, `[` or `=` anywhere (`w1eP8(_&C1…`, `=*Rc4gWc…` are secrets).
const PLACEHOLDER =
  /^(?:<[^>]*>|\$\{\{.*|\$[A-Za-z_][A-Za-z0-9_]*|\$\d+|\$\{[A-Za-z_][\w-]*(?:\.[\w-]+)+\}|%[A-Za-z_][A-Za-z0-9_]*%|\$env:[A-Za-z_]\w*|\{\{[^}]*\}\}|[x*.#-]{3,}|…+|(?:your|my|the)(?:[-_ ][a-z]+)+|(?:your|my|the)(?:api)?(?:key|token|secret|password|pass)(?:here)?|put[-_ ]your(?:[-_ ][a-z]+)+|#\{[^}]*\}#?|__[A-Za-z][\w.-]*__|\$\(.*\)|`.*`|<<[~-]?["']?\w+["']?|(?:bearer|basic|digest|bot|token)[ :]*|[a-z_]+(?::[^|\s]*)?(?:\|[a-z_]+(?::[^|\s]*)?)+|changeme|change[-_]me|empty|missing|unset|hidden|masked|redacted|n\/a|tbd|todo|example(?:[-_.][\w.-]*)?|secret|password|token|null|none|nil|void|string|boolean|number|bigint|integer|%(?:\([\w]+\))?[sdr]|\{\w*\}|undefined|true|false|required|optional|await|new|yield|typeof|lambda|function|async|(?:process\.env|Deno\.env|os\.environ)\b.*|env(?:\.|\[|\(|::).*|(?:self|this|cls|config|conf|cfg|settings|options|opts|props|params|args|kwargs|req|request|ctx|context|secrets|vars|inputs)\.[\w$.]+)$/i;
/** A name a call or an index is on: a dotted path, or a word of 4+ letters, lowercase first (camel case). */
const CALLEE = String.raw`(?:[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+|[a-z_$][a-z_$]{3,}(?:[A-Z][a-z_$]+)*)[([]`;
/** Code, case kept: a call or an index on a name, a command substitution, a comparison or an arrow. */
const CODE_EXPRESSION = new RegExp(
  String.raw`^(?:${CALLEE}.*|\$\(.*|` + "`.*" +
    String.raw`|[=>]{1,2}(?:(?:null|undefined|None|nil|NULL|true|false)\b.*|${CALLEE}.*)?)$`,
);
/**
 * A whole call on any name or path whose arguments start as code does (`str(uuid.uuid4())`,
 * `Token::new(claims)`, `uuid4()`; not `Summer(2024)`), or an index on a lowercase or an
 * upper-case name (`row[2]`, `SECRETS[0]`; not `Hunter2[1]`).
 */
const WHOLE_CALL =
  /^(?:[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*\((?:[A-Za-z_"'].*)?\)|(?:[a-z_$][a-z0-9_$]*|[A-Z_$][A-Z0-9_$]*)\[[^\]]*\])$/;

/**
 * A shell expansion: `${VAR}`, `${1:?missing}`, `${TOKEN#Bearer }`, `${{ secrets.X }}`. One with a
 * default (`${DB_PASSWORD:-…}`) stands for that default, a value like any other: a placeholder
 * only when the default is empty, another expansion or a placeholder.
 */
const EXPANSION = /^\$\{[#!]?[\w@*]+(?:(:?[-=+?]|##?|%%?|\/\/?|,,?|\^\^?)([^}]*))?\}?$/;

export function isPlaceholder(value: string): boolean {
  const v = value.replace(/^["'`]|["'`]$/g, "");
  if (PLACEHOLDER.test(v)) return true;
  const e = EXPANSION.exec(v);
  if (!e) return false;
  const [, op, fallback] = e;
  return !/^:?[-=]$/.test(op ?? "") || !fallback || fallback.startsWith("$") || isPlaceholder(fallback);
}

/**
 * An unquoted value that is source code, not a secret (a quoted one is a literal: never code). A
 * whole call counts when its brackets balance, and only in code's spacing (`token = f(x)`): a
 * `NAME=value` of `.env` files and shells has no calls but `$(…)` and backticks.
 */
export function isCode(value: string, spaced: boolean): boolean {
  return CODE_EXPRESSION.test(value) || (spaced && WHOLE_CALL.test(value) && balanced(value));
}

/**
 * A value code assigns, not a secret, in code's spacing: after `=` at most 3 characters (`token = 0`,
 * `pw = W - L`: no password is that short), after `:` at most 2 (an object's `github_token: 1`;
 * YAML's `MYSQL_ROOT_PASSWORD: 123` is a config's password), or a number literal of code (`np.pw =
 * 1.5`, `pw = 1e-3`, `rx_pw = -72.5`, `float pw = 1500.0f`, `psw = 0x3000`): a signed fraction or
 * exponent, binary, octal, or hex of at most 8 digits, a 32-bit word's (`0x` and 64 hex digits is an
 * Ethereum private key, `0x` and 32 a token). A numeric password of 4 or more digits (`password =
 * 123456`) is one.
 */
export const shortOrNumber = (value: string, colon: boolean) => value.length <= (colon ? 2 : 3) || NUMBER.test(value);

/**
 * A regular expression's capture group after a secret's name or option, unquoted (`r"pw=(\S+)"`,
 * `/token=([^&]+)/`, `/password:\s*(\w+)/`, `password=(.*)`, `"--password=(\S+)"`): a group holding
 * a class escape, a negated class or `.*`, and closed. Not a quoted value nor a command's
 * (`sshpass -p '(ab.*cd)'`, `curl -u me:(ab.*cd)`): a password there, as is `DB_PASSWORD=(Xk9\dfj2`.
 */
export function regexGroup(value: string): boolean {
  const g = REGEX_GROUP.exec(value);
  return g !== null && value.includes(")", g[0].length);
}
const REGEX_GROUP = /^(?:\\s[*+?]?)?\([^\n]*?(?:\\[sSwWdD]|\[\^|\.[*+])/;

const NUMBER = /^(?:0[xX](?:_?[0-9A-Fa-f]){1,8}|0[oObB][0-7_]+|[-+]?(?:(?:\d*\.)?\d+[eE][+-]?\d+|\d*\.\d+)[fFdD]?)$/;

function balanced(value: string): boolean {
  const stack: string[] = [];
  for (const c of value) {
    if (c === "(" || c === "[" || c === "{") stack.push(c);
    else if (c in OPENS && stack.pop() !== OPENS[c]) return false;
  }
  return stack.length === 0;
}

export function looksRandom(value: string): boolean {
  // A quoted or unquoted value after `key: ` in prose is only taken for a secret when it looks
  // like one: long enough, and mixing letters with digits or symbols; not a name of code
  // (`jwtSecret: TEST_JWT_SECRET`, `{password: hashed_password}`).
  const v = value.replace(/^["'`]|["'`]$/g, "");
  return v.length >= 8 && /[A-Za-z]/.test(v) && /[0-9_+/=-]/.test(v) && !/\s/.test(v) &&
    !/^(?:[a-z]+(?:_[a-z]+)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)$/.test(v);
}

/**
 * A value of code's spacing (`token = …`) that reads a variable: a member path (`pageToken =
 * response.nextPageToken`, `secret = app.config.secret`), a name ending in the same word as the
 * name assigned (`this.apiKey = apiKey`, `self.passwd = passwd`, `token = new_token`), or the
 * start of an arrow function's parameters or of a bracketed expression (`randomSecretKey = () =>`,
 * `getSecret = (curve) =>`, `newKey = (): Uint8Array =>`, `secret = (await …`). A generated password holds a digit or a symbol.
 */
export function isVariable(value: string, name: string, spaced: boolean): boolean {
  if (!spaced) return false;
  const last = (s: string) => s.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toLowerCase().split(/[._$]+/).at(-1);
  return MEMBER_PATH.test(value) || /^\((?:[a-z_$][A-Za-z_$]*|(?:[a-z_$][\w$]*)?\):?)?$/.test(value) ||
    (/^[A-Za-z_$][\w$]*$/.test(value) && last(value) === last(name));
}
const MEMBER_PATH = /^[a-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+$/;

/**
 * A value alone on its line after a password's name and `:` (YAML, `.properties`, a note): a secret
 * whatever it looks like (`password: hunter2`, `POSTGRES_PASSWORD: postgres`), unless it names a
 * type (`password: str`, `apiKey: String`, `token: Option<String>`) or a camel-case variable
 * (`password: hashedPassword`), or it is YAML's own syntax (a block scalar `|`, an alias `*pw`, a
 * tag `!vault`) or no word at all.
 */
export function plainSecret(value: string): boolean {
  return /[A-Za-z0-9]/.test(value) && !/^(?:[|>][-+0-9]*|[*&!][\w.-]*)$/.test(value) && !TYPE_OR_VARIABLE.test(value);
}
const TYPE_OR_VARIABLE =
  /^(?:[A-Z][a-z]+(?:[A-Z][a-z]+)*|[a-z]+(?:[A-Z][a-z]+)+|str|string|bytes|int|bool|boolean|number|any|unknown|object|text|[A-Za-z_][\w.]*(?:<.*>|\[\]|\?))$/;

const OPENS: Record<string, string> = { ")": "(", "}": "{", "]": "[" };

/** How much of the text before an assignment is read for the brackets it opened (`f(`, `[see `). */
export const LOOKBACK = 64;

/**
 * Where an unquoted value ends in the text around it: at the first closing bracket that closes one
 * opened before it on its line, when what follows reads as the end of that text (`(see TOKEN=abc).`,
 * `[DB_PASSWORD=…](#a)`, `f(KEY=val).x()`); otherwise a bracket is the value's own (`Tr0ub(4dor)`,
 * `5]usNF…`, `w1eP8)_&C1x`). Inside a call's arguments (`connect(`), a keyword argument passing a
 * variable (`api_key=key`) is no secret, nor an expansion's name: "". One pass over the value and
 * LOOKBACK characters before it.
 */
export function valueInContext(value: string, before: string, name: string): string {
  // `${PASSWORD:-changeme}`: the name of an expansion, its default after it (isPlaceholder).
  if (before.endsWith("${")) return "";
  const unmatched: Record<string, number> = { "(": 0, "[": 0, "{": 0 };
  const pending: Record<string, number> = { "(": 0, "[": 0, "{": 0 };
  let call = -1;
  const from = Math.max(before.lastIndexOf("\n") + 1, before.length - LOOKBACK);
  for (let i = before.length - 1; i >= from; i--) {
    const c = before[i]!;
    if (c in OPENS) pending[OPENS[c]!]!++;
    else if (c in unmatched) {
      if (pending[c]! > 0) pending[c]!--;
      else if (unmatched[c]!++ === 0 && c === "(") call = i;
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
      else if (unmatched[o]! > 0 && TEXT_END.test(value.slice(i))) end = i;
    }
  }
  const cut = value.slice(0, end);
  const inCall = call > 0 && /\w/.test(before[call - 1]!) && name !== name.toUpperCase();
  return inCall && KEYWORD_ARGUMENT.test(cut) ? "" : cut;
}

/** What may follow a value in the text around it: closing brackets, then punctuation, a member, an anchor. */
const TEXT_END = /^[)\]}]+(?:[.,;:!?]+|\.[A-Za-z_][\w.]*(?:\(\))?|\(#[\w-]*\))*$/;

/** A variable a keyword argument passes (`api_key=key`, `token=self.token`, `key=privKey`): snake or camel case. */
const KEYWORD_ARGUMENT = /^[a-z_][a-z0-9_]*(?:[A-Z][a-z0-9_]+)*(?:\.[a-z_][a-z0-9_]*(?:[A-Z][a-z0-9_]+)*)*$/;
