// Which names hold a secret (redact.ts's name-based rules: `NAME=value`, `name: value`,
// `<name>value</name>`): `OPENAI_API_KEY`, `db_password`, `dbPassword`, `clientSecret`, `PGPASSWORD`.

/**
 * A password's name shortened as configs shorten it: `pw` (`DB_PW`, `pw=…`), `pswd`, `psw`, `pwrd`,
 * `pword`, `passwrd` (`pwd`, `passwd` and `pass` are the other rules' own; a URL parameter's too,
 * secret-rules.ts). A whole word of the name: `$PWD`, `npw`, `pw_uid` and `PWDEBUG` name no password.
 */
export const PW_ABBREVIATION = "pw|pswd|psw|pwrd|pword|passwrd";

/** Names whose value is a secret: `OPENAI_API_KEY`, `db_password`, `client_secret`, `GITHUB_TOKEN`, `SENTRY_DSN`, `PGPASSWORD`, `SSHPASS`, `DB_PW`. */
const SECRET_NAME = new RegExp(
  String
    .raw`^(?:pg|ssh)pass(?:word)?$|(?:^|[_.-])(?:secret|secrets|token|passwd|password|pwd|pass|passphrase|${PW_ABBREVIATION}|credentials?|dsn|auth|api[_-]?key|apikey|access[_-]?key|secret[_-]?key|private[_-]?key|signing[_-]?key|encryption[_-]?key|master[_-]?key|service[_-]?role[_-]?key|client[_-]?secret|[a-z0-9]+[_-]key)$`,
  "i",
);

/**
 * Names that hold a secret whatever their value looks like (`password: hunter2`), also in camel
 * case (`dbPassword`, `authToken`, `clientSecret`, `AccessKey`): a password, a secret, a token, an
 * API, access, private or client key. Not a bare `token`, `secret` or `auth` (prose: "the token:
 * expired"), nor any `*Key` in camel case (`queryKey`, `storageKey`, `dataKey` name no secret).
 * Rails' `secret_key_base` (`SECRET_KEY_BASE`, `secretKeyBase`) signs its sessions: a secret key.
 * A password's abbreviation after another word (`DB_PW: hunter2`, `adminPw`); alone too, but for
 * `pw` and `psw` (code's variable, a CPU's program status word), as for `pwd` and `pass`.
 */
const STRONG_NAME = new RegExp(
  String
    .raw`^(?:pg|ssh)pass(?:word)?$|^(?:password|passwd|passphrase|pswd|pwrd|pword|passwrd)$|[_.-](?:password|passwd|passphrase|pwd|${PW_ABBREVIATION}|secret|token|credentials?)$|(?:^|[_.-])(?:api|access|secret|private|signing|encryption|master|client)[_-]?(?:key|secret)$|(?:^|[_.-])secret[_-]?key[_-]?base$`,
  "i",
);

const PASSWORD_NAME = new RegExp(
  String.raw`^(?:pg|ssh)pass(?:word)?$|(?:^|[_.-])(?:passwd|password|pwd|pass|passphrase|${PW_ABBREVIATION})$`,
  "i",
);

/**
 * Words that make a name public wherever they stand in it (`NEXT_PUBLIC_…`, `SUPABASE_ANON_KEY`,
 * `max_tokens`), matched as whole words: as substrings `min` and `map` made `ADMIN_PASSWORD`,
 * `MINIO_SECRET_KEY` and `MAPBOX_ACCESS_TOKEN` public, and their values were stored.
 */
const PUBLIC_WORD =
  /(?:^|_)(?:public|publishable|anon|max|min|length|ttl|timeout|count|expiry|expires|expiration|keyboard|hotkey|monkey|turkey|donkey)(?:_|$)/;
/** A key named for what it indexes (`primary_key`, `sortKey`, `CACHE_KEY`, `idempotency_key`). */
const INDEX_KEY =
  /(?:^|_)(?:primary|foreign|sort|cache|partition|idempotency|lookup|hash|map|object|index|unique)_keys?$/;
const PUBLIC_END = /_id$|url$|uri$|path$|file$|name$|type$|header$|count$|mode$/i;

/** `dbPassword` → `db_Password`, `APIKey` → `API_Key`: camel case's words, separated as snake case's are. */
const words = (name: string) => name.replace(/([a-z0-9])([A-Z])|([A-Z])([A-Z][a-z])/g, "$1$3_$2$4");
const isPublic = (split: string) => {
  const lower = split.toLowerCase().replace(/[.-]/g, "_");
  return PUBLIC_WORD.test(lower) || INDEX_KEY.test(lower) || PUBLIC_END.test(split);
};

export function secretName(name: string): boolean {
  const split = words(name);
  return (SECRET_NAME.test(name) || STRONG_NAME.test(split)) && !isPublic(split);
}

/** A name that holds a secret whatever its value looks like (STRONG_NAME). */
export function holdsAnyValue(name: string): boolean {
  // STRONG_NAME is one of secretName's two tests: what is left of it is the public check.
  const split = words(name);
  return STRONG_NAME.test(split) && !isPublic(split);
}

/** A password's name (`DB_PASSWORD`, `dbPassword`, `PGPASSWORD`): its secret is counted as a password. */
export function passwordName(name: string): boolean {
  return PASSWORD_NAME.test(words(name));
}

/**
 * How every secret's name ends (a superset of secretName, case ignored): the assignment rule only
 * starts at such a name, so another name's value is not read whole and passed over (`run:
 * DB_PASSWORD=hunter2 ./deploy.sh`: `run`'s value held the assignment, and it was stored).
 */
export const NAME_END =
  "secrets?|token|passw(?:or|r)?d|pwd|pass|passphrase|pw|pswd?|pwrd|pword|credentials?|dsn|auth|key|key_?base";
