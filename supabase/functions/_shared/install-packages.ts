// The packages an install command names, in prose or code: `npm install zod`, `pip install
// requests[socks]==2.31`, `cargo add serde@1`, `go get github.com/pkg/errors@v0.9.1`. Each word after
// the command is a package only when the whole word is one of that manager's package specifiers
// (a name, and a version or extras its syntax allows): a word that is not ends the list, so
// `npm install 100%_pkg` names no package (not `100`) and `go get` names the module's whole path.
// Options are skipped, with the value of those that take one (`-r requirements.txt`).
// The list also ends at the end of the line, at a word that ends a clause (`zod.`, `zod;`, a closing
// backtick or quote) and at the first English function word ("pnpm install zod and fix the build").
// Used by the entity rules (entity-rules.ts, docs/graph.md#entity-rules).
import { trimEndOf } from "./text-scan.ts";

const COMMAND =
  /\b(npm\s+(?:install|i|add)|pnpm\s+(?:add|install|i)|yarn\s+add|bun\s+add|pip3?\s+install|poetry\s+add|cargo\s+add|go\s+get|gem\s+install)(?![\w-])/gi;

// One package specifier per manager, the name in group 1.
// zod, @types/node@20, react@^18, x@1.0.0+build.5, typescript@'>=5.0', react@npm:@preact/compat, y@workspace:*
const JS = /^((?:@[a-z0-9][\w.~-]*\/)?[a-z0-9][\w.~-]*)(?:@[\w.^~*<>=|+:/@'"-]+)?$/i;
const PYTHON = /^([a-z0-9](?:[\w.-]*[a-z0-9])?)(?:\[[\w,.-]*\])?(?:(?:===?|[<>!~]=|[<>@])[\w.*+!,<>=~^-]+)?$/i;
const SPECIFIER: Record<string, RegExp> = {
  npm: JS,
  pnpm: JS,
  yarn: JS,
  bun: JS,
  pip: PYTHON,
  pip3: PYTHON,
  poetry: PYTHON, // poetry add requests@^2.31
  cargo: /^([a-z0-9][\w-]*)(?:@[\w.^~*<>=+-]+)?$/i, // serde, serde@1.0
  go: /^([\w~-][\w.~-]*(?:\/[\w.~-]+)*)(?:@[\w.+-]+)?$/, // github.com/pkg/errors@v0.9.1
  gem: /^([a-z0-9][\w.-]*)(?::[\w.]+)?$/i, // rails, rails:7.1.0
};

// Options whose value is the next word (a file, a feature, a version), never a package:
// `pip install -r requirements.txt`, `cargo add serde --features derive`, `gem install rails -v 7.1`.
// npm's -w/--workspace name a workspace; pnpm's are flags (-w: the workspace root), so there the
// next word is a package (`pnpm add -w typescript`).
const JS_VALUES = "--registry --filter";
const PIP_VALUES =
  "-r --requirement -c --constraint -e --editable -i --index-url --extra-index-url -t --target --prefix --root -f --find-links";
const OPTION_VALUES: Record<string, Set<string>> = Object.fromEntries(
  Object.entries({
    npm: `${JS_VALUES} -w --workspace`,
    pnpm: JS_VALUES,
    yarn: JS_VALUES,
    bun: JS_VALUES,
    pip: PIP_VALUES,
    pip3: PIP_VALUES,
    poetry: "-G --group -E --extras --source",
    cargo: "-F --features --rename --path --git --branch --tag --rev --registry -p --package",
    go: "",
    gem: "-v --version -s --source -i --install-dir",
  }).map(([manager, options]) => [manager, new Set(options.split(" "))]),
);

// An install command in prose runs on into the sentence: its package list ends at the first of
// these words, never a package a message means.
const ENDS_PACKAGE_LIST = new Set(
  ("a an and or but nor then to into in on at for from with without of by via as so if when while after before " +
    "the this that these those it its is are was were be we i you he she they them please first now again also too " +
    "instead here there which what why how").split(" "),
);

export interface InstalledPackage {
  name: string;
  /** The word as written (with its version or extras). */
  mention: string;
  /** Where the command starts in the text. */
  at: number;
}

/** The packages each install command in `text` names, in order. */
export function installedPackages(text: string): InstalledPackage[] {
  const out: InstalledPackage[] = [];
  const commands = [...text.matchAll(COMMAND)];
  let lineEnd = -1;
  commands.forEach((m, i) => {
    const manager = m[1]!.split(/\s/)[0]!.toLowerCase();
    const specifier = SPECIFIER[manager]!;
    let optionValue = false;
    // The quote an option's quoted value of several words still waits for (`-v '~> 7.1'`).
    let closing = "";
    // Its words: the rest of the line, up to the next command (each word is read once).
    const from = m.index! + m[0].length;
    // The line's end is looked up once per line, not per command: many commands on one long line
    // would each scan it to its end.
    if (lineEnd < from) {
      const newline = text.indexOf("\n", from);
      lineEnd = newline < 0 ? text.length : newline;
    }
    const to = Math.min(lineEnd, commands[i + 1]?.index ?? text.length);
    for (const word of text.slice(from, to).trim().split(/\s+/)) {
      // A loop, not /[...]+$/: that pattern, tried from every start in a run of these characters
      // (`npm install ....…a`), is quadratic in the run (tests/linear_text).
      const bare = trimEndOf(word.replace(/^["'`(]+/, ""), "\"'`),.;:!?");
      // A closing quote, backtick or parenthesis ends a span the command was in, unless the word
      // opened it (a quoted argument: 'requests[socks]==2.31').
      const endsClause = /[.;:!?]["'`)]*$/.test(word) || (/["'`)]$/.test(word) && !/^["'`(]/.test(word));
      if (closing) {
        if (word.endsWith(closing)) closing = "";
        continue;
      }
      if (ENDS_PACKAGE_LIST.has(bare.toLowerCase())) break;
      if (optionValue) {
        optionValue = false;
        const quote = word[0] === "'" || word[0] === '"' ? word[0] : "";
        if (quote && (word.length === 1 || !word.endsWith(quote))) closing = quote;
      } else if (bare.startsWith("-")) optionValue = OPTION_VALUES[manager]!.has(bare);
      // A URL (an archive, a VCS checkout: `pip install git+https://…`) names no package by name,
      // and the words after it still may (unless it ends the clause).
      else if (!bare.includes("://")) {
        const name = specifier.exec(bare)?.[1];
        if (!name) break;
        out.push({ name, mention: bare, at: m.index! });
      }
      if (endsClause) break;
    }
  });
  return out;
}
