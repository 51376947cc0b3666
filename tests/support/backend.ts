// Which database the suite runs against: scripts/test.sh runs it twice, on the real Postgres 17
// server (DEVAI_TEST_BACKEND=postgres, the default) and on embedded PGlite (=pglite). Tests that
// need a real server say so with realServerOnly: on PGlite they are reported as ignored, with the
// reason in their name, so the skip count is visible in the summary and never silent.
export type TestBackend = "postgres" | "pglite";

export const testBackend: TestBackend = Deno.env.get("DEVAI_TEST_BACKEND") === "pglite" ? "pglite" : "postgres";

/** Deno.test options for a test that needs a real Postgres server; `why` is shown when skipped. */
export function realServerOnly(name: string, why: string): { name: string; ignore: boolean } {
  return testBackend === "pglite"
    ? { name: `${name} [real Postgres only: ${why}]`, ignore: true }
    : { name, ignore: false };
}
