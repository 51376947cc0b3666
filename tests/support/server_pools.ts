// The pools of the test servers running in this process (tests/support/http_server.ts): a
// search's reinforcement and event are written behind its answer on its server's pool, so counts
// taken to assert "nothing written" (seed.ts's tenantWrites) first write what those pools hold.
import type { Sql } from "../../supabase/functions/_shared/db.ts";

export const runningServerPools = new Set<Sql>();
