// A tenant read that would run 30 s, on a pool whose statement timeout is far shorter: what the
// function's cancel makes of it (db-read-timeout.ts). Shared by the direct and the pooled tests.
import assert from "node:assert/strict";
import { readAsTenant, type Sql } from "../../supabase/functions/_shared/db.ts";

/**
 * Runs the slow read as a new tenant on `pool` and asserts what a user relies on: it fails as a
 * statement past its timeout (57014), it ran once (counted by a sequence `admin` creates), and the
 * pool then answers the next read as the tenant. Returns the read's error.
 */
export async function assertSlowReadCancelled(pool: Sql, admin: Sql): Promise<unknown> {
  const who = { tenantId: crypto.randomUUID(), actor: "user" };
  const runs = `public.test_read_runs_${crypto.randomUUID().replaceAll("-", "")}`;
  await admin.unsafe(`create sequence ${runs}; grant usage on sequence ${runs} to authenticated`);
  try {
    // The timeout set inside the statement (its tenant settings) is armed too late to stop it:
    // without the cancel this read answers after 30 s.
    const slow = await readAsTenant(
      pool,
      who,
      (q, tenant) => q`select nextval(${runs}::regclass), pg_sleep(30) from ${tenant}`,
    ).then(() => undefined, (err: unknown) => err);
    assert.equal((slow as { code?: string } | undefined)?.code, "57014", `cancelled: ${slow}`);
    const [counted] = await admin.unsafe(`select last_value::int as n from ${runs}`);
    assert.equal(counted!.n, 1, "run once: a statement past its timeout is not tried again");
    const [row] = await readAsTenant(
      pool,
      who,
      (q, tenant) => q<{ uid: string }[]>`select auth.uid()::text as uid from ${tenant}`,
    );
    assert.equal(row?.uid, who.tenantId, "the next read runs, as the tenant");
    return slow;
  } finally {
    await admin.unsafe(`drop sequence if exists ${runs}`);
  }
}
