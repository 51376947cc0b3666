#!/usr/bin/env bash
# A big tenant's own HNSW index (docs/operations.md#a-dedicated-vector-index-for-a-big-tenant), by
# hand: the hourly devai-vector-indexes job and the queue worker build and drop them on their own;
# this is for a database whose worker does not run, or a tenant under the threshold:
#   bash scripts/dedicated-vector-index.sh <tenant uuid>          build it (CREATE INDEX CONCURRENTLY:
#                                                                 every tenant's writes go on meanwhile)
#   bash scripts/dedicated-vector-index.sh <tenant uuid> --drop   drop it (DROP INDEX CONCURRENTLY)
# On DATABASE_URL when set (a hosted project: its direct connection or the session pooler), else on
# the local cluster (scripts/db.sh). The statement is public.memory_dedicated_vector_index_sql's.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ $# -lt 1 || ! "$1" =~ ^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$ ]] \
  || [[ $# -gt 2 || ( $# -eq 2 && "$2" != "--drop" ) ]]; then
  echo "usage: bash scripts/dedicated-vector-index.sh <tenant uuid> [--drop]" >&2
  exit 2
fi
drop=false
[[ "${2:-}" == "--drop" ]] && drop=true
statement="$(bash "$here/db.sh" psql -v ON_ERROR_STOP=1 -Atc \
  "select public.memory_dedicated_vector_index_sql('$1'::uuid, $drop)")"
echo "[index] $statement" >&2
bash "$here/db.sh" psql -v ON_ERROR_STOP=1 -c "$statement"
