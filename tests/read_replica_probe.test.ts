// After a replica could not answer, reads skip it for REPLICA_PAUSE_MS; then ONE read probes it
// while the others stay on the primary, and its answer decides: the replica is used again, or
// paused again (docs/operations.md#read-replicas; _shared/db-replica.ts). The routing is what is
// tested here, on two stand-in pools and the clock moved past the pause: a real replica's failures
// are read_replica_fallback.test.ts's.
import assert from "node:assert/strict";
import { readOnReplica, REPLICA_PAUSE_MS } from "../supabase/functions/_shared/db-replica.ts";

type Pool = { name: "replica" | "primary" };

/** Two stand-in pools, the reads each ran, and what the replica does next. */
function setup() {
  const replica: Pool = { name: "replica" }, primary: Pool = { name: "primary" };
  const ran: string[] = [];
  let replicaAnswer: () => Promise<string> = () => Promise.resolve("replica");
  const read = () =>
    readOnReplica(replica, primary, 10_000, undefined, () => Promise.resolve(0), (pool: Pool) => {
      ran.push(pool.name);
      return pool === replica ? replicaAnswer() : Promise.resolve("primary");
    });
  const refuse = () => Promise.reject(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }));
  return { ran, read, refuse, setReplica: (answer: () => Promise<string>) => (replicaAnswer = answer) };
}

/** Runs `fn` with Date.now() `ms` ahead (the routing reads the clock when a read starts). */
async function later<T>(ms: number, fn: () => Promise<T>): Promise<T> {
  const now = Date.now;
  Date.now = () => now() + ms;
  try {
    return await fn();
  } finally {
    Date.now = now;
  }
}

Deno.test("read replica: after the pause one read probes it while the others stay on the primary; an answer brings reads back", async () => {
  const { ran, read, refuse, setReplica } = setup();
  const error = console.error;
  console.error = () => {}; // the pause is logged
  try {
    setReplica(refuse);
    assert.equal(await read(), "primary", "refused: the read runs on the primary");
    assert.deepEqual(ran.splice(0), ["replica", "primary"]);
    assert.equal(await read(), "primary");
    assert.deepEqual(ran.splice(0), ["primary"], "paused: the replica is not tried");

    await later(REPLICA_PAUSE_MS + 1, async () => {
      // The probe is held open: every read meanwhile goes to the primary.
      let answer!: (v: string) => void;
      setReplica(() => new Promise<string>((resolve) => (answer = resolve)));
      const probe = read();
      assert.equal(await read(), "primary");
      assert.equal(await read(), "primary");
      assert.deepEqual(ran.splice(0), ["replica", "primary", "primary"], "one probe, the others on the primary");
      answer("replica");
      assert.equal(await probe, "replica");
      setReplica(() => Promise.resolve("replica"));
      assert.equal(await read(), "replica", "it answered: reads go to the replica again");
      assert.deepEqual(ran.splice(0), ["replica"]);
    });
  } finally {
    console.error = error;
  }
});

Deno.test("read replica: a probe that fails pauses it again, and that read runs on the primary", async () => {
  const { ran, read, refuse, setReplica } = setup();
  const error = console.error;
  console.error = () => {};
  try {
    setReplica(refuse);
    await read();
    await later(REPLICA_PAUSE_MS + 1, async () => {
      ran.splice(0);
      assert.equal(await read(), "primary", "the probe failed: its read runs on the primary");
      assert.deepEqual(ran.splice(0), ["replica", "primary"]);
      assert.equal(await read(), "primary");
      assert.deepEqual(ran.splice(0), ["primary"], "paused again: not probed back to back");
    });
  } finally {
    console.error = error;
  }
});

Deno.test("read replica: what the replica's error decides (timeout, replay conflict, a bad read)", async () => {
  const error = console.error;
  console.error = () => {};
  try {
    const fails = (code: string) => () => Promise.reject(Object.assign(new Error(code), { code }));
    // Past its statement timeout: a 503 as on the primary, not run there again, the replica kept.
    let s = setup();
    s.setReplica(fails("57014"));
    await assert.rejects(s.read(), (e: { code?: string }) => e.code === "57014");
    assert.deepEqual(s.ran.splice(0), ["replica"], "a slow read is not repeated on the primary");
    s.setReplica(() => Promise.resolve("replica"));
    assert.equal(await s.read(), "replica", "and the replica is not paused");
    // Cancelled for a replay conflict (40001): the primary answers, and the replica is paused.
    s = setup();
    s.setReplica(fails("40001"));
    assert.equal(await s.read(), "primary");
    assert.deepEqual(s.ran.splice(0), ["replica", "primary"]);
    assert.equal(await s.read(), "primary");
    assert.deepEqual(s.ran.splice(0), ["primary"], "paused");
    // An error about the read itself (bad input): the caller's, not the replica's.
    s = setup();
    s.setReplica(fails("22P02"));
    await assert.rejects(s.read(), (e: { code?: string }) => e.code === "22P02");
    s.setReplica(() => Promise.resolve("replica"));
    assert.equal(await s.read(), "replica");
    assert.deepEqual(s.ran.splice(0), ["replica", "replica"], "never on the primary, never paused");
  } finally {
    console.error = error;
  }
});
