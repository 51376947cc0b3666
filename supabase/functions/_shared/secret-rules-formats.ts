// Rules for secrets in particular commands and files, each known by its format rather than by an
// assignment (secret-rules.ts runs them, in this order, before its `NAME=value` rules): `curl -u`,
// `mysql -p`, requests' auth tuples, XML elements and attributes, PHP's define(…) and setenv(…)
// calls, `.pgpass` lines, Windows' `setx`, and unquoted values holding `,` or `;` (an env line's, a
// connection string's).
import type { Rule } from "./secret-rules.ts";
import { holdsAnyValue, NAME_END, secretName } from "./secret-names.ts";
import { isCode, isPlaceholder } from "./secret-values.ts";

/** A name ending like a secret's (the assignment rules' own: secret-names.ts's NAME_END). */
const NAME = String.raw`([A-Za-z_][\w.-]{0,80})(?<=${NAME_END})`;

/**
 * What precedes an option of a command line (`-u`, and secret-rules.ts's `--password`): the start,
 * a blank, a bracket, `,` or `;`.
 */
export const OPTION_START = String.raw`(?<![^\s(\[{,;])`;
/**
 * The command before `-u user:x` (on its line, after the last `;`, `&&` or `|`) is one whose `-u`
 * takes no password (`rsync -u` is --update, `docker run -u` a user and a group, `sudo -u` a user),
 * and no curl-like client. A `-u` of a line of its own is curl's (`curl -X POST \` then `-u …`).
 */
function otherCommand(line: string): boolean {
  const own = line.slice(
    Math.max(line.lastIndexOf("\n"), line.lastIndexOf(";"), line.lastIndexOf("&"), line.lastIndexOf("|")) + 1,
  );
  // The command is the segment's first word (read once, not searched for: `-u a:b` repeated stays cheap).
  return OTHER_U.test(own) && !/\b(?:curl|wget|https?|xh|lftp|ftp)\b/.test(own);
}
const OTHER_U =
  /^[ \t(\x60$]*(?:[A-Z_]+=[^\s=]*[ \t]+)*(?:docker|podman|nerdctl|kubectl|sudo|su|runuser|setpriv|chpst|rsync|sort|uniq|grep|cut|ps|git|python[\d.]*|pip\d?|top|crontab|passwd|usermod|gpg)[ \t]/;

/** A value that is a literal, not a placeholder nor code (`%PASSWORD%`, `$(op read …)`). */
const literal = (s: string) => !isPlaceholder(s) && !isCode(s, false);

/** Another assignment after a separator: `password=hash,updated=now()`, `token=a;user=b`. */
const ANOTHER = /[,;][ \t]*[A-Za-z_][\w.-]{0,80}=/;

/**
 * A braced variable before the first separator (`${X},y`, `%X%;y`): an expansion, no literal. Not a
 * bare `$X,y` nor `${X:-…}`: generated passwords start with `$` (`$Lfrz,Sd4…` was kept whole), and
 * a default may be the secret.
 */
const expansionFirst = (s: string) => /^(?:\$\{[A-Za-z_]\w*\}|%[A-Za-z_]\w*%)[,;]/.test(s);

/** Another pair of a connection string follows at `at`: `;Encrypt=true`. */
function nextPair(text: string, at: number): boolean {
  NEXT_PAIR.lastIndex = at;
  return NEXT_PAIR.test(text);
}
const NEXT_PAIR = /;[ \t]*[A-Za-z][\w ]{0,40}=/y;

/** The port of a `.pgpass` line alone on its line (see its rule). */
const DATABASE_PORT = /^(?:\*|[56]\d{3}|\d{5})$/;

/** The text ends its line at `at`: blanks, then a line break, the end or a `#` comment. */
export function endsLine(text: string, at: number): boolean {
  LINE_END.lastIndex = at;
  return LINE_END.test(text);
}
const LINE_END = /[ \t]+#|[ \t]*\r?(?:\n|$)/y;

export const FORMAT_RULES: Rule[] = [
  // curl -u user:password, --user user:password: the password. Not a user and a group (`docker run
  // -u 1000:1000`, `-u www-data:www-data`: the same name twice or two numbers).
  {
    kind: "password",
    re: new RegExp(
      OPTION_START +
        String
          .raw`(?:-u[ \t]*|--user(?:=|[ \t]+))(?:"([^"\s:]{1,256}):([^"\n]{1,512})"|'([^'\s:]{1,256}):([^'\n]{1,512})'|([^\s"'\x60:]{1,256}):([^\s"'\x60]{1,512}))`,
      "g",
    ),
    group: [2, 4, 6],
    accept: (s, m) => {
      const user = m[1] ?? m[3] ?? m[5];
      return literal(s) && s !== user && !/^\d+:\d+$/.test(`${user}:${s}`) &&
        !otherCommand(m.input.slice(Math.max(0, m.index - 160), m.index));
    },
    byName: true,
  },
  // mysql -pPassword (attached: `-p shop` prompts, and `shop` is the database), sshpass -p, docker
  // login -p, PuTTY's `plink … -pw …` (`pscp`, `psftp`). Between mysql and its -p stand a database
  // and options, each option with at most one value, quoted or not (`shop -h db -u root -e "select
  // 1"`): in prose ("the mysql docs say -plaintext …") a second word that is no option comes first.
  {
    kind: "password",
    re:
      /(?:\b(?:mysql|mysqldump|mysqladmin|mariadb)(?:\.exe)?(?:[ \t]+[^\s|;&"'-][^\s|;&]{0,200})?(?:[ \t]+--?[\w-]{1,40}(?:=[^\s|;&]{0,200})?(?:[ \t]+(?:"[^"\n]{0,200}"|'[^'\n]{0,200}'|[^\s|;&"'-][^\s|;&]{0,200}))?){0,12}[ \t]+-p(?=\S)|\bsshpass[ \t]+-p[ \t]*|\b(?:plink|pscp|psftp)(?:\.exe)?\b[^\n|;&]{0,200}?[ \t]-pw[ \t]+|\b(?:docker|podman|nerdctl|buildah|skopeo)[ \t]+login\b[^\n|;&]{0,200}?[ \t]-p[ \t]+)(?:"([^"\n]{1,512})"|'([^'\n]{1,512})'|([^\s"'\x60]{1,512}))/g,
    group: [1, 2, 3],
    accept: literal,
    byName: true,
  },
  // requests' auth=("user", "password"), HTTPBasicAuth('user', 'password'): a literal password.
  {
    kind: "password",
    re:
      /(?:\b[Aa]uth[ \t]*[=:][ \t]*(?:[A-Za-z_][\w.]{0,60})?|\b[A-Za-z]{0,20}(?:BasicAuth|DigestAuth))[([][ \t]*(?:"[^"\n]{0,256}"|'[^'\n]{0,256}'|[\w.$]{1,256})[ \t]*,[ \t]*(?:"([^"\n]{1,512})"|'([^'\n]{1,512})')(?=[ \t]*[)\]])/g,
    group: [1, 2],
    accept: (s) => !isPlaceholder(s),
    byName: true,
  },
  // XML: <password>…</password>, <entry key="password">…</entry> (Java's properties),
  // <property name="hibernate.connection.password">…</property>, <add key="ApiKey" value="…"/>,
  // <property name="password" value="…"/>; PHP's define('DB_PASSWORD', '…'), Go's
  // os.Setenv("DB_PASSWORD", "…"), .NET's SetEnvironmentVariable(…).
  {
    kind: "secret_assignment",
    re: /<([A-Za-z_][\w.-]{0,80})>([^<>\n]{1,512})(?=<\/\1>)/g,
    group: [2],
    name: 1,
    accept: (s, m) => secretName(m[1]!) && !isPlaceholder(s.trim()),
    byName: true,
  },
  {
    kind: "secret_assignment",
    re:
      /<([A-Za-z][\w:.-]{0,40})[ \t]+(?:key|name)[ \t]*=[ \t]*(["'])([A-Za-z_][\w.:-]{0,80})\2[^<>\n]{0,200}>([^<>\n]{1,512})(?=<\/\1>)/g,
    group: [4],
    name: 3,
    accept: (s, m) => secretName(m[3]!) && !isPlaceholder(s.trim()),
    byName: true,
  },
  {
    kind: "secret_assignment",
    re:
      /(?:<[A-Za-z][\w:.-]{0,40}[ \t]+(?:key|name)[ \t]*=[ \t]*|\b(?:define|[Ss]etenv|SetEnvironmentVariable)\([ \t]*)(["'])([A-Za-z_][\w.:-]{0,80})\1(?:[ \t]+value[ \t]*=[ \t]*|[ \t]*,[ \t]*)(?:"([^"\n]{1,512})"|'([^'\n]{1,512})')/g,
    group: [3, 4],
    name: 2,
    accept: (s, m) => secretName(m[2]!) && !isPlaceholder(s),
    byName: true,
  },
  // A `.pgpass` line, `host:port:database:user:password` (`\:` escapes a colon), alone on its line
  // (a heredoc, the file shown) or echoed or printed into the file (`> ~/.pgpass`, `| tee`). The host
  // is a name, an IPv4 address or `*`, the port a number of 4 or 5 digits or `*`, the database no
  // number: a time (`12:30:45:00:01`), a MAC address, a compiler's or grep's `main.go:12:5:…`,
  // `/etc/passwd`'s lines are none. Alone on its line, the port is a database's (`*`, 5xxx, 6xxx or
  // 5 digits: 5432, 6432, 6543, 25060): a log's `10.0.0.12:8080:GET:/api:200`, `Thread-1:2024:…` stay.
  {
    kind: "password",
    re:
      /(?:^[ \t]*|\b(?:echo|printf)[ \t]+["']?)(?:\*|[A-Za-z][\w.-]{0,253}|\d{1,3}(?:\.\d{1,3}){3}):(\d{4,5}|\*):(?!\d+:)(?:[^\s:\\"']|\\.){1,128}:(?:[^\s:\\"']|\\.){1,128}:((?:[^\s:\\"']|\\.){1,512}?)(?=(?:\\n)?["']?[ \t]*(?:>>?|\|[ \t]*tee\b|\r?$))/gm,
    group: [2],
    accept: (s, m) => !isPlaceholder(s) && (DATABASE_PORT.test(m[1]!) || /^(?:echo|printf)[ \t]/.test(m[0])),
    byName: true,
  },
  // Windows' `setx NAME value` (`setx /M NAME "value"`): setx sets what follows the name.
  {
    kind: "secret_assignment",
    re: new RegExp(
      String
        .raw`\bsetx(?:\.exe)?(?:[ \t]+\/[Mm])?[ \t]+(["']?)${NAME}\1[ \t]+(?:"([^"\n]{1,512})"|'([^'\n]{1,512})'|([^\s"'\x60]{1,512}))`,
      "gi",
    ),
    group: [3, 4, 5],
    name: 2,
    accept: (s, m) => secretName(m[2]!) && literal(s),
    byName: true,
  },
  // An unquoted value holding `,` or `;` (generated passwords do), read by its context: an env
  // line's value (`DB_PASSWORD=ab,cd;ef`, `export …`, Dockerfile's `ENV …`, YAML's `password: …`
  // alone on its line) runs to the end of the line's word, as .env files and shells read it; the
  // assignment rules end it at the first `,` or `;` (code's separators: `f(password=pw, user=u)`)
  // and kept the rest. A word holding another name's `=` is several assignments (`a=1,b=2`), and
  // trailing punctuation is prose's (`DB_PASSWORD=abc, then restart`).
  {
    kind: "secret_assignment",
    re: new RegExp(
      String.raw`^[ \t]*(?:-[ \t]+|(?:export|set|ENV)[ \t]+)?${NAME}(=|:[ \t]{1,8})([^\s"'\x60]{1,512})(?![^\s])`,
      "gim",
    ),
    group: [3],
    name: 1,
    trim: (s) => s.replace(/[,;.]+$/, ""),
    accept: (s, m) =>
      /[,;]/.test(s) && !ANOTHER.test(s) && secretName(m[1]!) && literal(s) && !expansionFirst(s) &&
      (m[2] === "=" || (holdsAnyValue(m[1]!) && endsLine(m.input, m.index + m[0].length))),
    byName: true,
  },
  // A connection string's `Password=…;` (ADO.NET, ODBC, JDBC's properties): the `;` ends the value,
  // a `,` does not (`Server=db;Password=ab,cd;Encrypt=true`: the assignment rules kept `,cd`). A
  // connection string's pair follows a `;` or another pair follows it: `f(a, password=None,` and
  // `TOKEN = /[…,]+/gu;` are code.
  {
    kind: "secret_assignment",
    re: new RegExp(
      String
        .raw`(?<![^;\s"'])${NAME}[ \t]*=[ \t]*([^\s"'\x60;]{1,512})(?=;[ \t]*[A-Za-z][\w ]{0,40}=|;?["'\x60]|;?[ \t]*\r?$)`,
      "gim",
    ),
    group: [2],
    name: 1,
    trim: (s) => s.replace(/,+$/, ""),
    accept: (s, m) =>
      s.includes(",") && !ANOTHER.test(s) && secretName(m[1]!) && literal(s) && !expansionFirst(s) &&
      (m.input[m.index - 1] === ";" || nextPair(m.input, m.index + m[0].length)),
    byName: true,
  },
];
