// Rule-based entity extraction: what a coding conversation names without any model. Runs on every
// memory written (episodes as they arrive, facts from remember, correct, dedup and consolidation),
// so entity lookup works without an LLM; consolidation adds what only a model can see (people by
// name, concepts). Pure: text in, mentions out. What each rule finds and why it is as strict as it
// is: docs/graph.md#entity-rules.
import type { EntityMention } from "./entities.ts";
import { installedPackages } from "./install-packages.ts";
import { trimEndOf } from "./text-scan.ts";

/** A message naming more than this many things is a dump (a log, a file listing): keep the first ones. */
export const MAX_MENTIONS_PER_TEXT = 24;

const FILE_EXTENSIONS =
  "ts|tsx|js|jsx|mjs|cjs|json|jsonc|md|mdx|py|rs|go|java|kt|kts|rb|php|c|h|cc|cpp|hpp|cs|sql|sh|bash|zsh|ps1|yml|yaml|toml|lock|" +
  "css|scss|sass|less|html|vue|svelte|swift|m|mm|ini|cfg|conf|xml|gradle|tf|proto|graphql|gql|prisma|env|txt|csv|ipynb|dart|ex|exs|erl|lua|r|scala|clj";
// A path with a known extension (optionally a :line suffix), or a ./ ../ ~/ or / rooted path of two or more segments.
const FILE = new RegExp(
  String
    .raw`(?<![\w@/.:-])((?:\.{1,2}/|~/|/)?(?:[\w@.+-]+/)*[\w.+-]*[\w-]\.(?:${FILE_EXTENSIONS}))(?::\d+(?::\d+)?)?(?![\w/-])` +
    String.raw`|(?<![\w@/.:-])((?:\.{1,2}/|~/)(?:[\w@.+-]+/)+[\w@.+-]+|/(?:[\w@.+-]+/){2,}[\w@.+-]*)`,
  "g",
);
// Framework names that look like files: Node.js is a tool, app.js is a file.
const TOOLS_NAMED_LIKE_FILES = new Set([
  "node.js",
  "next.js",
  "vue.js",
  "nuxt.js",
  "express.js",
  "three.js",
  "d3.js",
  "chart.js",
  "nest.js",
  "ember.js",
  "backbone.js",
  "socket.io",
]);
const DOTFILES =
  /(?<![\w/.-])(\.(?:env(?:\.[\w-]+)?|gitignore|dockerignore|npmrc|nvmrc|eslintrc(?:\.\w+)?|prettierrc(?:\.\w+)?|editorconfig))(?![\w/-])/g;
const WELL_KNOWN_FILES =
  /(?<![\w/.-])(Dockerfile|Makefile|Procfile|Gemfile|Rakefile|Justfile|Caddyfile|Jenkinsfile)(?![\w-]|\.\w)/g;

// name@version, scoped or not: react@18.3.1, @types/node@20, zod@^4.1.0; npm:/jsr: specifiers too.
// The whole word, between blanks, quotes, brackets or punctuation: the tail of `foo%bar@1.2.3` is no
// package `bar`.
const PACKAGE_VERSION =
  /(?<![^\s"'`([{<,=])(?:npm:|jsr:)?((?:@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*)@([\^~]?\d+(?:\.[\dx*]+){0,3}(?:-[\w.]*\w)?)(?=$|[\s"'`)\]}>,;:!?]|\.(?!\w))/gi;

// Error codes and error types.
const ERRORS = [
  /\b(ERR_[A-Z0-9_]{2,})\b/g, // Node: ERR_MODULE_NOT_FOUND
  /\b(E\d{3,5})\b/g, // rustc E0382, generic E1234
  /\b(TS\d{4,5})\b/g, // TypeScript TS2322
  /\b(E(?:NOENT|ACCES|ADDRINUSE|CONNREFUSED|CONNRESET|TIMEDOUT|PERM|EXIST|NOTFOUND|PIPE|MFILE|NOTDIR|ISDIR|NOTEMPTY))\b/g, // errno
  /\b((?:[A-Z][a-z0-9]+)+(?:Error|Exception))\b/g, // TypeError, ModuleNotFoundError, NullPointerException
];

const URL_PATTERN = /\bhttps?:\/\/[^\s<>()\[\]{}"'`]+/gi;

// identifier( … : camelCase, snake_case or dotted names with a call, or any name with an empty call.
const CALL = /(?<![\w$.])([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)\((\))?/g;
const CALL_SHAPED = /[a-z][A-Z]|_|\./;
const NOT_FUNCTIONS = new Set(["e.g", "i.e", "etc", "vs", "cf"]);

// @handle, not an npm scope (@types/node), an email, a decorator (@Component()) or a version (x@1).
const HANDLE = /(?<![\w@/.])@([A-Za-z][\w-]{1,38})(?![\w@/.(-])/g;

// Commands: a known program and its subcommand. Unambiguous programs are recognised anywhere with
// one of their own verbs; in code (backticks, fenced blocks, `$ ` prompts) any known program counts.
const VERBS: Record<string, string> = {
  git:
    "add|commit|push|pull|rebase|merge|checkout|clone|status|log|diff|stash|reset|cherry-pick|bisect|fetch|branch|tag|switch|restore|revert|blame|worktree|submodule|remote|init|show",
  npm: "install|i|ci|add|remove|uninstall|run|test|publish|update|exec|audit|link|init|start|pack|outdated|dedupe",
  pnpm: "install|i|add|remove|run|test|publish|update|exec|dlx|store|why|build|dev|start",
  yarn: "install|add|remove|run|test|publish|upgrade|why|build|dev|start|workspace",
  bun: "install|add|remove|run|test|build|x",
  npx: "[@\\w][\\w./@-]*",
  deno: "run|test|check|lint|fmt|task|compile|install|cache|bench|serve|publish|info|doc",
  docker: "build|run|compose|push|pull|exec|ps|logs|stop|rm|rmi|images|tag|login|inspect|volume|network",
  kubectl: "apply|get|describe|logs|delete|exec|rollout|port-forward|scale|create|edit|config",
  cargo: "build|test|run|add|check|clippy|fmt|publish|update|install|bench|doc",
  pip: "install|uninstall|freeze|list|show",
  pip3: "install|uninstall|freeze|list|show",
  poetry: "install|add|remove|run|lock|update|build|publish|shell",
  supabase: "start|stop|status|db|functions|link|test|migration|gen|secrets|init|login|projects|inspect",
  terraform: "init|plan|apply|destroy|validate|fmt|import|state",
  helm: "install|upgrade|uninstall|template|repo|list|rollback",
  gh: "pr|issue|repo|run|workflow|release|api|auth",
  go: "build|test|run|mod|get|vet|fmt|install|generate|work",
  brew: "install|uninstall|upgrade|update|services",
};
const CODE_ONLY_PROGRAMS = [
  "make",
  "node",
  "python",
  "python3",
  "psql",
  "curl",
  "just",
  "tsc",
  "jest",
  "vitest",
  "pytest",
  "ruby",
  "rails",
  "mvn",
  "gradle",
  "dotnet",
  "php",
  "composer",
  "mix",
  "sqlite3",
  "redis-cli",
];
// The argument (a script's name for run verbs) is a whole word or none: "npm install 100%_pkg" is
// the command "npm install", its mention not cut at the "%".
const PROSE_COMMAND = new RegExp(
  String.raw`(?<![\w./-])(?:${
    Object.entries(VERBS).map(([p, v]) => `${p}\\s+(?:${v})`).join("|")
  })(?![\w-])(?:\s+(?!-)[\w:./@-]+(?![^\s,;!?)\]}'"\`]))?`,
  "g",
);
const CODE_COMMAND = new RegExp(
  String.raw`^\s*(?:\$\s+)?(sudo\s+)?(${
    [...Object.keys(VERBS), ...CODE_ONLY_PROGRAMS].map((p) => p.replace("-", "\\-")).join("|")
  })(?:\s+(?!-)([\w:./@-]+))?(?:\s+(?!-)([\w:./@-]+))?`,
);
const RUN_VERBS = new Set(["run", "task", "exec", "dlx", "x", "workspace"]);

/** Text inside backticks, fenced code blocks and `$ ` prompt lines, one command candidate per line. */
function codeLines(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/```[\w-]*\n?([\s\S]*?)```/g)) out.push(...m[1]!.split("\n"));
  for (const m of text.replace(/```[\s\S]*?```/g, " ").matchAll(/`([^`\n]+)`/g)) out.push(m[1]!);
  for (const line of text.split("\n")) if (/^\s*\$\s+\S/.test(line)) out.push(line);
  return out;
}

/** The program + subcommand a command line names ("npm run build", "git rebase", "make"). */
function commandName(program: string, verb: string | undefined, arg: string | undefined): string {
  const p = program.toLowerCase();
  if (!verb) return p;
  if (RUN_VERBS.has(verb) && arg && !arg.startsWith("-")) return `${p} ${verb} ${arg}`;
  return `${p} ${verb}`;
}

/** Entities named in a text, in order of first appearance, each once (by type and lower-cased name). */
export function extractEntityMentions(text: string): EntityMention[] {
  const found: (EntityMention & { at: number })[] = [];
  const add = (name: string, type: EntityMention["type"], mention: string, at: number) => {
    const clean = trimEndOf(name.trim(), ".,;:!?");
    if (clean.length < 2 || clean.length > 200) return;
    found.push({ name: clean, type, mention: mention.trim().slice(0, 200), at });
  };

  // URLs first, then blanked out, so their paths are not read as files nor their hosts as packages.
  let rest = text;
  const urls: { from: number; to: number }[] = [];
  for (const m of text.matchAll(URL_PATTERN)) {
    urls.push({ from: m.index!, to: m.index! + m[0].length });
    const url = trimEndOf(m[0], ".,;:!?");
    try {
      add(new URL(url).hostname.replace(/^www\./, ""), "service", url, m.index!);
    } catch {
      // not a URL after all
    }
    rest = rest.slice(0, m.index!) + " ".repeat(m[0].length) + rest.slice(m.index! + m[0].length);
  }

  for (const m of rest.matchAll(PACKAGE_VERSION)) add(m[1]!, "package", m[0], m.index!);
  // Install commands read the text with its URLs: an option's value that is one
  // (`pip install --index-url https://… torch`) is skipped as a value, not blanked into nothing so
  // that the option takes the package after it. A command inside a URL is none.
  let url = 0;
  for (const p of installedPackages(text)) {
    while (url < urls.length && urls[url]!.to <= p.at) url++;
    if (url < urls.length && urls[url]!.from <= p.at) continue;
    add(p.name, "package", p.mention, p.at);
  }
  // Package specifiers (name@1.2) are not files, nor emails' domains handles.
  const noPackages = rest.replace(PACKAGE_VERSION, (s) => " ".repeat(s.length));
  for (const m of noPackages.matchAll(FILE)) {
    const path = m[1] ?? m[2]!;
    if (TOOLS_NAMED_LIKE_FILES.has(path.toLowerCase())) add(path, "tool", path, m.index!);
    else add(path, "file", m[0], m.index!);
  }
  for (const re of [DOTFILES, WELL_KNOWN_FILES]) for (const m of rest.matchAll(re)) add(m[1]!, "file", m[1]!, m.index!);
  for (const re of ERRORS) for (const m of rest.matchAll(re)) add(m[1]!, "error", m[1]!, m.index!);
  for (const m of noPackages.matchAll(HANDLE)) add(`@${m[1]}`, "person", m[0], m.index!);
  for (const m of noPackages.matchAll(CALL)) {
    const name = m[1]!;
    if (NOT_FUNCTIONS.has(name.toLowerCase())) continue;
    if (m[2] || CALL_SHAPED.test(name)) add(`${name}()`, "function", m[0], m.index!);
  }
  for (const m of rest.matchAll(PROSE_COMMAND)) {
    const [program, verb, arg] = m[0].trim().split(/\s+/);
    add(commandName(program!, verb, arg), "command", m[0], m.index!);
  }
  for (const line of codeLines(text)) {
    const m = CODE_COMMAND.exec(line);
    if (!m) continue;
    const [, , program, verb, arg] = m;
    const known = VERBS[program!];
    const verbOk = verb && (!known || new RegExp(`^(?:${known})$`).test(verb));
    add(commandName(program!, verbOk ? verb : undefined, arg), "command", line.trim(), text.indexOf(line));
  }

  const seen = new Set<string>();
  return found
    .sort((a, b) => a.at - b.at)
    .filter((f) => {
      const key = `${f.type}|${f.name.toLowerCase()}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    })
    .slice(0, MAX_MENTIONS_PER_TEXT)
    .map(({ at: _, ...m }) => m);
}
