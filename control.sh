#!/usr/bin/env bash
# crawlchain control: setup / demo / test / start / stop / restart / status / logs.
#
#   ./control.sh demo [--json]              set up, start everything, run the demo chain, stop
#   ./control.sh test [--slow|--all] [pytest args]
#   ./control.sh start|stop|restart|status [redis|sandbox|worker|beat|flower|exporter|all]
#                      [--queues q1,q2] [--concurrency N] [--name NAME]
#   ./control.sh monitor [--once] [--json] [--interval S]
#   ./control.sh logs [component]
#   ./control.sh export COLLECTION|JOB_ID [--format jsonl|csv] [--out FILE] [--job JOB_ID]
#   ./control.sh bench dedup|storage|crawl|rate_limit [args]
#   ./control.sh faults [--json] [--runs N] [--only SCENARIO ...] [--quick] [--seed N]
#
# Processes run detached, tracked by pid files under run/, logging under logs/,
# and are stopped by pid. The embedded Redis is used unless both CELERY_BROKER_URL
# and STATE_REDIS_URL name another server.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
HOME_DIR="${CRAWLCHAIN_HOME:-$ROOT}"  # run/, logs/ and data/ live here
RUN="$HOME_DIR/run"
LOGS="$HOME_DIR/logs"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"
CELERY="$VENV/bin/celery"
QUEUES=""
CONCURRENCY=2
NAME="default"
export DEMO_BASE_URL="${DEMO_BASE_URL:-http://127.0.0.1:${DEMO_PORT:-8765}}"
cd "$ROOT"

say() { printf '%s\n' "$*" >&2; }
die() { say "control.sh: $*"; exit 1; }

# -- setup --------------------------------------------------------------------
python_bin() {
  local candidate
  for candidate in "${PYTHON:-}" python3.13 python3.12 python3.11 python3; do
    [[ -n "$candidate" ]] && command -v "$candidate" >/dev/null 2>&1 || continue
    if "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      echo "$candidate"; return 0
    fi
  done
  die "Python >= 3.11 is required; set PYTHON=/path/to/python3.11"
}

cmd_setup() {
  local stamp="$VENV/.installed"
  if [[ -f "$stamp" && "$stamp" -nt "$ROOT/pyproject.toml" ]]; then return 0; fi
  say "setup: creating $VENV and installing crawlchain with its dev tools"
  [[ -x "$PY" ]] || "$(python_bin)" -m venv "$VENV"
  "$PY" -m pip install --quiet --upgrade pip
  "$PY" -m pip install --quiet -e "$ROOT[dev]"
  touch "$stamp"
}

# -- processes ----------------------------------------------------------------
pidfile() { echo "$RUN/$1.pid"; }

is_running() {
  local file; file="$(pidfile "$1")"
  [[ -f "$file" ]] && kill -0 "$(cat "$file")" 2>/dev/null
}

spawn() {  # spawn NAME CMD...: run detached in its own session, record the pid
  local name="$1"; shift
  mkdir -p "$RUN" "$LOGS"
  if is_running "$name"; then say "$name: already running (pid $(cat "$(pidfile "$name")"))"; return 0; fi
  setsid "$@" >>"$LOGS/$name.log" 2>&1 < /dev/null &
  echo $! > "$(pidfile "$name")"
  say "$name: started (pid $!)"
}

stop_pid() {  # stop_pid NAME [GRACE_S]: TERM, wait, then KILL the process group
  local name="$1" grace="${2:-20}" file pid
  file="$(pidfile "$name")"
  [[ -f "$file" ]] || return 0
  pid="$(cat "$file")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq $((grace * 10))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      say "$name: still alive after ${grace}s, killing"
      kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
    fi
    say "$name: stopped"
  fi
  rm -f "$file"
}

uses_embedded_redis() { [[ -z "${CELERY_BROKER_URL:-}" || -z "${STATE_REDIS_URL:-}" ]]; }

start_redis() {
  uses_embedded_redis || return 0
  if is_running redis; then return 0; fi
  mkdir -p "$RUN" "$LOGS"
  rm -f "$RUN/redis.sock"
  "$PY" -m utils.embedded_redis start "$RUN" > "$(pidfile redis)"
  say "redis: started (pid $(cat "$(pidfile redis)"), socket $RUN/redis.sock)"
}

wait_http() {  # wait_http URL: until it answers, at most 10 s
  for _ in $(seq 100); do
    "$PY" - "$1" <<'PYEOF' && return 0
import sys, urllib.request
try:
    urllib.request.urlopen(sys.argv[1], timeout=1)
except Exception:
    sys.exit(1)
PYEOF
    sleep 0.1
  done
  die "$1 did not answer within 10 s"
}

start_sandbox() {
  local port="${DEMO_BASE_URL##*:}"
  spawn sandbox "$PY" -m sandbox --port "${port%%/*}"
  wait_http "$DEMO_BASE_URL/h5/feed?page=1"
}

all_queues() {  # every site's queue, and crawlchain's own (beat's launches)
  (cd "$ROOT/sites" && { ls -d */ | tr -d / | grep -v '^_'; echo crawlchain; } | paste -sd, -)
}

start_worker() {
  spawn "worker-$NAME" "$CELERY" -A worker worker --hostname "$NAME@%h" \
    -Q "${QUEUES:-$(all_queues)}" --concurrency "$CONCURRENCY" --loglevel INFO -E
}

start_beat() {
  spawn beat "$CELERY" -A worker beat --loglevel INFO --schedule "$RUN/celerybeat-schedule"
}

start_flower() {  # Flower 2 serves /api without auth only when told to; loopback only
  spawn flower env FLOWER_UNAUTHENTICATED_API="${FLOWER_UNAUTHENTICATED_API:-true}" \
    "$CELERY" -A worker flower --address=127.0.0.1 --port="${FLOWER_PORT:-5555}"
}

start_exporter() {
  spawn exporter "$PY" -m monitor.exporter --host "${EXPORTER_HOST:-127.0.0.1}" \
    --port "${EXPORTER_PORT:-9808}"
}

workers() { for f in "$RUN"/worker-*.pid; do [[ -e "$f" ]] && basename "$f" .pid; done; }

cmd_start() {
  local what="${1:-all}"
  case "$what" in
    redis) start_redis ;;
    sandbox) start_sandbox ;;
    worker) start_redis; start_worker ;;
    beat) start_redis; start_beat ;;
    flower) start_redis; start_flower ;;
    exporter) start_redis; start_exporter ;;
    all) start_redis; start_sandbox; start_worker ;;
    *) die "start: unknown component '$what'" ;;
  esac
}

cmd_stop() {
  local what="${1:-all}" w
  case "$what" in
    worker) for w in $(workers); do stop_pid "$w" 60; done ;;
    redis|sandbox|beat|flower|exporter) stop_pid "$what" ;;
    all)
      for w in $(workers); do stop_pid "$w" 60; done
      stop_pid beat; stop_pid flower; stop_pid exporter; stop_pid sandbox; stop_pid redis ;;
    *) die "stop: unknown component '$what'" ;;
  esac
}

cmd_status() {
  local name any=1
  for name in redis sandbox $(workers) beat flower exporter; do
    if is_running "$name"; then
      printf '%-16s running  pid %s\n' "$name" "$(cat "$(pidfile "$name")")"; any=0
    elif [[ -f "$(pidfile "$name")" ]]; then
      printf '%-16s dead     (stale pid file)\n' "$name"
    fi
  done
  [[ $any == 0 ]] || echo "nothing running"
}

cmd_logs() {
  local what="${1:-}"
  if [[ -n "$what" ]]; then tail -n 100 "$LOGS/$what.log"; else tail -n 20 "$LOGS"/*.log; fi
}

# -- demo and test ------------------------------------------------------------
cmd_demo() {
  local json=()
  [[ "${1:-}" == "--json" ]] && json=(--json)
  cmd_setup
  local started=()
  for c in redis sandbox "worker-$NAME"; do is_running "$c" || started+=("$c"); done
  # shellcheck disable=SC2064
  trap "demo_cleanup ${started[*]:-}" EXIT
  start_redis; start_sandbox; start_worker
  if [[ ${#json[@]} -gt 0 ]]; then
    "$PY" -m chains launch demo --json
  else
    "$PY" -m chains launch demo --watch
  fi
}

demo_cleanup() {
  local c
  for c in "$@"; do
    case "$c" in worker-*) stop_pid "$c" 60 ;; *) stop_pid "$c" ;; esac
  done
}

cmd_test() {
  cmd_setup
  local marker="not slow"
  case "${1:-}" in
    --slow) marker="slow"; shift ;;
    --all) marker=""; shift ;;
  esac
  if [[ "$marker" != "slow" ]]; then
    "$VENV/bin/ruff" check .
    "$VENV/bin/mypy" .
  fi
  "$PY" -m pytest ${marker:+-m "$marker"} "$@"
}

cmd_bench() {
  local what="${1:-}"; [[ $# -gt 0 ]] && shift
  case "$what" in
    dedup|storage|crawl|rate_limit) "$PY" -m "bench.$what" "$@" ;;
    *) die "bench: expected one of: dedup, storage, crawl, rate_limit" ;;
  esac
}

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

# -- main ---------------------------------------------------------------------
main() {
  local verb="${1:-}"; [[ $# -gt 0 ]] && shift
  local args=()
  while [[ $# -gt 0 ]]; do
    case "$verb:$1" in  # worker options belong to the verbs that start workers
      start:--queues|restart:--queues|demo:--queues) QUEUES="$2"; shift 2 ;;
      start:--concurrency|restart:--concurrency|demo:--concurrency) CONCURRENCY="$2"; shift 2 ;;
      start:--name|restart:--name|stop:--name|demo:--name) NAME="$2"; shift 2 ;;
      *) args+=("$1"); shift ;;
    esac
  done
  set -- "${args[@]+"${args[@]}"}"
  case "$verb" in
    setup) cmd_setup ;;
    demo) cmd_demo "$@" ;;
    test) cmd_test "$@" ;;
    start) cmd_setup; cmd_start "$@" ;;
    stop) cmd_stop "$@" ;;
    restart) cmd_stop "$@"; cmd_start "$@" ;;
    status) cmd_status ;;
    logs) cmd_logs "$@" ;;
    monitor) cmd_setup; "$PY" -m monitor "$@" ;;
    export) cmd_setup; "$PY" -m external_interface.storage.export "$@" ;;
    bench) cmd_setup; cmd_bench "$@" ;;
    faults) cmd_setup; "$PY" -m bench.faults "$@" ;;
    *) usage; [[ -z "$verb" ]] || exit 2 ;;
  esac
}

main "$@"
