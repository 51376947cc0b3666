// Rule-based entity extraction on realistic coding messages: what each rule finds, and the prose
// it must not mistake for an entity (entity-rules.ts, docs/graph.md#entity-rules).
import assert from "node:assert/strict";
import { extractEntityMentions, MAX_MENTIONS_PER_TEXT } from "../supabase/functions/_shared/entity-rules.ts";

const found = (text: string) => extractEntityMentions(text).map((e) => `${e.type}:${e.name}`);

Deno.test("entity rules: a bug report names its error, file, function, package, commands, link and person", () => {
  const text =
    "I'm getting `TypeError: Cannot read properties of undefined (reading 'map')` in src/components/Cart.tsx " +
    "when calling useCart() — it started after upgrading react@18.3.1. Ran `pnpm install` and `pnpm run build`, see " +
    "https://github.com/acme/shop/issues/42. @maria said ERR_MODULE_NOT_FOUND shows up in CI too.";
  assert.deepEqual(found(text), [
    "error:TypeError",
    "file:src/components/Cart.tsx",
    "function:useCart()",
    "package:react",
    "command:pnpm install",
    "command:pnpm run build",
    "service:github.com",
    "person:@maria",
    "error:ERR_MODULE_NOT_FOUND",
  ]);
  const react = extractEntityMentions(text).find((e) => e.name === "react")!;
  assert.equal(react.mention, "react@18.3.1", "the version stays in the mention; the entity is the package");
});

Deno.test("entity rules: a fix names scoped packages, installs, git commands and compiler error codes", () => {
  const text =
    "Fixed: the import in ./lib/cart/store.ts pointed at @types/node@20 typings. Also `npm install zod@^4.1.0 --save` " +
    "then `git rebase -i main`. rustc said E0382 and tsc said TS2322.";
  assert.deepEqual(found(text), [
    "file:./lib/cart/store.ts",
    "package:@types/node",
    "package:zod",
    "command:npm install",
    "command:git rebase",
    "error:E0382",
    "error:TS2322",
  ]);
});

Deno.test("entity rules: commands in code blocks and prompts, paths with line numbers, dotfiles, well-known files, tools named like files", () => {
  const text = "```bash\n$ deno test -A tests/\n$ docker compose up -d postgres\nmake build\n```\n" +
    "Then check supabase/migrations/20261124300000_x.sql:12. Node.js 20 is required; see .env.example and Dockerfile.";
  assert.deepEqual(found(text), [
    "command:deno test",
    "command:docker compose",
    "command:make build",
    "file:supabase/migrations/20261124300000_x.sql",
    "tool:Node.js",
    "file:.env.example",
    "file:Dockerfile",
  ]);
});

Deno.test("entity rules: calls, errno codes and exception types in a stack-trace-like message", () => {
  const text = "The handler calls fs.readFile() then parse_config(path) and gets ECONNREFUSED on 127.0.0.1:5432; " +
    "Python raised ModuleNotFoundError in /srv/app/worker/main.py.";
  assert.deepEqual(found(text), [
    "function:fs.readFile()",
    "function:parse_config()",
    "error:ECONNREFUSED",
    "error:ModuleNotFoundError",
    "file:/srv/app/worker/main.py",
  ]);
});

Deno.test("entity rules: plain prose, emails, versions and decorators are not entities (or people)", () => {
  assert.deepEqual(
    found(
      "Please run the tests and make sure nothing fails. We should go to the settings page, e.g. the profile(s) view.",
    ),
    [],
  );
  assert.deepEqual(found("Email me at bob@example.com about v1.2.3 of the plan; git is great and npm is fine."), []);
  // A decorator is not a person; it is a call.
  assert.deepEqual(found("Angular's @Component() decorator and @Injectable() are fine here."), [
    "function:Component()",
    "function:Injectable()",
  ]);
});

Deno.test("entity rules: each entity once, and a dump is capped", () => {
  assert.deepEqual(found("src/a.ts and src/a.ts and again src/a.ts"), ["file:src/a.ts"]);
  const dump = Array.from({ length: 60 }, (_, i) => `src/file${i}.ts`).join("\n");
  assert.equal(extractEntityMentions(dump).length, MAX_MENTIONS_PER_TEXT);
});

Deno.test("entity rules: an install command in prose names its packages, not the words of the sentence after them", () => {
  assert.deepEqual(found("run pnpm install zod and fix ERR_MODULE_NOT_FOUND in src/app.ts:12"), [
    "package:zod",
    "command:pnpm install",
    "error:ERR_MODULE_NOT_FOUND",
    "file:src/app.ts",
  ]);
  assert.deepEqual(found("Ran pnpm install and pnpm run build"), ["command:pnpm install", "command:pnpm run build"]);
  assert.deepEqual(found("pip install requests to fetch the page"), ["package:requests", "command:pip install"]);
  assert.deepEqual(found("npm i -D vitest @vitest/ui for the tests"), [
    "package:vitest",
    "package:@vitest/ui",
    "command:npm i",
  ]);
  assert.deepEqual(found("yarn add lodash express"), ["package:lodash", "package:express", "command:yarn add"]);
});

Deno.test("entity rules: an install command's word that is no package specifier names no package, not its head", () => {
  const packages = (text: string) => found(text).filter((f) => f.startsWith("package:"));
  for (
    const text of [
      "npm install 100%_pkg",
      "pnpm add zod%20",
      "npm i lodash/fp",
      "pip install foo$bar",
      "cargo add serde~x",
      "gem install rails!x",
      "see foo%bar@1.2.3",
      "npm install zod\nnpm run build",
    ]
  ) assert.deepEqual(packages(text).filter((p) => p !== "package:zod"), [], text);
  assert.deepEqual(packages("npm install 100%_pkg zod"), [], "the list ends at the first word that is not one");
  const command = (text: string) => extractEntityMentions(text).find((m) => m.type === "command");
  assert.equal(command("npm install 100%_pkg")?.mention, "npm install", "the command's mention is not cut at the %");
  assert.equal(command("then npm run build%x now")?.name, "npm run", "a run verb's script is a whole word or none");
  assert.equal(command("then npm run build, now")?.name, "npm run build");
  // Each manager's own specifiers: versions, extras and module paths are read whole.
  assert.deepEqual(packages("pip install 'requests[socks]==2.31' flask>=3"), ["package:requests", "package:flask"]);
  assert.deepEqual(packages("poetry add pendulum@^2.0.5"), ["package:pendulum"]);
  assert.deepEqual(packages("cargo add serde@1.0 tokio"), ["package:serde", "package:tokio"]);
  assert.deepEqual(packages("go get github.com/pkg/errors@v0.9.1"), ["package:github.com/pkg/errors"]);
  assert.deepEqual(packages("gem install rails:7.1.0"), ["package:rails"]);
  assert.deepEqual(packages("bun add @types/node@20 react@latest"), ["package:@types/node", "package:react"]);
  assert.deepEqual(packages("Run npm install zod. Restart the server"), ["package:zod"], "the clause ends the list");
  assert.deepEqual(packages("(npm install zod) and `pip install httpx` later"), ["package:zod", "package:httpx"]);
});

Deno.test("entity rules: an install option's value (a file, a feature, a version) is no package", () => {
  const packages = (text: string) => found(text).filter((f) => f.startsWith("package:"));
  assert.deepEqual(packages("pip install -r requirements.txt"), []);
  assert.deepEqual(packages("pip install -v requests"), ["package:requests"], "pip's -v is verbose: no value");
  assert.deepEqual(packages("cargo add serde --features derive tokio"), ["package:serde", "package:tokio"]);
  assert.deepEqual(packages("gem install rails -v 7.1"), ["package:rails"]);
  assert.deepEqual(packages("gem install rails -v '~> 7.1' rake"), ["package:rails", "package:rake"], "a quoted value");
  assert.deepEqual(packages("pnpm add --filter web zod"), ["package:zod"]);
});

Deno.test("entity rules: what install commands named before the whole-word rule they still name", () => {
  const packages = (text: string) => found(text).filter((f) => f.startsWith("package:"));
  // An option whose value is a URL takes the URL, not the package after it.
  assert.deepEqual(packages("pip install --index-url https://download.pytorch.org/whl/cu121 torch torchvision"), [
    "package:torch",
    "package:torchvision",
  ]);
  assert.deepEqual(packages("pip install -i https://test.pypi.org/simple/ mypkg"), ["package:mypkg"]);
  assert.deepEqual(packages("npm install --registry https://registry.npmjs.org lodash"), ["package:lodash"]);
  assert.deepEqual(packages("pip install https://example.com/pkg-1.0.tar.gz requests"), ["package:requests"]);
  assert.deepEqual(packages("pip install https://example.com/pkg.whl; restart flask"), [], "a URL may end the clause");
  assert.deepEqual(packages("see https://docs.npmjs.com/cli/npm install zod"), [], "a command inside a URL is none");
  // pnpm's -w is the workspace root (a flag); npm's names a workspace.
  assert.deepEqual(packages("pnpm add -D -w eslint"), ["package:eslint"]);
  assert.deepEqual(packages("npm install -w packages/web react"), ["package:react"]);
  // npm versions: build metadata, quoted ranges, aliases and workspace protocols.
  assert.deepEqual(packages("npm install pkg@1.0.0-rc.1+build.5"), ["package:pkg"]);
  assert.deepEqual(packages("npm install typescript@'>=5.0'"), ["package:typescript"]);
  assert.deepEqual(packages("yarn add react@npm:@preact/compat"), ["package:react"]);
  assert.deepEqual(packages("pnpm add @scope/pkg@workspace:*"), ["package:@scope/pkg"]);
});
