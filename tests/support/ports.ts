// The ports of the servers tests start on a fixed port: a Postgres cluster cannot listen on port 0,
// and these restart on the same port mid-test. Every other server a test starts listens on port 0
// (the pooler test's PgBouncer: on a free port below 32768, tests/support/http.ts freePort).
// The defaults sit below 32768, outside the kernel's ephemeral range (32768-60999 here:
// /proc/sys/net/ipv4/ip_local_port_range), where an outgoing connection's local end may hold a port
// at the moment a test binds it. scripts/test.sh sets the same defaults and, when it starts, fails
// naming the variable if another program listens on one (scripts/lib/ports.sh). Each variable
// overrides its default.
export const TEST_PORT_DEFAULTS = {
  /** The test cluster (scripts/test.sh), when DATABASE_URL is not set. */
  DEVAI_TEST_PG_PORT: 24329,
  /** tests/db_outage.test.ts's throwaway cluster (scripts/test.sh: the test cluster's port + 22). */
  DEVAI_TEST_OUTAGE_PG_PORT: 24351,
  /** tests/upgrade.test.ts's throwaway cluster (scripts/test.sh: the test cluster's port + 24). */
  DEVAI_TEST_UPGRADE_PG_PORT: 24353,
  /** tests/pglite_backend.test.ts's embedded database. */
  DEVAI_TEST_PGLITE_PORT: 24345,
  /** tests/start_embedded.test.ts's `npm start`: its embedded database and its functions server. */
  DEVAI_TEST_START_PG_PORT: 24348,
  DEVAI_TEST_START_FN_PORT: 24349,
} as const;

/** The port the variable names, else its default. */
export function testPort(name: keyof typeof TEST_PORT_DEFAULTS): number {
  const text = Deno.env.get(name);
  return text ? Number(text) : TEST_PORT_DEFAULTS[name];
}
