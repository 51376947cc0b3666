#!/usr/bin/env bash
# The ports a run's own servers listen on (sourced by scripts/test.sh, bench.sh and eval.sh).
#
# Their defaults sit below 32768, outside the kernel's ephemeral range (32768-60999 on Linux:
# /proc/sys/net/ipv4/ip_local_port_range), where every outgoing connection takes its local port: a
# server started on a fixed port in that range fails at random whenever some client socket holds
# that port at that moment (a Postgres cluster cannot listen on port 0, and the test clusters
# restart on the same port). Below 32768 only another listener can hold a port, and that is checked
# once, when the run starts: require_free_port.
#
# A held port fails the run at once, naming the variable to set, rather than moving to another free
# port: each cluster keeps its data folder by port (scripts/db.sh, data-<port>), so a port chosen
# afresh would make a new cluster (initdb) in each run and leave the old ones behind, and a program
# on our port (a killed run's leftover server, say) is better named than worked around. This
# project's own cluster or replica on that port (an earlier run's, which the run reuses) is not in
# the way. (sourced: leaves the caller's shell options alone)

# require_free_port VAR PORT [cluster|replica]: returns 0 when nothing listens on 127.0.0.1:PORT or
# when the listener is scripts/db.sh's cluster (or replica) on PORT; else prints what holds it and
# which variable to set, and returns 1. Warns when PORT is in the ephemeral range (a port the user
# chose explicitly, which still works as before, with the same risk).
require_free_port() {
  local var=$1 port=$2 kind=${3:-} low high holder=""
  if [[ ! "$port" =~ ^[0-9]+$ ]] || ((port < 1 || port > 65535)); then
    echo "$var=$port is not a port number" >&2
    return 1
  fi
  if read -r low high 2>/dev/null </proc/sys/net/ipv4/ip_local_port_range && ((port >= low && port <= high)); then
    echo "warning: $var=$port is in this machine's ephemeral port range ($low-$high): an outgoing connection may hold it when the server starts; a port below $low cannot be" >&2
  fi
  # A connection to it is refused when nothing listens (bash's /dev/tcp: no tool needed).
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || return 0
  if [[ -n "$kind" ]] && db_cluster_listens "$kind" "$port"; then return 0; fi
  if command -v ss >/dev/null 2>&1; then
    holder=$(ss -Hltnp "sport = :$port" 2>/dev/null | grep -oE 'users:\(\(.*\)\)' | head -1) || true
  fi
  echo "port $port ($var) is already held by another program${holder:+ ($holder)}: stop it, or set $var to a free port below 32768" >&2
  return 1
}

# db_cluster_listens cluster|replica PORT: scripts/db.sh's cluster (data-PORT) or replica
# (replica-PORT) in the local Postgres root is the server running on PORT (postmaster.pid: its
# pid, alive, on line 1; its port on line 4).
db_cluster_listens() {
  local dir pid pid_port
  case "$1" in
    cluster) dir="data-$2" ;;
    replica) dir="replica-$2" ;;
    *) return 1 ;;
  esac
  local pidfile="${DEVAI_PG_ROOT:-/var/cache/devai-memory/trixie-pg17}/srv/devai/$dir/postmaster.pid"
  [[ -r "$pidfile" ]] || return 1
  pid=$(sed -n 1p "$pidfile")
  pid_port=$(sed -n 4p "$pidfile")
  [[ "$pid_port" == "$2" && "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null
}
