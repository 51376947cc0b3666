// Applies supabase/migrations/*.sql the way `supabase db push` does, for when the Supabase CLI
// cannot be used (binary missing, DEVAI_PGLITE_MIGRATOR=builtin): pending files in filename order,
// each in its own transaction, recorded in the CLI's own bookkeeping table
// supabase_migrations.schema_migrations (version text primary key, statements text[], name text),
// so `supabase migration list` / `db push` see the same state afterwards.
// Difference from the CLI: the CLI splits a file into statements and stores each in `statements`;
// this stores the whole file as one element (the CLI only compares `version`).
import type { PGlite } from "@electric-sql/pglite";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { isCopyFromStdin } from "./wire-server.ts";

const FILE = /^(\d+)_(.*)\.sql$/;

export async function pendingMigrations(db: PGlite, dir: string) {
  await db.exec(`
    create schema if not exists supabase_migrations;
    create table if not exists supabase_migrations.schema_migrations (version text not null primary key, statements text[], name text);`);
  const applied = new Set(
    (await db.query<{ version: string }>("select version from supabase_migrations.schema_migrations")).rows.map((r) =>
      r.version
    ),
  );
  const files = (await readdir(dir)).filter((f) => FILE.test(f)).sort();
  return files.filter((f) => !applied.has(FILE.exec(f)![1]!)).map((f) => ({
    file: join(dir, f),
    version: FILE.exec(f)![1]!,
    name: FILE.exec(f)![2]!,
  }));
}

export async function applyMigrations(db: PGlite, dir: string, log: (m: string) => void): Promise<number> {
  const pending = await pendingMigrations(db, dir);
  for (const m of pending) {
    const text = await readFile(m.file, "utf8");
    // PGlite's exec of COPY ... FROM STDIN never returns and blocks the whole process (npm start
    // hung at this migration): refuse it before running anything, as the wire server refuses it.
    if (isCopyFromStdin(text)) {
      throw new Error(
        `migration ${m.version}_${m.name}.sql uses COPY ... FROM STDIN, which the embedded PGlite database ` +
          "cannot run (it would stop its only backend): write its rows with INSERT",
      );
    }
    log(`applying migration ${m.version}_${m.name}.sql`);
    await db.exec("begin");
    try {
      await db.exec(text);
      await db.query(
        "insert into supabase_migrations.schema_migrations (version, name, statements) values ($1, $2, $3)",
        [m.version, m.name, [text]],
      );
      await db.exec("commit");
    } catch (err) {
      await db.exec("rollback").catch(() => {});
      throw new Error(`migration ${m.version}_${m.name}.sql failed: ${(err as Error).message}`);
    }
  }
  return pending.length;
}
