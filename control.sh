#!/usr/bin/env bash
# crawlchain control: setup / demo / test / start / stop / restart / status / logs / docs.
#
#   ./control.sh setup                      the runtime, pinned by requirements/constraints.txt
#                                           (CRAWLCHAIN_EXTRAS=mongo,postgres adds extras)
#   ./control.sh lock [--upgrade]           regenerate that file from pyproject.toml (uv)
#   ./control.sh demo [--json]              set up, start everything, run the demo chain, stop
#   ./control.sh test [--slow|--all] [pytest args]   (ruff, mypy --strict, lint-imports, pytest)
#   ./control.sh start|stop|restart|status [redis|sandbox|worker|beat|flower|exporter|api|all]
#                      [--queues q1,q2] [--concurrency N] [--name NAME]
#                      (stop lets running units finish: TASK_TIME_LIMIT_S + STOP_MARGIN_S;
#                      start api writes API_TOKEN into the env file when there is none)
#   ./control.sh queues                     the queues a worker here consumes (every site's)
#   ./control.sh launch|try|shell|new-site|export|monitor|jobs|wait|pause|resume|cancel|retry|workers ...
#                      the crawlchain command's (python -m cli VERB --help);
#                      e.g. ./control.sh monitor --once --json
#   ./control.sh monitor [--once] [--json] [--interval S]
#   ./control.sh logs [component]
#   ./control.sh export COLLECTION|JOB_ID [--format jsonl|csv|json|parquet] [--out FILE]
#                      [--job JOB_ID] [--since WHEN] [--fields A,B]
#   ./control.sh bench dedup|storage|crawl|chain|rate_limit|export|polite|generic|api_export|
#                      browser|frontier [args]
#                      (python -m bench.X --help)
#   ./control.sh faults [--json] [--runs N] [--only SCENARIO ...] [--quick] [--seed N]
#                       [--only SCENARIO --replay SEED] [--keep] (report under run/faults/)
#   ./control.sh faults --browser [--json] [--runs N] [--only SCENARIO ...]  (bench.fault_browser)
#   ./control.sh chaos --minutes M --seed S [--json] [--units N] [--workers N] [--keep]
#                      a large crawl under a seeded nemesis (root: a network namespace
#                      and a tmpfs of its own, removed on exit; report under run/chaos/)
#   ./control.sh --hosts HOSTS_FILE start|stop|restart|status [worker|beat|flower|exporter]
#   ./control.sh docs [--check]             regenerate docs/configuration.md from config.py
#                                           (--check: exit 1, naming what is stale)
#
# Processes run detached, tracked by pid files under run/, logging under logs/ at
# LOG_LEVEL (DEBUG|INFO|WARNING|ERROR, default INFO) in LOG_FORMAT (text|json),
# and are stopped by pid. The embedded Redis (a redis-server >= 7 on a unix socket under
# run/; setup installs Debian's when root) is used unless both CELERY_BROKER_URL and
# STATE_REDIS_URL name another server. Settings come from the environment, then
# from the cluster's env file (CRAWLCHAIN_ENV_FILE, default crawlchain.env here; mode
# 600). With --hosts, each verb runs on every host of the file over $CRAWLCHAIN_SSH
# (ops/hosts.py describes the file); exactly one host may run beat.
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
NAME_GIVEN=""
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

LOCK="$ROOT/requirements/constraints.txt"  # every version, pinned: ./control.sh lock

install() {  # install STAMP SPEC: SPEC with every version from the lock, once per change
  local stamp="$VENV/.installed-$1" spec="$2"
  if [[ -f "$stamp" && "$stamp" -nt "$ROOT/pyproject.toml" && "$stamp" -nt "$LOCK" \
        && "$(cat "$stamp")" == "$spec" ]]; then return 0; fi
  [[ -f "$LOCK" ]] || die "setup: $LOCK is missing; run ./control.sh lock"
  [[ -x "$PY" ]] || "$(python_bin)" -m venv "$VENV"
  say "setup: pip install -c ${LOCK#"$ROOT"/} -e '$spec' (versions pinned by the lock file)"
  "$PY" -m pip install --quiet --disable-pip-version-check -c "$LOCK" -e "$spec"
  echo "$spec" > "$stamp"
}

cmd_setup() {  # the runtime only (worker hosts); CRAWLCHAIN_EXTRAS=mongo,... adds extras
  local extras="${CRAWLCHAIN_EXTRAS:-}" dev="$VENV/.installed-dev"
  if [[ -z "$extras" && -f "$dev" && "$dev" -nt "$ROOT/pyproject.toml" && "$dev" -nt "$LOCK" ]]
  then :  # a developer's venv: the dev install holds the runtime already
  else install runtime "$ROOT${extras:+[$extras]}"; fi
  ensure_redis_server
  ensure_chromium
}

ensure_redis_server() {  # the embedded Redis runs a redis-server >= 7: Debian's, as root
  uses_embedded_redis || return 0
  "$PY" -m ops.embedded_redis binary >/dev/null 2>&1 && return 0
  apt_install redis-server "a redis-server >= 7, for the embedded Redis" \
    "brew install redis, or set REDIS_SERVER=PATH"
}

ensure_chromium() {  # a real browser (the console's test, a browser client): Debian's, as root
  [[ -n "${BROWSER_EXECUTABLE:-}" && -x "${BROWSER_EXECUTABLE}" ]] && return 0
  command -v chromium >/dev/null 2>&1 && return 0
  apt_install chromium "Chromium, for what drives a real browser" "set BROWSER_EXECUTABLE=PATH"
}

apt_install() {  # apt_install PACKAGE WHAT ELSE: Debian's package as root; else say how
  local package="$1" what="$2" otherwise="$3"
  if [[ $EUID -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    say "setup: no $what here: install it (apt-get install $package), or $otherwise"
    return 0
  fi
  say "setup: apt-get install $package ($what)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends "$package" >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq --no-install-recommends "$package"; } \
    || die "setup: apt-get install $package failed; install it by hand, or $otherwise"
}

setup_dev() {  # the runtime and the dev tools (pytest, mypy, ruff, deptry, uv), pinned
  install dev "$ROOT[dev${CRAWLCHAIN_EXTRAS:+,$CRAWLCHAIN_EXTRAS}]"
  ensure_redis_server
  ensure_chromium
}

cmd_lock() {  # regenerate the lock from pyproject.toml with uv (itself pinned by the lock)
  [[ -x "$PY" ]] || "$(python_bin)" -m venv "$VENV"
  [[ -x "$VENV/bin/uv" ]] || "$PY" -m pip install --quiet -c "$LOCK" uv
  mkdir -p "$(dirname "$LOCK")"
  "$VENV/bin/uv" pip compile "$ROOT/pyproject.toml" --all-extras --universal \
    --python-version 3.11 --quiet --custom-compile-command "./control.sh lock" -o "$LOCK" "$@"
  say "lock: wrote ${LOCK#"$ROOT"/}; commit it, then ./control.sh setup installs from it"
}

load_env() {  # export the cluster's env file; variables already set win over it
  local file="${CRAWLCHAIN_ENV_FILE-$ROOT/crawlchain.env}"  # set empty: no file
  [[ -n "$file" ]] || return 0
  [[ -e "$file" || -n "${CRAWLCHAIN_ENV_FILE:-}" ]] || return 0  # no default file: fine
  [[ -x "$PY" ]] || cmd_setup
  local exports
  exports="$("$PY" -m ops.envfile export)" || exit 2  # it said why (mode, missing file)
  eval "$exports"
}

log_settings() {  # LOG_LEVEL and LOG_FORMAT, checked, for every process started from here
  LOG_LEVEL="${LOG_LEVEL:-INFO}"; LOG_LEVEL="${LOG_LEVEL^^}"
  LOG_FORMAT="${LOG_FORMAT:-text}"; LOG_FORMAT="${LOG_FORMAT,,}"
  case "$LOG_LEVEL" in DEBUG|INFO|WARNING|ERROR|CRITICAL) ;;
    *) die "LOG_LEVEL=$LOG_LEVEL: expected DEBUG, INFO, WARNING, ERROR or CRITICAL" ;; esac
  case "$LOG_FORMAT" in text|json) ;; *) die "LOG_FORMAT=$LOG_FORMAT: expected text or json" ;; esac
  export LOG_LEVEL LOG_FORMAT
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
  if [[ "$LOG_FORMAT" == json ]]; then  # every line JSON: what it prints too (utils/logs.py)
    setsid "$@" > >(exec setsid "$PY" -m ops.log_wrap wrap >>"$LOGS/$name.log" 2>&1) 2>&1 \
      < /dev/null &
  else
    setsid "$@" >>"$LOGS/$name.log" 2>&1 < /dev/null &
  fi
  echo $! > "$(pidfile "$name")"
  say "$name: started (pid $!)"
}

stop_pid() {  # stop_pid NAME [GRACE_S] [SIGNAL]: TERM, wait; then SIGNAL and 15 s more, if
  local name="$1" grace="${2:-20}" last="${3:-}" file pid  # given; then KILL the group
  file="$(pidfile "$name")"
  [[ -f "$file" ]] || return 0
  pid="$(cat "$file")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    wait_gone "$pid" "$grace"
    if [[ -n "$last" ]] && kill -0 "$pid" 2>/dev/null; then
      say "$name: still running after ${grace}s, sending SIG$last"
      kill -"$last" "$pid" 2>/dev/null || true
      wait_gone "$pid" 15
    fi
    if kill -0 "$pid" 2>/dev/null; then
      say "$name: still alive, killing"
      kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
    fi
    say "$name: stopped"
  fi
  rm -f "$file"
}

wait_gone() {  # wait_gone PID SECONDS
  for _ in $(seq $(($2 * 10))); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
}

uses_embedded_redis() { [[ -z "${CELERY_BROKER_URL:-}" || -z "${STATE_REDIS_URL:-}" ]]; }

start_redis() {
  uses_embedded_redis || return 0
  if is_running redis; then return 0; fi
  mkdir -p "$RUN" "$LOGS"
  rm -f "$RUN/redis.sock"
  local pid
  pid="$("$PY" -m ops.embedded_redis start "$RUN")" || die "redis: not started (above: why)"
  echo "$pid" > "$(pidfile redis)"
  say "redis: started (pid $pid, socket $RUN/redis.sock)"
}

wait_http() {  # wait_http URL: until it answers (any status: a defended site says 400), 10 s
  for _ in $(seq 100); do
    "$PY" - "$1" <<'PYEOF' && return 0
import sys, urllib.error, urllib.request
try:
    urllib.request.urlopen(sys.argv[1], timeout=1)
except urllib.error.HTTPError:
    pass
except Exception:
    sys.exit(1)
PYEOF
    sleep 0.1
  done
  die "$1 did not answer within 10 s"
}

start_sandbox() {  # the defended site, and its exit proxies listed in run/exits.txt
  local port="${DEMO_BASE_URL##*:}"
  is_running sandbox || rm -f "$RUN/exits.txt"
  spawn sandbox "$PY" -m sandbox --port "${port%%/*}" --exits-file "$RUN/exits.txt"
  wait_http "$DEMO_BASE_URL/health"
}

sandbox_proxies() {  # a worker next to the sandbox goes through its exits, unless told otherwise
  [[ -z "${PROXY_URLS:-}${PROXY_FILE:-}${PROXY_ENDPOINT:-}" ]] && is_running sandbox \
    && [[ -f "$RUN/exits.txt" ]] && echo "PROXY_FILE=$RUN/exits.txt"
  return 0
}

all_queues() {  # every site's queue, and crawlchain's own (beat's launches)
  (cd "$ROOT/sites" && { ls -d */ | tr -d / | grep -v '^_'; echo crawlchain; } | paste -sd, -)
}

banner() { [[ "$LOG_FORMAT" != json ]] || echo --quiet; }  # Celery's banner is no JSON

start_worker() {  # returns once the worker consumes: a launch right after is not refused
  local proxies=() found node="$NAME@${CRAWLCHAIN_HOST:-$(hostname)}"
  found="$(sandbox_proxies)"; [[ -z "$found" ]] || proxies=("$found")
  spawn "worker-$NAME" env ${proxies[@]+"${proxies[@]}"} "$CELERY" $(banner) -A worker worker --hostname "$node" \
    -Q "${QUEUES:-$(all_queues)}" --concurrency "$CONCURRENCY" --loglevel "$LOG_LEVEL"
  "$PY" -m cli workers --wait "$node" --pid "$(cat "$(pidfile "worker-$NAME")")" \
    --timeout "${WORKER_START_WAIT_S:-60}" >&2 || die "worker-$NAME: not consuming (above: why)"
}

check_beat_host() {  # one beat per cluster: CRAWLCHAIN_BEAT_HOST names its host
  local beat="${CRAWLCHAIN_BEAT_HOST:-}" here="${CRAWLCHAIN_HOST:-$(hostname)}"
  [[ -z "$beat" || "$beat" == "$here" ]] || die "start beat: refused on '$here': the" \
    "cluster's beat runs on '$beat' (CRAWLCHAIN_BEAT_HOST); two would launch every schedule twice"
}

start_beat() {
  check_beat_host
  spawn beat "$CELERY" $(banner) -A worker beat --loglevel "$LOG_LEVEL" --schedule "$RUN/celerybeat-schedule"
}

start_flower() {  # Flower 2 serves /api without auth only when told to; loopback only
  local level="${LOG_LEVEL,,}"; [[ "$level" != critical ]] || level=error  # tornado's names
  spawn flower env FLOWER_UNAUTHENTICATED_API="${FLOWER_UNAUTHENTICATED_API:-true}" \
    "$CELERY" -A worker flower --address=127.0.0.1 --port="${FLOWER_PORT:-5555}" \
    --logging="$level"
  # Task events are off by default; Flower turns them on every few seconds, this at once
  "$CELERY" -A worker control enable_events --timeout 2 >/dev/null 2>&1 || true
}

start_exporter() {  # live workers too: each scrape waits EXPORTER_WORKERS_S for their replies
  spawn exporter "$PY" -m monitor.exporter --host "${EXPORTER_HOST:-127.0.0.1}" \
    --port "${EXPORTER_PORT:-9808}" --workers "${EXPORTER_WORKERS_S:-1}"
}

start_api() {  # the job API and the console (API_HOST:API_PORT, 127.0.0.1:8780 by default)
  "$PY" -m api.token ensure || exit 2  # a token in the env file on first start (mode 600)
  load_env
  spawn api "$PY" -m api
  say "api: http://${API_HOST:-127.0.0.1}:${API_PORT:-8780}/console/ (token: API_TOKEN in" \
    "${CRAWLCHAIN_ENV_FILE:-$ROOT/crawlchain.env})"
}

workers() { for f in "$RUN"/worker-*.pid; do [[ -e "$f" ]] && basename "$f" .pid; done; }

worker_grace() {  # seconds a stopping worker gets: a running unit's time limit, and a margin
  echo $(( ${TASK_TIME_LIMIT_S:-150} + ${STOP_MARGIN_S:-30} ))
}

stop_worker() {  # stop_worker NAME: a warm shutdown lets running units finish; past the
  # grace, Celery's cold shutdown (SIGQUIT) cancels them and hands their messages back to
  # the broker at once, so they are delivered again (a SIGKILL would leave them to the
  # visibility timeout)
  is_running "$1" && say "$1: stopping; running units may finish (up to $(worker_grace) s:" \
    "TASK_TIME_LIMIT_S + STOP_MARGIN_S; a unit cut then is delivered again)"
  stop_pid "$1" "$(worker_grace)" QUIT
}

cmd_start() {
  local what="${1:-all}"
  case "$what" in
    redis) start_redis ;;
    sandbox) start_sandbox ;;
    worker) start_redis; start_worker ;;
    beat) start_redis; start_beat ;;
    flower) start_redis; start_flower ;;
    exporter) start_redis; start_exporter ;;
    api) start_redis; start_api ;;
    all) start_redis; start_sandbox; start_worker ;;
    *) die "start: unknown component '$what'" ;;
  esac
}

cmd_stop() {
  local what="${1:-all}" w
  case "$what" in
    worker)
      if [[ -n "$NAME_GIVEN" ]]; then stop_worker "worker-$NAME"
      else for w in $(workers); do stop_worker "$w"; done; fi ;;
    redis|sandbox|beat|flower|exporter|api) stop_pid "$what" ;;
    all)
      for w in $(workers); do stop_worker "$w"; done
      stop_pid api; stop_pid beat; stop_pid flower; stop_pid exporter; stop_pid sandbox
      stop_pid redis ;;
    *) die "stop: unknown component '$what'" ;;
  esac
}

processes() {  # processes in the session a component was started in (setsid): pool children too
  local count
  count="$(pgrep -c -s "$1" 2>/dev/null)" || true  # pgrep exits 1 when it counts 0
  echo "${count:-0}"
}

cmd_status() {
  local name pid any=1
  for name in redis sandbox $(workers) beat flower exporter api; do
    if is_running "$name"; then
      pid="$(cat "$(pidfile "$name")")"
      printf '%-16s running  pid %s  procs %s\n' "$name" "$pid" "$(processes "$pid")"; any=0
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
    "$PY" -m cli launch demo --json
  else
    "$PY" -m cli launch demo --watch
  fi
}

demo_cleanup() {  # the worker first, while its broker is still up to take its messages
  local c i
  for ((i = $#; i >= 1; i--)); do
    c="${!i}"
    case "$c" in worker-*) stop_worker "$c" ;; *) stop_pid "$c" ;; esac
  done
}

cmd_test() {
  setup_dev
  local marker="not slow"
  case "${1:-}" in
    --slow) marker="slow"; shift ;;
    --all) marker=""; shift ;;
  esac
  if [[ "$marker" != "slow" ]]; then
    "$VENV/bin/ruff" check .
    "$VENV/bin/mypy" .
    "$VENV/bin/lint-imports" --no-cache
    "$VENV/bin/deptry" .  # every import declared in pyproject.toml
  fi
  "$PY" -m pytest ${marker:+-m "$marker"} "$@"
}

cmd_bench() {
  local what="${1:-}"; [[ $# -gt 0 ]] && shift
  case "$what" in
    dedup|storage|crawl|chain|rate_limit|export|polite|generic|api_export|browser|frontier)
      "$PY" -m "bench.$what" "$@" ;;
    *) die "bench: expected one of: dedup, storage, crawl, chain, rate_limit, export, polite," \
         "generic, api_export, browser, frontier" ;;
  esac
}

cmd_hosts() {  # cmd_hosts FILE VERB [COMPONENT] [options]: the verb on every host of FILE
  local file="$1"; shift
  [[ -f "$file" ]] || die "--hosts: no host file '$file'"
  cmd_setup
  exec "$PY" -m ops.hosts "$file" "$@"
}

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

# -- main ---------------------------------------------------------------------
main() {
  if [[ "${1:-}" == "--hosts" ]]; then
    [[ $# -ge 3 ]] || die "usage: ./control.sh --hosts HOSTS_FILE start|stop|restart|status [...]"
    load_env
    cmd_hosts "${@:2}"
  fi
  local verb="${1:-}"; [[ $# -gt 0 ]] && shift
  local args=()
  while [[ $# -gt 0 ]]; do
    case "$verb:$1" in  # worker options belong to the verbs that start workers
      start:--queues|restart:--queues|demo:--queues) QUEUES="$2"; shift 2 ;;
      start:--concurrency|restart:--concurrency|demo:--concurrency) CONCURRENCY="$2"; shift 2 ;;
      start:--name|restart:--name|stop:--name|demo:--name) NAME="$2"; NAME_GIVEN=1; shift 2 ;;
      *) args+=("$1"); shift ;;
    esac
  done
  set -- "${args[@]+"${args[@]}"}"
  case "$verb" in setup|lock|test|bench|faults|chaos|docs|queues|"") ;; *) load_env ;; esac
  log_settings
  export DEMO_BASE_URL="${DEMO_BASE_URL:-http://127.0.0.1:${DEMO_PORT:-8765}}"
  case "$verb" in
    setup) cmd_setup ;;
    lock) cmd_lock "$@" ;;
    demo) cmd_demo "$@" ;;
    test) cmd_test "$@" ;;
    start) cmd_setup; cmd_start "$@" ;;
    stop) cmd_stop "$@" ;;
    restart) cmd_stop "$@"; cmd_start "$@" ;;
    status) cmd_status ;;
    queues) all_queues ;;
    logs) cmd_logs "$@" ;;
    launch|try|shell|new-site|export|monitor|jobs|wait|pause|resume|cancel|retry|workers)
      cmd_setup; "$PY" -m cli "$verb" "$@" ;;
    bench) cmd_setup; cmd_bench "$@" ;;
    faults) cmd_setup
      if [[ "${1:-}" == "--browser" ]]; then "$PY" -m bench.fault_browser "${@:2}"
      else "$PY" -m bench.faults "$@"; fi ;;
    chaos) cmd_setup; "$PY" -m bench.chaos "$@" ;;
    docs) cmd_setup; "$PY" -m ops.config_reference "$@" ;;
    *) usage; [[ -z "$verb" ]] || exit 2 ;;
  esac
}

main "$@"
