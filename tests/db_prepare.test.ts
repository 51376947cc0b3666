// Prepared statements (DB_PREPARE, db.ts's preparesStatements): where a pool prepares its
// statements, and that it really does on the database (and does not where it must not).
import assert from "node:assert/strict";
import { createSql, readAsTenant } from "../supabase/functions/_shared/db.ts";
import { preparesStatements } from "../supabase/functions/_shared/db-prepare.ts";
import { ConfigError, loadConfig } from "../supabase/functions/_shared/env.ts";
import { testDatabaseUrl } from "./support/config.ts";

Deno.test("DB_PREPARE auto: prepared on a direct connection or this machine, never behind a transaction pooler", () => {
  const prepared = [
    "postgresql://postgres:pw@db.abcdefghij.supabase.co:5432/postgres", // direct connection
    "postgresql://postgres.abcdefghij:pw@aws-0-eu-west-1.pooler.supabase.com:5432/postgres", // Supavisor, session mode
    "postgresql://postgres@db.example.com/postgres", // no port: 5432
    "postgresql://postgres@127.0.0.1:54322/postgres", // the local cluster
    "postgres://postgres@localhost:55432/postgres",
    "postgresql://postgres@[::1]:54322/postgres",
  ];
  const unprepared = [
    "postgresql://postgres.abcdefghij:pw@aws-0-eu-west-1.pooler.supabase.com:6543/postgres", // Supavisor, transaction mode
    "postgresql://app:pw@127.0.0.1:6432/app", // PgBouncer's port, even on this machine
    "postgresql://app:pw@db.example.com:7777/app", // a port it cannot vouch for
    "not a url",
  ];
  for (const url of prepared) assert.equal(preparesStatements(url), true, url);
  for (const url of unprepared) assert.equal(preparesStatements(url), false, url);
  assert.equal(preparesStatements(unprepared[0]!, "on"), true);
  assert.equal(preparesStatements(prepared[0]!, "off"), false);
});

Deno.test("DB_PREPARE: auto by default; a value other than auto, on or off is refused at start", () => {
  const minimal = { DATABASE_URL: "postgresql://postgres@127.0.0.1:1/x", SUPABASE_JWT_SECRET: "s".repeat(32) };
  assert.equal(loadConfig(minimal).dbPrepare, "auto");
  assert.equal(loadConfig({ ...minimal, DB_PREPARE: "off" }).dbPrepare, "off");
  assert.throws(
    () => loadConfig({ ...minimal, DB_PREPARE: "yes" }),
    (e) => e instanceof ConfigError && /DB_PREPARE/.test(e.message),
  );
});

/** Named statements the connection holds after a tenant read ran twice on it. */
async function preparedAfterReads(prepare: "on" | "off"): Promise<number> {
  const sql = createSql(testDatabaseUrl(), { max: 1, prepare });
  try {
    const who = { tenantId: crypto.randomUUID(), actor: "user" };
    for (let i = 0; i < 2; i++) {
      const [row] = await readAsTenant(
        sql,
        who,
        (q, tenant) => q<{ uid: string }[]>`select auth.uid()::text as uid, ${i}::int as i from ${tenant}`,
      );
      assert.equal(row?.uid, who.tenantId, "the read ran as the tenant");
    }
    // max 1: the same connection, so its own prepared statements are what the view lists.
    const [held] = await sql<{ n: number }[]>`select count(*)::int as n from pg_prepared_statements`;
    return held!.n;
  } finally {
    await sql.end();
  }
}

Deno.test("DB_PREPARE on: a tenant read is prepared once on its connection; off: nothing is prepared", async () => {
  assert.ok(await preparedAfterReads("on") >= 1);
  assert.equal(await preparedAfterReads("off"), 0);
});
