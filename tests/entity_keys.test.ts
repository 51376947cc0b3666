// Entity keys are one key in every place it is computed (migration 20261130400000,
// docs/graph.md#entities): public.memory_entity_key in the database, whatever collation the name
// comes with (a database created with the plain C locale lower-cased ASCII only and dropped the
// other letters), and entityKey, which the rule extractor deduplicates a text's mentions by. On the
// real Postgres and on PGlite (DEVAI_TEST_BACKEND=pglite), which has no ICU.
import assert from "node:assert/strict";
import { entityKey } from "../supabase/functions/_shared/entity-rules.ts";
import { testSql } from "./support/seed.ts";

const sql = testSql(1);
const opts = { sanitizeOps: false, sanitizeResources: false };

// Names a coding agent's user writes: accents, ligatures, Turkish dotted I, Greek final sigma,
// full-width and circled letters, scripts without case, marks, superscripts and other digits.
const NAMES = [
  "Zoë",
  "ZOË",
  "Zoé",
  "Jürgen",
  "JÜRGEN",
  "Ærø",
  "ÆRØ",
  "İstanbul",
  "ISTANBUL",
  "ıstanbul",
  "ＮＯＤＥ.ＪＳ",
  "Node.js",
  "C++",
  "C#",
  "東京",
  "ΟΔΥΣΣΕΥΣ",
  "Ⓐb",
  "ﬁle",
  "Ⅻ",
  "x²",
  "٣x",
  "हिन्दी",
  "e\u0301cole",
  "ß",
  "ẞ",
  "ǅemal",
  "👍ok",
];

Deno.test(
  { name: "entity keys: the database computes the same key under any collation, as entityKey does", ...opts },
  async () => {
    const rows = await sql<{ name: string; key: string; c_key: string }[]>`
    select n as name, public.memory_entity_key(n) as key,
           public.memory_entity_key(n collate "C") collate "default" as c_key
      from unnest(${NAMES}::text[]) with ordinality as x(n, o) order by o`;
    for (const r of rows) {
      assert.equal(r.c_key, r.key, `${r.name}: the C collation changes nothing`);
      assert.equal(entityKey(r.name), r.key, `${r.name}: entityKey agrees with the database`);
    }
    const key = (n: string) => rows.find((r) => r.name === n)!.key;
    assert.equal(key("ZOË"), key("Zoë"));
    assert.notEqual(key("Zoé"), key("Zoë"), "another letter, another person");
    assert.equal(key("JÜRGEN"), "jürgen");
    assert.equal(key("ÆRØ"), "ærø");
    assert.equal(key("İstanbul"), key("ISTANBUL"), "dotted capital I folds to i");
    assert.equal(key("ＮＯＤＥ.ＪＳ"), key("Node.js"), "full-width letters are the ASCII ones");
    assert.equal(key("東京"), "東京", "a name without ASCII letters has a key");
    assert.equal(key("ΟΔΥΣΣΕΥΣ"), "οδυσσευσ", "letter by letter: no final-sigma form");
  },
);
