// Reads on a read replica (SUPABASE_DB_READ_URL; docs/operations.md#read-replicas), with the
// primary standing in when the replica cannot answer: down, unreachable, out of connections, its
// session ended or the read cancelled by a replay conflict (40001), or no answer at all within the
// deadline (a hung or partitioned server: a statement timeout is the server's to enforce, so only
// the client can end that wait). The read then runs again on the primary (reads only: nothing was
// written), and for REPLICA_PAUSE_MS every read goes to the primary; then one read tries the
// replica again while the others stay on the primary until it answers. A read that is merely slow
// on the replica (its statement timeout) is not repeated on the primary. The request's rate-limit
// token is taken on the primary, once, alongside the read.
import { isDatabaseUnavailable, isStatementTimeout } from "./database-errors.ts";
import { rateLimited, type RouteClass } from "./rate-limit.ts";

/** How long reads skip a replica that could not answer. */
export const REPLICA_PAUSE_MS = 30_000;

const pausedUntil = new WeakMap<object, number>();
/** Replicas a read is trying again after a pause: one read probes, the others stay on the primary. */
const probing = new WeakSet<object>();

/**
 * The longest a replica read may go without an answer: two statements at the pool's timeout and a
 * connection attempt (35 s by default). A live server ends a statement at its timeout (a
 * one-statement read, at the cancel db-read-timeout.ts sends): only one that does not answer at all
 * reaches this deadline.
 */
export function replicaDeadlineMs(statementTimeoutMs: number, connectTimeoutSeconds: number): number {
  return 2 * statementTimeoutMs + connectTimeoutSeconds * 1000;
}

class ReplicaDeadline extends Error {}

/**
 * Runs `run` on the replica (or on the primary while the replica is paused, or when it failed),
 * charging the request's token with `charge` on the primary.
 */
export async function readOnReplica<P extends object, T>(
  replica: P,
  primary: P,
  deadlineMs: number,
  routeClass: RouteClass | undefined,
  charge: (routeClass: RouteClass) => Promise<number>,
  run: (pool: P, routeClass: RouteClass | undefined) => Promise<T>,
): Promise<T> {
  const until = pausedUntil.get(replica);
  if (until !== undefined && (until > Date.now() || probing.has(replica))) return await run(primary, routeClass);
  if (until !== undefined) probing.add(replica); // this read probes the replica again
  const [charged, answer] = await Promise.allSettled([
    routeClass ? charge(routeClass) : Promise.resolve(0),
    withinDeadline(run(replica, undefined), deadlineMs),
  ]);
  probing.delete(replica);
  if (charged.status === "rejected") throw charged.reason;
  if (routeClass && charged.value > 0) throw rateLimited(routeClass, charged.value);
  const err = answer.status === "rejected" ? answer.reason : undefined;
  const slow = isStatementTimeout(err);
  if (answer.status === "fulfilled" || (!(err instanceof ReplicaDeadline) && (!isDatabaseUnavailable(err) || slow))) {
    pausedUntil.delete(replica); // it answered (a result, or an error about the read itself)
    if (answer.status === "fulfilled") return answer.value;
    throw err;
  }
  pausedUntil.set(replica, Date.now() + REPLICA_PAUSE_MS);
  console.error(`read replica: ${String(err)}; reads go to the primary for ${REPLICA_PAUSE_MS / 1000} s`);
  return await run(primary, undefined);
}

function withinDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ReplicaDeadline(`no answer within ${ms} ms`)), ms);
  });
  // The abandoned read keeps its connection until it settles, then hands it back (db.ts releases
  // in a finally): a replica that comes back gives its connections back.
  work.catch(() => {});
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}
