// The one mapping of database errors to answers (_shared/database-errors.ts), fed real errors from
// the real database: values Postgres refuses are 400, rule violations 4xx, and a database that is
// away or too slow is 503 with Retry-After. Nothing here is a 500.
import assert from "node:assert/strict";
import { createSql, readAsTenant } from "../supabase/functions/_shared/db.ts";
import { DATABASE_RETRY_AFTER_SECONDS, mapDatabaseError } from "../supabase/functions/_shared/database-errors.ts";
import { realServerOnly } from "./support/backend.ts";
import { testSql } from "./support/seed.ts";
import { dbTest } from "./support/http.ts";
import { assertSlowReadCancelled } from "./support/slow-read.ts";

async function errorOf(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (err) {
    return err;
  }
  assert.fail("expected the database to refuse");
}

dbTest("database errors: data exceptions (class 22) are 400, a unique violation 409", async () => {
  const sql = testSql(1);
  try {
    for (
      const [what, query] of [
        ["year 0 (22008)", "select '0000-01-01'::timestamptz"],
        ["integer out of range (22003)", "select 2147483648::int"],
        ["not a uuid (22P02)", "select 'not-a-uuid'::uuid"],
        ["division by zero (22012)", "select 1 / 0"],
      ]
    ) {
      const mapped = mapDatabaseError(await errorOf(() => sql.unsafe(query!)));
      assert.equal(mapped?.status, 400, what);
      assert.equal(mapped?.code, "invalid_request", what);
    }
    const unique = mapDatabaseError(
      await errorOf(() =>
        sql.begin(async (tx) => {
          await tx`create temporary table t (x int primary key) on commit drop`;
          await tx`insert into t values (1), (1)`;
        })
      ),
    );
    assert.equal(unique?.status, 409);
  } finally {
    await sql.end();
  }
});

dbTest("database errors: a refused connection is 503 database_unavailable with Retry-After", async () => {
  // A port nothing listens on (a closed listener's port).
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const sql = createSql(`postgresql://postgres@127.0.0.1:${port}/postgres`, { max: 1 });
  try {
    const mapped = mapDatabaseError(await errorOf(() => sql`select 1`));
    assert.equal(mapped?.status, 503);
    assert.equal(mapped?.code, "database_unavailable");
    assert.equal(mapped?.headers?.["retry-after"], String(DATABASE_RETRY_AFTER_SECONDS));
  } finally {
    await sql.end({ timeout: 1 });
  }
});

Deno.test({
  ...realServerOnly(
    "database errors: a statement timeout and a terminated connection are 503",
    "PGlite has no statement timer and one backend to terminate",
  ),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const sql = testSql(2);
    try {
      const slow = await errorOf(() =>
        sql.begin(async (tx) => {
          await tx`set local statement_timeout = 50`;
          await tx`select count(*) from generate_series(1, 1000000000)`;
        })
      );
      assert.equal((slow as { code?: string }).code, "57014");
      assert.equal(mapDatabaseError(slow)?.status, 503);
      assert.match(mapDatabaseError(slow)!.message, /did not answer in time/);

      const victim = createSql(Deno.env.get("DATABASE_URL")!, {
        max: 1,
        applicationName: `devai-test-victim-${crypto.randomUUID().slice(0, 8)}`,
      });
      try {
        // Terminated inside the victim's open transaction, and waited for (the timeout form returns
        // once the backend is gone): an idle connection closed before the next query would just be
        // reopened by the pool, and which of the two happened would be a race.
        const terminated = await errorOf(() =>
          victim.begin(async (tx) => {
            const [backend] = await tx<{ pid: number }[]>`select pg_backend_pid() as pid`;
            const [gone] = await sql<{ ok: boolean }[]>`select pg_terminate_backend(${backend!.pid}, 10000) as ok`;
            assert.equal(gone!.ok, true);
            await tx`select 1`;
          })
        );
        const mapped = mapDatabaseError(terminated);
        assert.equal(mapped?.status, 503, `${(terminated as { code?: string }).code}: ${terminated}`);
      } finally {
        await victim.end({ timeout: 1 });
      }
    } finally {
      await sql.end();
    }
  },
});

Deno.test({
  ...realServerOnly(
    "database errors: a one-statement read as the tenant is cancelled past the pool's statement timeout (503), not run again, and its connection serves the next read",
    "PGlite's socket server takes no cancel requests",
  ),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    // One connection: the read after the cancelled one runs on the same server session.
    const pool = createSql(Deno.env.get("DATABASE_URL")!, { max: 1, statementTimeoutMs: 1_000 });
    const admin = testSql(1);
    try {
      const slow = await assertSlowReadCancelled(pool, admin);
      assert.equal(mapDatabaseError(slow)?.status, 503);
    } finally {
      await pool.end();
      await admin.end();
    }
  },
});

Deno.test({
  ...realServerOnly(
    "database errors: a cancel request that cannot connect leaves the read to finish and the process up",
    "the read runs on a real server, through a proxy",
  ),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    // A proxy that takes one connection and then refuses every other: the pool's one connection
    // goes through, the cancel request's connection is refused. postgres.js's own query.cancel()
    // left that refusal as an unhandled rejection, which ends a Deno process.
    const server = new URL(Deno.env.get("DATABASE_URL")!);
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const proxied = (async () => {
      const client = await listener.accept();
      listener.close();
      const upstream = await Deno.connect({ hostname: server.hostname, port: Number(server.port || 5432) });
      await Promise.allSettled([client.readable.pipeTo(upstream.writable), upstream.readable.pipeTo(client.writable)]);
    })();
    const url = new URL(server);
    url.port = String((listener.addr as Deno.NetAddr).port);
    const pool = createSql(url.toString(), { max: 1, statementTimeoutMs: 200 });
    try {
      const [row] = await readAsTenant(
        pool,
        { tenantId: crypto.randomUUID(), actor: "user" },
        (q, tenant) => q<{ done: boolean }[]>`select true as done from ${tenant}, pg_sleep(1.5)`,
      );
      assert.equal(row?.done, true, "not cancelled (the request could not connect): the read answers");
    } finally {
      await pool.end();
      await proxied;
    }
  },
});
